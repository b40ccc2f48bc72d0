"""One program for every size against the static program of each size (issue 33's target:
within 10%), through `stax run --json`, which times the two interleaved in one process (five
rounds of each, the median of the rounds' medians).

    chrt -f 1 python3 bench/dynamic/symbolic_vs_static.py [path/to/stax]

Prints a markdown table: graph, size, the symbolic and the static program's median, their
ratio, eager's median. Name the CPU with the table (lscpu).
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAX = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "src" / "cli" / "stax"
CASES = [("symbolic_rows.stax", [37, 200, 1000, 4096]), ("symbolic_block.stax", [1, 37, 200, 1000])]

print("| graph | s0 | symbolic, us | static, us | symbolic/static | eager, us |")
print("|---|---|---|---|---|---|")
for name, sizes in CASES:
    for s0 in sizes:
        out = subprocess.run([str(STAX), "run", str(ROOT / "examples" / name), "--sizes",
                              f"s0={s0}", "--json"], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        assert r["match"], f"{name} at s0={s0} does not match eager"
        assert r.get("one_program_for_every_size"), f"{name}: not one program"
        sym = r["compiled_median_seconds"] * 1e6
        sta = r["static_program_median_seconds"] * 1e6
        print(f"| {name} | {s0} | {sym:.1f} | {sta:.1f} | {sym / sta:.3f} | "
              f"{r['eager_median_seconds'] * 1e6:.0f} |", flush=True)
