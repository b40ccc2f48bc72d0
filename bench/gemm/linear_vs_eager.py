"""Stax's linear layers (MatmulPlan, oneDNN, as nn.Linear lowers: addmm of the bias, x and the
weight transposed) against eager's F.linear, interleaved round by round on the same tensors:
the shapes issue 32 measured (BERT's and ViT's layers) in bfloat16 and float32. Prints per shape
the median ms and p10-p90 of single runs, GFLOP/s, and the plan's ratio to eager's time. The
plan is built once per round outside the timing (bench/gemm/plan_shim.cpp), as when a graph is
loaded.

Usage (after build/ is built; real-time priority keeps other work off the cores):
    chrt -f 1 .venv/bin/python bench/gemm/linear_vs_eager.py [--rounds 5] [--build build]
"""

import argparse
import os
import statistics
import sys
import time

import torch  # first: its libgomp is the one OpenMP runtime the shim then binds to
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
from gemm_efficiency import ROOT, build_shim, plan_run  # noqa: E402

# (M tokens, K in, N out): BERT-base at 4x128 tokens, ViT-B/16's qkv at 2x197 tokens.
SHAPES = [(512, 768, 768), (512, 3072, 768), (394, 768, 2304), (512, 768, 3072)]


def plan_times(shim, x, w, bias, reps):
    c, ns = plan_run(shim, x, w, bias, 3, reps)
    torch.testing.assert_close(c.float(), F.linear(x, w, bias).float(), rtol=2e-2, atol=2e-2)
    return [v / 1e6 for v in ns]


def eager_times(x, w, bias, reps):
    for _ in range(3):
        F.linear(x, w, bias)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        F.linear(x, w, bias)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    shim = build_shim(args.build)
    print(f"torch {torch.__version__}, {args.threads} threads, {args.rounds} rounds of "
          f"{args.reps} runs each")
    print("| dtype | M x K x N | eager ms (p10-p90) | GFLOP/s | Stax ms (p10-p90) | GFLOP/s "
          "| Stax/eager time |")
    print("|---|---|---|---|---|---|---|")
    with torch.no_grad():
        for dtype in (torch.bfloat16, torch.float32):
            for m, k, n in SHAPES:
                torch.manual_seed(0)
                x = torch.randn(m, k).to(dtype)
                w = (torch.randn(n, k) / k**0.5).to(dtype)
                bias = torch.randn(n).to(dtype)
                eager, plan = [], []
                for _ in range(args.rounds):
                    eager += eager_times(x, w, bias, args.reps)
                    plan += plan_times(shim, x, w, bias, args.reps)
                e, s = statistics.median(eager), statistics.median(plan)
                flop = 2 * m * k * n
                print(f"| {str(dtype)[6:]} | {m}x{k}x{n} | {e:.3f} ({quantile(eager, 0.1):.3f}-"
                      f"{quantile(eager, 0.9):.3f}) | {flop / e / 1e6:.0f} | {s:.3f} "
                      f"({quantile(plan, 0.1):.3f}-{quantile(plan, 0.9):.3f}) | "
                      f"{flop / s / 1e6:.0f} | {s / e:.2f} |", flush=True)


if __name__ == "__main__":
    main()
