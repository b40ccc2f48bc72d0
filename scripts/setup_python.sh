#!/usr/bin/env bash
# Creates or updates the virtual environment .venv for the Python package: torch==2.13.0,
# pytest and the build tools (nanobind, scikit-build-core) from PyPI, then the project itself
# (`pip install .`, built in the persistent build-python-* directory, so a rebuild compiles
# only what changed). Idempotent: when .venv has everything and no source changed since the
# last install, it does nothing. Usage: scripts/setup_python.sh (after scripts/setup.sh,
# which installs the C++ toolchain and libraries).
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
venv=.venv
stamp="$venv/.stax-installed"

# Debian's python3 needs python3-venv for `-m venv` and python3-dev for the headers the
# extension module compiles against.
if ! "$python" -c 'import ensurepip, sysconfig, os, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  2>/dev/null; then
  echo "setup_python: installing python3-venv python3-dev"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv python3-dev
fi

if ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  echo "setup_python: creating $venv"
  "$python" -m venv "$venv"
fi

# Exactly torch 2.13.0: that release installs the CPU build. numpy: torch warns on import
# without it. transformers: python/tests/test_transformers_bert.py builds a tiny BertModel
# from its config (random weights, nothing downloaded at run time). expecttest: torch's OpInfo
# database (python/tests/test_opinfo_half.py) imports it. pytest-xdist: scripts/test.sh runs
# the tests on every core. mkl: MKL's BLAS, which float32 products whose B has contiguous
# columns measure against oneDNN and take where it is faster (src/external/blas_library.h;
# loaded at run time on libgomp, never needed to build). nvidia-cuda-nvrtc: NVRTC (libnvrtc.so.13
# and its builtins, no driver needed), which the CUDA runtime's tests (tests/cuda) compile
# kernels with on machines without a GPU; 13.0.88 is the NVRTC of the GPU machine's PyTorch.
requirements=(torch==2.13.0 numpy pytest pytest-xdist expecttest nanobind scikit-build-core
  transformers mkl==2026.2.0 nvidia-cuda-nvrtc==13.0.88)
if ! "$venv/bin/python" - "${requirements[@]}" <<'EOF' 2>/dev/null; then
import sys
from importlib.metadata import version
for requirement in sys.argv[1:]:
    name, _, pinned = requirement.partition("==")
    installed = version(name)
    if pinned and installed.split("+")[0] != pinned:
        sys.exit(1)
EOF
  echo "setup_python: installing ${requirements[*]} into $venv"
  "$venv/bin/python" -m pip install -q "${requirements[@]}"
fi

# Reinstall the project when a file it is built from is newer than the last install.
sources=(pyproject.toml CMakeLists.txt cmake src python/stax)
if [ -f "$stamp" ] && "$venv/bin/python" -c 'import stax._C' 2>/dev/null &&
  [ -z "$(find "${sources[@]}" -newer "$stamp" -print -quit)" ]; then
  exit 0
fi
echo "setup_python: pip install . into $venv"
touch "$stamp.new"
# The venv's nanobind and scikit-build-core build it: nothing is downloaded again. Objects
# that scripts/setup.sh compiled already come from ccache.
source scripts/ccache_env.sh
"$venv/bin/python" -m pip install -q --no-build-isolation .
mv "$stamp.new" "$stamp"
