#!/usr/bin/env bash
# Installs what building and testing Stax needs on Debian (only what is missing, so running
# it again does nothing), then configures and builds. Usage: scripts/setup.sh [BUILD_DIR [CMAKE_ARGS...]]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ make cmake ninja-build ccache libsleef-dev libgtest-dev nlohmann-json3-dev libdnnl-dev
  libdlpack-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# A cmake from elsewhere (e.g. pip) is fine when it is new enough.
if command -v cmake >/dev/null 2>&1; then
  missing=("${missing[@]/cmake}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

build_dir="${1:-build}"
shift || true
# The same sources are compiled twice: here and by `pip install .` (scripts/setup_python.sh).
# ccache serves the second build from the first, and a fresh clone from an earlier one.
source scripts/ccache_env.sh
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
