#!/usr/bin/env bash
# The device check of the CUDA target (issue 35), in one call on a machine with an NVIDIA GPU:
# builds what it needs there (STAX_GPU_CHECK_ONLY: no SLEEF, no oneDNN), runs the CUDA runtime
# suite's GPU half, the generated programs against the eager interpreter (tests/gpu), a
# compute-sanitizer memcheck and racecheck of the small ones, and the same programs in PyTorch
# eager and Inductor for the timings beside Stax's. Logs go to $OUT (default gpu-check-out/).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
status=0
step() { echo "== $*" | tee -a "$out/summary.txt"; }

step "device"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvidia-smi) > "$out/device.txt" 2>&1
head -2 "$out/device.txt" | tee -a "$out/summary.txt"

# NVRTC: the running PyTorch's (its wheel's nvidia-cuda-nvrtc), else the loader's.
nvrtc="$(python3 -c '
import glob, os, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
for d in dirs:
    for pattern in ("nvidia/cu1*/lib/libnvrtc.so.1*", "nvidia/cuda_nvrtc/lib/libnvrtc.so.1*"):
        found = sorted(glob.glob(os.path.join(d, pattern)))
        if found:
            print(found[0])
            raise SystemExit
' 2>/dev/null)"
[ -n "$nvrtc" ] && export STAX_NVRTC_LIBRARY="$nvrtc"
echo "NVRTC: ${STAX_NVRTC_LIBRARY:-found by the loader}" | tee -a "$out/summary.txt"
export STAX_CACHE_DIR="$out/cache"

step "build (STAX_GPU_CHECK_ONLY)"
gtest=OFF
if [ -f /usr/lib/x86_64-linux-gnu/libgtest.a ] || [ -d /usr/src/googletest ]; then gtest=ON; fi
if ! { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTAX_GPU_CHECK_ONLY=ON \
         -DSTAX_GPU_CHECK_RUNTIME_TESTS=$gtest -DSTAX_WARNINGS_AS_ERRORS=OFF &&
       cmake --build build-gpu -j "$(nproc)"; } > "$out/build.log" 2>&1; then
  tail -30 "$out/build.log" | tee -a "$out/summary.txt"
  exit 1
fi

if [ -x build-gpu/tests/cuda/test_cuda_runtime ]; then
  step "CUDA runtime suite (test_cuda_runtime)"
  build-gpu/tests/cuda/test_cuda_runtime > "$out/test_cuda_runtime.log" 2>&1 || status=1
  tail -3 "$out/test_cuda_runtime.log" | tee -a "$out/summary.txt"
fi

step "programs vs the eager interpreter (tests/gpu/gpu_check.cpp)"
build-gpu/tests/gpu/stax_gpu_check > "$out/gpu_check.log" 2>&1 || status=1
cat "$out/gpu_check.log" | tee -a "$out/summary.txt"

sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
if [ -n "$sanitizer" ]; then
  for tool in memcheck racecheck; do
    step "compute-sanitizer $tool"
    for p in example_7_2 short_rows rows_of_3_tail softmax_bf16_tail column_sum once_per_row; do
      "$sanitizer" --tool "$tool" --error-exitcode 9 build-gpu/tests/gpu/stax_gpu_check "$p" \
        > "$out/sanitizer_${tool}_$p.log" 2>&1 || status=1
      echo "$p: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_${tool}_$p.log" | tail -1)" |
        tee -a "$out/summary.txt"
    done
  done
else
  echo "no compute-sanitizer on this machine" | tee -a "$out/summary.txt"
fi

step "PyTorch eager and Inductor, same programs (bench/gpu/torch_reference.py)"
timeout 300 python3 bench/gpu/torch_reference.py > "$out/torch_reference.log" 2>&1 || status=1
cat "$out/torch_reference.log" | tee -a "$out/summary.txt"
exit $status
