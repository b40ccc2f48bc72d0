"""The scan nodes (issue 16, point 7) against eager and the default backend: float32 cumsum
and cummax over 16M elements in three shapes, one for each way Stax's runtime splits a scan
(src/external/scan.h): one long line (split by associativity), many lines (one per task), and
an outer-dim scan (the columns of a row carried together). Calls interleaved round by round;
the table gives the median ms and the p10-p90 spread.

Usage (shared machine: real-time priority, nothing else benchmarking):
    chrt -f 1 .venv/bin/python bench/scans.py [--threads 2] [--reps 15] [--out FILE]
"""

import torch

import stax  # noqa: F401  (registers the backend)
from interleaved import bench_arguments, interleaved, report

CASES = [  # (sizes, dim, path)
    ((1, 16 << 20), 1, "one long line: blocks"),
    ((4096, 4096), 1, "4096 lines"),
    ((4096, 4096), 0, "outer dim: columns together"),
]


def main():
    args = bench_arguments()
    torch.set_num_threads(args.threads)
    lines = [f"{args.threads} threads; median ms (p10-p90)", "",
             "| op | shape, dim | eager | inductor | stax |", "|---|---|---|---|---|"]
    for op in ("cumsum", "cummax"):
        for sizes, dim, path in CASES:
            x = torch.randn(sizes)
            fn = (lambda x, d=dim: torch.cumsum(x, d)) if op == "cumsum" else \
                (lambda x, d=dim: torch.cummax(x, d))
            runners = {"eager": fn, "inductor": torch.compile(fn),
                       "stax": torch.compile(fn, backend="stax",
                                             options={"threads": args.threads})}
            results = interleaved({name: (lambda r=r: r(x)) for name, r in runners.items()},
                                  args.reps)
            cells = [f"{m:.1f} ({lo:.1f}-{hi:.1f})" for m, lo, hi in results.values()]
            lines.append(f"| {op} | {list(sizes)}, {dim} ({path}) | " + " | ".join(cells) + " |")
            torch._dynamo.reset()
    report(lines, args.out)


if __name__ == "__main__":
    main()
