"""The scan nodes (issue 16, point 7) against eager and the default backend: float32 cumsum
and cummax over 16M elements in three shapes, one for each way Stax's runtime splits a scan
(src/external/scan.h): one long line (split by associativity), many lines (one per task), and
an outer-dim scan (the columns of a row carried together). Calls interleaved round by round;
the table gives the median ms and the p10-p90 spread.

Usage (shared machine: real-time priority, nothing else benchmarking):
    chrt -f 1 .venv/bin/python bench/scans.py [--threads 2] [--reps 15] [--out FILE]
"""

import argparse
import statistics
import time

import torch

import stax  # noqa: F401  (registers the backend)

CASES = [  # (sizes, dim, path)
    ((1, 16 << 20), 1, "one long line: blocks"),
    ((4096, 4096), 1, "4096 lines"),
    ((4096, 4096), 0, "outer dim: columns together"),
]


def quantiles(samples):
    s = sorted(samples)
    pick = lambda f: s[min(len(s) - 1, int(f * len(s)))]
    return statistics.median(s), pick(0.1), pick(0.9)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
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
            for r in runners.values():
                for _ in range(3):
                    r(x)
            times = {name: [] for name in runners}
            for _ in range(args.reps):
                for name, r in runners.items():
                    start = time.perf_counter()
                    out = r(x)
                    times[name].append((time.perf_counter() - start) * 1e3)
                    del out
            cells = []
            for name in runners:
                m, lo, hi = quantiles(times[name])
                cells.append(f"{m:.1f} ({lo:.1f}-{hi:.1f})")
            lines.append(f"| {op} | {list(sizes)}, {dim} ({path}) | " + " | ".join(cells) + " |")
            torch._dynamo.reset()
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
