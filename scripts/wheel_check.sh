#!/usr/bin/env bash
# Issue 34, point 3: builds the wheel (`pip wheel .`), installs it into a fresh virtual
# environment with what it declares (the supported torch), and there runs
# scripts/wheel_smoke.py (torch.compile(backend="stax") on a small model, checked against
# eager, and an ahead-of-time package written and loaded). Run by scripts/test.sh after
# scripts/setup_python.sh, whose .venv provides the build tools (no build isolation: the
# wheel is the same, and its compile is the incremental one of build-python-*/).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache_env.sh

wheelhouse=build/wheelhouse
venv=build/wheel-venv
rm -rf "$wheelhouse" "$venv"
.venv/bin/python -m pip wheel . --no-deps --no-build-isolation -q -w "$wheelhouse"
wheel=$(ls "$wheelhouse"/stax_compiler-*.whl)
echo "wheel_check: built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
# The interpreter .venv was made from: the wheel's tag is its version.
base_python=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
"$base_python" -m venv "$venv"
"$venv/bin/python" -m pip install -q "$wheel"
# Outside the repository, so that `import stax` is the installed wheel, not python/stax.
(cd "$venv" && STAX_CACHE_DIR="$PWD/cache" bin/python "$OLDPWD/scripts/wheel_smoke.py")
