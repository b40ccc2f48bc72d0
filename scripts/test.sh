#!/usr/bin/env bash
# Sets everything up, builds, and runs all tests: the full suite, then the unit tests again
# under AddressSanitizer and UndefinedBehaviorSanitizer, then the Python package's tests
# (pytest in .venv, set up by scripts/setup_python.sh). Works before or after
# scripts/demo.sh: the build directory is configured with the tests on whatever its cache
# says, and the run fails when any expected suite is missing or runs no test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every suite the project has; the run fails when CTest does not list each of them.
suites=(test_index test_ir test_runtime test_cuda_runtime test_external test_external.convolution test_eager
  test_lowering test_scheduler test_kernel test_codegen test_driver test_package test_cli test_random_graphs
  test_fuzz test_fuzz_ci test_sweep test_sweep.shard1 test_runtime.block_pool)
# The suites that do not JIT-compile kernels run again under the sanitizers (generated
# kernels run in their own shared objects, which the sanitizers would not instrument). The CUDA
# runtime's suite is among them: it loads NVRTC (uninstrumented, but it runs clean under them)
# and runs no generated code on the CPU.
sanitized_suites=(test_index test_ir test_cuda_runtime test_external test_external.convolution test_eager
  test_lowering test_scheduler test_kernel test_runtime.block_pool)
# The executables they run: a suite's name up to its first dot (test_external.convolution runs
# test_external).
sanitized_targets=($(printf '%s\n' "${sanitized_suites[@]%%.*}" | sort -u))

# Runs CTest in $1 on the suites named after it (and on PATTERN, a regular expression of
# further test names), failing when one of the suites is not registered.
run_suites() {
  local dir="$1" pattern="$2"
  shift 2
  local listed
  listed="$(cd "$dir" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p')"
  for s in "$@"; do
    if ! grep -qx "$s" <<<"$listed"; then
      echo "test.sh: suite $s is not registered in $dir" >&2
      exit 1
    fi
  done
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j 2 -R "^($(IFS='|'; echo "$*")${pattern:+|$pattern})\$")
}

# Prints how long the step that just ended took, so that a CI log shows where its time goes.
step_start=$SECONDS
step_done() {
  echo "test.sh: $1 took $((SECONDS - step_start)) s"
  step_start=$SECONDS
}

scripts/setup.sh build -DSTAX_BUILD_TESTS=ON
step_done "set-up and build"
scripts/setup_python.sh
step_done "Python package set-up"
# NVRTC for test_cuda_runtime: the nvidia-cuda-nvrtc wheel scripts/setup_python.sh installed
# (the suite would also find it in .venv itself); the suite fails without it.
nvrtc="$(ls .venv/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 2>/dev/null | head -n 1 || true)"
if [ -z "$nvrtc" ]; then
  echo "test.sh: no libnvrtc.so.13 in .venv (scripts/setup_python.sh installs nvidia-cuda-nvrtc)" >&2
  exit 1
fi
export STAX_NVRTC_LIBRARY="$PWD/$nvrtc"
# A BLAS must be found (src/external/blas_library.h), rather than its paths left untested: the
# C++ suites load the libmkl_rt that scripts/setup_python.sh installed (PyPI's mkl, what a C++
# program uses); pytest the MKL inside PyTorch, which `import stax` points at.
export STAX_EXPECT_BLAS=1
mkl_rt="$PWD/.venv/lib/libmkl_rt.so.3"
# Every saved fuzzer finding is a test of its own (tests/fuzz/regressions).
STAX_BLAS_LIBRARY="$mkl_rt" run_suites build 'fuzz_regression\..*' "${suites[@]}"
step_done "test suites"

# The sanitized suites share build/'s JIT cache: the kernels they compile are the ones the
# first run compiled (generated kernels are not instrumented either way). Line tables only
# (-g1): reports still name file and line, and the build takes a fifth less time.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DSTAX_SANITIZE=ON -DSTAX_BUILD_TESTS=ON -DSTAX_TEST_CACHE_DIR="$PWD/build/test-cache" \
  >/dev/null
cmake --build build-asan -j "$(nproc)" --target "${sanitized_targets[@]}"
step_done "sanitizer build"
# Without the BLAS there: GCC 12's LeakSanitizer crashes at exit scanning the dynamic thread-
# local storage MKL's libraries allocate (a SIGSEGV in its tracer; with its TLS scan off it
# reports glibc's own TLS vectors as leaks). The sanitized suites check every BLAS refusal and
# that plans keep oneDNN; the BLAS's products run in the suites above and in pytest.
STAX_BLAS_LIBRARY=none STAX_EXPECT_BLAS=0 run_suites build-asan '' "${sanitized_suites[@]}"
step_done "suites under the sanitizers"

# The Python package, as installed in .venv, one pytest-xdist worker per core (most of a test's
# time is the system compiler, one process per kernel; the workers share the JIT cache, whose
# entries are locked); a run in which no test passed is a failure.
pytest_log=build/pytest.log
STAX_CACHE_DIR="$PWD/build/pytest-cache" .venv/bin/python -m pytest python/tests -q -rs \
  -n "$(nproc)" 2>&1 | tee "$pytest_log"
step_done "pytest"
if ! tail -n 1 "$pytest_log" | grep -Eq '[0-9]+ passed'; then
  echo "test.sh: pytest passed no test" >&2
  exit 1
fi

# The wheel, installed into a fresh virtual environment with only what it declares.
scripts/wheel_check.sh
step_done "wheel in a fresh environment"
echo "test.sh: all ${#suites[@]} suites passed, ${#sanitized_suites[@]} again under ASan+UBSan," \
  "pytest, and the wheel in a fresh environment"
