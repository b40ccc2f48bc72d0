#!/usr/bin/env bash
# Builds Stax and runs the benchmark programs in bench/ side by side (ratios in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DSTAX_BUILD_TESTS=OFF
build/bench/stax_bench --threads "${THREADS:-$(nproc)}" bench/*.stax
