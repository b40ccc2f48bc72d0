#!/usr/bin/env bash
# Rewrites the golden replay snapshots (tests/golden/kernels/*.cpp) from the current code
# generator. Commit them together with the change that altered the generated code.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target test_kernel
STAX_UPDATE_GOLDEN=1 build/tests/kernel/test_kernel --gtest_filter='Programs/GoldenReplay.*:CudaPrograms/CudaGoldenReplay.*'
git status --short tests/golden/kernels
