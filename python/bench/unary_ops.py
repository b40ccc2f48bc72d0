"""Floating unary ops and the activations built on them: eager vs the default backend
(inductor) vs Stax on one large tensor, float32 and bfloat16, in one run.

For each op and dtype the three callables are built first (one compiled graph each), then
timed in interleaved rounds (eager, inductor, Stax, eager, ...), so that a change of machine
load hits all three alike; the table gives each one's median per-call time over the rounds
and the spread (the half-width of the interquartile range, as a percentage of the median). Each timed batch
follows one untimed call of the same callable.
"Stax/eager" is the ratio of the medians. "worst err" is Stax's worst deviation from eager's
result over the benchmark tensor, in units of torch.testing.assert_close's default tolerance
for the dtype (atol + rtol * |eager|; <= 1 passes), followed by the worst absolute difference.

"Dynamo+eager" is the op through torch.compile with a backend that runs the captured graph's
own eager kernels: the cost of Dynamo's per-call path (guards, frame handling) on top of
eager, which every backend pays. On a large tensor that cost is not constant (measured on the
AVX-512 machine of UNARY_RESULTS.md, one thread: +10 µs at 4 KiB, +21 µs at 1 MiB, +50-60 µs
at 8 MiB and above, with eager's own neg kernel inside), so "Stax/Dynamo+eager" compares Stax's
kernel with eager's under the same per-call path; "Stax/eager" includes Dynamo's cost.

Usage (on a shared machine run it at real-time priority):
    chrt -f 1 .venv/bin/python python/bench/unary_ops.py [--rounds N] [--size R C]
        [--threads T] [--ops a,b,...] [--dtypes float32,bfloat16] [--markdown]
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import stax  # noqa: F401  (registers the backend)

# (name, function, input domain): the domains keep every input inside the op's real domain.
OPS = [
    ("neg", torch.neg, "real"),
    ("exp", torch.exp, "real"),
    ("exp2", torch.exp2, "real"),
    ("expm1", torch.expm1, "real"),
    ("log", torch.log, "pos"),
    ("log2", torch.log2, "pos"),
    ("log10", torch.log10, "pos"),
    ("log1p", torch.log1p, "pos"),
    ("sqrt", torch.sqrt, "pos"),
    ("rsqrt", torch.rsqrt, "pos"),
    ("reciprocal", torch.reciprocal, "real"),
    ("sin", torch.sin, "real"),
    ("cos", torch.cos, "real"),
    ("tan", torch.tan, "real"),
    ("asin", torch.asin, "unit"),
    ("acos", torch.acos, "unit"),
    ("atan", torch.atan, "real"),
    ("sinh", torch.sinh, "real"),
    ("cosh", torch.cosh, "real"),
    ("tanh", torch.tanh, "real"),
    ("asinh", torch.asinh, "real"),
    ("acosh", torch.acosh, "ge1"),
    ("atanh", torch.atanh, "unit"),
    ("erf", torch.erf, "real"),
    ("erfc", torch.erfc, "real"),
    ("erfinv", torch.erfinv, "unit"),
    ("sigmoid", torch.sigmoid, "real"),
    ("gelu", F.gelu, "real"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "real"),
    ("silu", F.silu, "real"),
    ("mish", F.mish, "real"),
    ("softplus", F.softplus, "real"),
    ("elu", F.elu, "real"),
    ("logsigmoid", F.logsigmoid, "real"),
    ("log_softmax", lambda x: torch.log_softmax(x, dim=-1), "real"),
]

DOMAINS = {"real": (-4.0, 4.0), "pos": (0.01, 8.0), "unit": (-0.999, 0.999), "ge1": (1.0, 8.0)}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def make_input(domain, dtype, shape, seed):
    lo, hi = DOMAINS[domain]
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def _run_graph_eagerly(gm, example_inputs):
    return gm.forward


def per_call_us(fn, x, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - start) / calls * 1e6


def worst_error(actual, expected):
    """Worst |actual - expected| over assert_close's default tolerance, and the worst
    absolute difference (NaN where exactly one of the two is NaN counts as infinite)."""
    rtol, atol = {torch.float32: (1.3e-6, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}[expected.dtype]
    a, e = actual.double(), expected.double()
    both_nan = a.isnan() & e.isnan()
    same = (a == e) | both_nan
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs())
    diff = torch.where(diff.isnan(), torch.full_like(diff, float("inf")), diff)
    ratio = diff / (atol + rtol * e.abs().nan_to_num(0.0))
    return ratio.max().item(), diff.max().item()


def spread(values):
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / 2 / statistics.median(values) * 100


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=int, nargs=2, default=(1024, 2048))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    wanted = set(args.ops.split(",")) if args.ops else None
    ops = [op for op in OPS if wanted is None or op[0] in wanted]
    shape = tuple(args.size)
    elements = shape[0] * shape[1]
    calls = max(3, int(4e6 // elements))

    sep = " | " if args.markdown else "  "
    header = ["op", "dtype", "eager µs", "Dynamo+eager µs", "inductor µs", "Stax µs",
              "Stax/eager", "Stax/Dynamo+eager", "Stax/inductor", "worst err (tol units, abs)"]
    widths = [12, 9, 16, 16, 16, 16, 10, 17, 13, 26]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
    else:
        print(sep.join(h.ljust(w) for h, w in zip(header, widths)))
    with torch.no_grad():
        for dtype_name in args.dtypes.split(","):
            dtype = DTYPES[dtype_name]
            for seed, (name, fn, domain) in enumerate(ops):
                x = make_input(domain, dtype, shape, seed)
                torch._dynamo.reset()
                runners = {
                    "eager": fn,
                    "dynamo": torch.compile(fn, backend=_run_graph_eagerly, dynamic=False),
                    "inductor": torch.compile(fn, backend="inductor", dynamic=False),
                    "stax": torch.compile(fn, backend="stax", dynamic=False),
                }
                results = {k: f(x) for k, f in runners.items()}  # compile and warm up
                for f in runners.values():
                    f(x)
                times = {k: [] for k in runners}
                for _ in range(args.rounds):
                    for k, f in runners.items():
                        # One untimed call first: the previous runner's last call (inductor's
                        # erfinv takes 40 ms on one thread) leaves the caches and the idle
                        # OpenMP thread in a state the next runner should not be charged for.
                        f(x)
                        times[k].append(per_call_us(f, x, calls))
                med = {k: statistics.median(v) for k, v in times.items()}
                ratio, abs_err = worst_error(results["stax"], results["eager"])
                row = [name, dtype_name] + [
                    f"{med[k]:.0f} ±{spread(times[k]):.0f}%" for k in ("eager", "dynamo", "inductor", "stax")
                ] + [f"{med['stax'] / med['eager']:.2f}", f"{med['stax'] / med['dynamo']:.2f}",
                     f"{med['stax'] / med['inductor']:.2f}",
                     f"{ratio:.3g} ({abs_err:.2g})"]
                if args.markdown:
                    print("| " + " | ".join(row) + " |", flush=True)
                else:
                    print(sep.join(c.ljust(w) for c, w in zip(row, widths)), flush=True)


if __name__ == "__main__":
    main()
