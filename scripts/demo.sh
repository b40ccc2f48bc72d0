#!/usr/bin/env bash
# Sets everything up (the C++ build and the Python package in .venv), then runs the seed's
# three example programs through `stax explain` and `stax run`, an ahead-of-time package, and
# the torch.compile demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DSTAX_BUILD_TESTS=OFF
scripts/setup_python.sh
examples="${STAX_EXAMPLES:-examples}"
for f in "$examples"/example_1_1.stax "$examples"/example_7_1.stax "$examples"/example_7_2.stax; do
  echo "================ stax explain $f"
  build/src/cli/stax explain "$f"
  echo "================ stax run $f"
  build/src/cli/stax run "$f"
done
# An ahead-of-time package: the symbolic program compiled once, then loaded without compiling
# and checked against the eager interpreter at a size of its own.
package="${TMPDIR:-/tmp}/stax-demo-rows.staxpkg"
echo "================ stax compile $examples/symbolic_rows.stax -o $package; stax run $package"
build/src/cli/stax compile "$examples"/symbolic_rows.stax -o "$package"
build/src/cli/stax run "$package" --sizes s0=37
demo=python/examples/demo_transformer.py
if [ -f "$demo" ]; then
  echo "================ $demo"
  .venv/bin/python "$demo"
fi
