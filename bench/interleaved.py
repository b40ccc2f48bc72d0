"""Timing shared by the benchmark scripts of bench/: runners called round by round (each
round calls every runner once, so drift on a shared machine hits them alike), the median and
p10-p90 spread of each, and the report printed and optionally written."""

import argparse
import statistics
import time


def bench_arguments():
    """The options every benchmark script takes: --threads (default 2), --reps (timed rounds,
    default 15) and --out (a file for the report)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", default="")
    return parser.parse_args()


def quantiles(samples):
    """Median, 10th and 90th percentile of `samples`."""
    s = sorted(samples)
    pick = lambda f: s[min(len(s) - 1, int(f * len(s)))]
    return statistics.median(s), pick(0.1), pick(0.9)


def interleaved(runners, reps):
    """(median, p10, p90) in ms of each runner (a zero-argument callable): 3 warm-up rounds,
    then `reps` timed rounds. Each result is dropped before the next call, so a pooled output
    goes back to its pool first."""
    for _ in range(3):
        for r in runners.values():
            r()
    times = {name: [] for name in runners}
    for _ in range(reps):
        for name, r in runners.items():
            start = time.perf_counter()
            out = r()
            times[name].append((time.perf_counter() - start) * 1e3)
            del out
    return {name: quantiles(t) for name, t in times.items()}


def report(lines, out=""):
    """Prints the report's lines and writes them to `out` when given."""
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
