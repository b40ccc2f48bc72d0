"""GEMM efficiency for bench/models: for BERT-base's linear layers (addmm with the weight
passed transposed, as nn.Linear gives it), Stax's library call inside a compiled graph
(torch.compile(F.linear, backend="stax"), its time taken from the profiling counters) against
the same oneDNN plan run standalone from C++ (bench/gemm/plan_shim.cpp: the plan built once,
then timed runs). Efficiency = standalone time / Stax's library time (the issue's target:
>= 90%). Also Stax's whole call (Python, dynamo's guard, the entry) for the overhead.

Usage (after scripts/setup.sh has built build/, for libstax_external.a and libstax_ir.a):
    .venv/bin/python bench/models/gemm_efficiency.py --out bench/models_gemm.json [--build build]
run.py --gemm-json bench/models_gemm.json puts the table into RESULTS.md.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("STAX_PROFILE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LAYOUT = ctypes.c_int64 * 6
# BERT-base's linear layers: (K, N) of q/k/v/attention output, intermediate, output.
SHAPES = ((768, 768), (768, 3072), (3072, 768))
TOKENS = (128, 512)  # batch 1 and 4 of 128 tokens


def build_shim(build_dir):
    out = os.path.join(tempfile.gettempdir(), f"stax_gemm_shim_{os.getpid()}.so")
    lib = lambda module: os.path.join(build_dir, "src", module, f"libstax_{module}.a")
    subprocess.run(["g++", "-std=c++20", "-O2", "-fPIC", "-shared", "-fopenmp",
                    "-I", os.path.join(ROOT, "src"), os.path.join(ROOT, "bench", "gemm", "plan_shim.cpp"),
                    lib("external"), lib("ir"), lib("runtime"), "-ldnnl", "-o", out], check=True)
    shim = ctypes.CDLL(out)
    shim.stax_plan_time.restype = ctypes.c_int
    return shim


def layout(t):
    sizes, strides = list(t.shape), list(t.stride())
    if t.dim() == 2:
        sizes, strides = [1] + sizes, [0] + strides
    return LAYOUT(*(sizes + strides))


def plan_run(shim, x, w, bias, warmup, reps):
    """Runs the MatmulPlan of nn.Linear's addmm (bias, x, weight transposed), built once, from
    C++: `warmup` untimed runs, then `reps` timed ones. Returns (result, ns per timed run)."""
    m, n = x.shape[0], w.shape[0]
    c = torch.empty(m, n, dtype=x.dtype)
    wt, b = w.t(), bias.expand(m, n)
    ns = (ctypes.c_double * reps)()
    status = shim.stax_plan_time(int(x.dtype == torch.bfloat16), layout(x), layout(wt),
                                 layout(c), layout(b), ctypes.c_double(1.0), ctypes.c_double(1.0),
                                 ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(wt.data_ptr()),
                                 ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()),
                                 torch.get_num_threads(), warmup, reps, ns)
    assert status == 0
    return c, list(ns)


def standalone_ns(shim, x, w, bias, reps):
    return statistics.median(plan_run(shim, x, w, bias, 5, reps)[1])


def stax_ns(x, w, bias, reps):
    """(median ns inside the library call, median ns of the whole compiled call, library
    calls per call)."""
    from stax import _C

    torch._dynamo.reset()
    fn = torch.compile(lambda x: F.linear(x, w, bias), backend="stax", dynamic=False)
    with torch.no_grad():
        for _ in range(5):
            fn(x)
        library, whole, calls = [], [], []
        for _ in range(reps):
            _C.reset_profile_counters()
            start = time.perf_counter_ns()
            fn(x)
            whole.append(time.perf_counter_ns() - start)
            c = _C.profile_counters()
            library.append(c["external_ns"])
            calls.append(c["external_calls"])
    return statistics.median(library), statistics.median(whole), statistics.median(calls)


def eager_ns(x, w, bias, reps):
    with torch.no_grad():
        for _ in range(5):
            F.linear(x, w, bias)
        times = []
        for _ in range(reps):
            start = time.perf_counter_ns()
            F.linear(x, w, bias)
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "models_gemm.json"))
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3,
                        help="standalone, eager and Stax alternate this many times; "
                             "medians of all")
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch._dynamo.config.cache_size_limit = 64
    shim = build_shim(args.build)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for m in TOKENS:
            for k, n in SHAPES:
                torch.manual_seed(0)
                x = torch.randn(m, k).to(dtype)
                w, bias = (torch.randn(n, k) / k**0.5).to(dtype), torch.randn(n).to(dtype)
                alone, lib, whole, calls, eager = [], [], [], [], []
                for _ in range(args.rounds):
                    alone.append(standalone_ns(shim, x, w, bias, args.reps))
                    eager.append(eager_ns(x, w, bias, args.reps))
                    s = stax_ns(x, w, bias, args.reps)
                    lib.append(s[0]), whole.append(s[1]), calls.append(s[2])
                if max(calls) != 1:
                    print(f"warning: {m}x{k}x{n}: {max(calls)} library calls per call",
                          file=sys.stderr)
                row = {"dtype": str(dtype).removeprefix("torch."), "m": m, "k": k, "n": n,
                       "standalone_us": statistics.median(alone) / 1e3,
                       "stax_library_us": statistics.median(lib) / 1e3,
                       "stax_call_us": statistics.median(whole) / 1e3,
                       "eager_us": statistics.median(eager) / 1e3,
                       "library_calls": max(calls)}
                row["gflops_stax_library"] = 2 * m * k * n / (row["stax_library_us"] * 1e3)
                rows.append(row)
                print(json.dumps(row), flush=True)
    description = (
        "Per call of `F.linear(x, w, bias)` (x: M x K, w: N x K, so addmm with the weight "
        "transposed as a layout), 2 threads: `standalone` is the same oneDNN MatmulPlan built "
        "once from C++ and timed run by run (bench/gemm/plan_shim.cpp); `Stax's library "
        "call` the time inside ExternalPlans::call of the compiled graph (profiling "
        "counters); efficiency = standalone / Stax; `whole call` Stax's call from Python "
        "(guards, the entry, the output's allocation); `eager` torch's F.linear (its own "
        f"BLAS call). Medians of {args.reps} calls, "
        f"{args.rounds} rounds alternating the three, median of the rounds. Generated by "
        "bench/models/gemm_efficiency.py.")
    with open(args.out, "w") as f:
        json.dump({"description": description, "rows": rows}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
