#!/usr/bin/env bash
# Sets everything up, builds, and runs all tests: the full suite, then the unit tests again
# under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
(cd build && ctest --output-on-failure -j 2)

# Sanitizer build of the suites that do not JIT-compile kernels (generated kernels run in
# their own shared objects, which the sanitizers would not instrument anyway).
suites=(test_index test_ir test_eager test_lowering test_scheduler)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTAX_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$(nproc)" --target "${suites[@]}"
(cd build-asan && ctest --output-on-failure -j 2 -R "^($(IFS='|'; echo "${suites[*]}"))\$")
