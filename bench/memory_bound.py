"""Large memory-bound cases as a fraction of the DRAM copy bandwidth measured in the same run
(issue 16, point 4): where outputs come from (PyTorch's allocator, whose large blocks are fresh
pages on every call, or Stax's output pool, mapped after the first call) and whether kernels
moving more than the last-level cache use streaming stores.

Cases (float32): z = x + y over 64M elements; RMSNorm of 4096 x 4096 rows (x * rsqrt(mean(x^2)
+ eps) * w); a 3-op pointwise chain (gelu(x * w + b)) over 64M elements. Each is timed as:
  eager            PyTorch eager
  inductor         torch.compile's default backend
  stax fresh       Stax with outputs from PyTorch's allocator (output_pool=False): the before
  stax pool        outputs from the pool, ordinary stores (streaming_stores=False)
  stax pool+stream outputs from the pool, streaming stores: the after (Stax's default)
The DRAM copy bandwidth is dst.copy_(src) over 64M floats into a mapped dst, as (bytes read +
bytes written) / time; a case's bandwidth is its minimal traffic (every input read once, every
output written once) / time. Calls are interleaved round by round; the table gives the median
ms, the p10-p90 spread and the fraction of the copy bandwidth.

Usage (shared machine: real-time priority, nothing else benchmarking):
    chrt -f 1 .venv/bin/python bench/memory_bound.py [--threads 2] [--reps 15] [--out FILE]
"""

import time

import torch
import torch.nn.functional as F

import stax  # noqa: F401  (registers the backend)
from interleaved import bench_arguments, interleaved, quantiles, report


def add(x, y):
    return x + y


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def gelu_chain(x, w, b):
    return F.gelu(x * w + b)


def cases():
    n = 64 << 20
    x, y = torch.randn(n), torch.randn(n)
    rows = torch.randn(4096, 4096)
    w_row = torch.randn(4096)
    chain_x = torch.randn(n // 4096, 4096)
    return [
        ("add 64M f32", add, (x, y), 3 * n * 4),
        ("rmsnorm 4096x4096 f32", rms_norm, (rows, w_row), 2 * rows.numel() * 4 + 4096 * 4),
        ("gelu(x*w+b) 64M f32", gelu_chain, (chain_x, w_row, w_row), 2 * n * 4 + 2 * 4096 * 4),
    ]


def variants(fn, threads):
    base = {"threads": threads}
    return {
        "eager": fn,
        "inductor": torch.compile(fn),
        "stax fresh": torch.compile(fn, backend="stax", options={**base, "output_pool": False}),
        "stax pool": torch.compile(fn, backend="stax",
                                   options={**base, "streaming_stores": False}),
        "stax pool+stream": torch.compile(fn, backend="stax", options=base),
    }


def copy_bandwidth(reps):
    src = torch.randn(64 << 20)
    dst = torch.empty_like(src)
    dst.copy_(src)
    median, lo, hi = quantiles([timed(lambda: dst.copy_(src)) for _ in range(reps)])
    return 2 * src.numel() * 4 / (median * 1e-3) / 1e9, (median, lo, hi)


def timed(f):
    start = time.perf_counter()
    f()
    return (time.perf_counter() - start) * 1e3


def main():
    args = bench_arguments()
    torch.set_num_threads(args.threads)
    copy_gbs, copy_t = copy_bandwidth(args.reps)
    lines = [
        f"DRAM copy (dst.copy_(src), 64M f32, mapped dst): {copy_gbs:.1f} GB/s "
        f"(median {copy_t[0]:.1f} ms, p10-p90 {copy_t[1]:.1f}-{copy_t[2]:.1f}); "
        f"{args.threads} threads",
        "",
        "| case | variant | median ms | p10-p90 ms | GB/s | of copy bandwidth |",
        "|---|---|---|---|---|---|",
    ]
    for name, fn, inputs, traffic in cases():
        runners = {v: (lambda f=f: f(*inputs)) for v, f in variants(fn, args.threads).items()}
        for variant, (median, lo, hi) in interleaved(runners, args.reps).items():
            gbs = traffic / (median * 1e-3) / 1e9
            lines.append(f"| {name} | {variant} | {median:.1f} | {lo:.1f}-{hi:.1f} | "
                         f"{gbs:.1f} | {gbs / copy_gbs:.0%} |")
        torch._dynamo.reset()
    # The copy again: the machine is shared, its bandwidth drifts.
    copy_after, copy_t = copy_bandwidth(args.reps)
    lines.append("")
    lines.append(f"DRAM copy again at the end: {copy_after:.1f} GB/s (median {copy_t[0]:.1f} ms)")
    report(lines, args.out)


if __name__ == "__main__":
    main()
