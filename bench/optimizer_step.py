"""An AdamW step (foreach) compiled, against eager and the default backend (issue 16, point
6: the parameters and both moments are written in place by Stax's program). Parameters: 24
matrices of 1024x1024 float32 (25M parameters; the step reads and writes 300 MB). Variants:
eager's foreach step and its fused CPU kernel (fused=True), the default backend, Stax with
the mutations written in place, and Stax with AOTAutograd copying the new values back
(options={"mutations_in_place": False}, the behaviour before). Each variant has its own
parameters and optimizer; calls interleaved round by round; median ms and p10-p90.

Usage (shared machine: real-time priority, nothing else benchmarking):
    chrt -f 1 .venv/bin/python bench/optimizer_step.py [--threads 2] [--reps 15] [--out FILE]
"""

import torch

import stax  # noqa: F401  (registers the backend)
from interleaved import bench_arguments, interleaved, report


def make(fused=False):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(1024, 1024)) for _ in range(24)]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-2
    if fused:
        return torch.optim.AdamW(params, lr=1e-3, fused=True)
    return torch.optim.AdamW(params, lr=1e-3, foreach=True)


def main():
    args = bench_arguments()
    torch.set_num_threads(args.threads)
    optimizers = {"eager foreach": make(), "eager fused": make(fused=True), "inductor": make(),
                  "stax": make(), "stax, copied back": make()}
    steps = {
        "eager foreach": optimizers["eager foreach"].step,
        "eager fused": optimizers["eager fused"].step,
        "inductor": torch.compile(optimizers["inductor"].step),
        "stax": torch.compile(optimizers["stax"].step, backend="stax",
                              options={"threads": args.threads}),
        "stax, copied back": torch.compile(
            optimizers["stax, copied back"].step, backend="stax",
            options={"threads": args.threads, "mutations_in_place": False}),
    }
    results = interleaved(steps, args.reps)
    # Every variant took the same steps from the same start: their parameters agree.
    reference = optimizers["eager foreach"].param_groups[0]["params"]
    for name, opt in optimizers.items():
        for p, q in zip(opt.param_groups[0]["params"], reference):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=lambda m: f"{name}: {m}")
    lines = [f"AdamW step over 24 x [1024, 1024] float32, {args.threads} threads; "
             "median ms (p10-p90)", "", "| " + " | ".join(results) + " |",
             "|" + "---|" * len(results),
             "| " + " | ".join(f"{m:.1f} ({lo:.1f}-{hi:.1f})" for m, lo, hi in results.values())
             + " |"]
    report(lines, args.out)


if __name__ == "__main__":
    main()
