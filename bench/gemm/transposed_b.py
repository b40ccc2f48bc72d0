"""Would a column-major copy of B close the bfloat16 gap on row-major B? (issue 32, sixth
session). For bfloat16 products whose B has contiguous columns, times Stax's matmul plan on B
in place, the same plan on a column-major copy of B (the layout nn.Linear's weights have,
copy not timed), eager's torch.mm on the original tensors, and the copy itself
(`b.t().contiguous()`), interleaved over rounds. Prints the median ms of each.

Usage (after build/ is built):
    chrt -f 1 .venv/bin/python bench/gemm/transposed_b.py [--rounds 3]
"""

import argparse
import ctypes
import os
import statistics
import sys
import time

import torch  # first: its libgomp is the one OpenMP runtime the shim then binds to

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
from gemm_efficiency import ROOT, build_shim  # noqa: E402
from weights_form import eager_ms, plan_ms  # noqa: E402

SHAPES = [(394, 3072, 768), (394, 768, 3072), (512, 768, 3072), (128, 3072, 768)]
IN_PLACE = 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=11)
    args = parser.parse_args()
    torch.set_num_threads(2)
    shim = build_shim(os.path.join(ROOT, "build"))
    shim.stax_plan_time_weights.restype = ctypes.c_int
    print("| M x K x N | B in place ms | B column-major ms | eager ms | copy of B ms |")
    print("|---|---|---|---|---|")
    for m, k, n in SHAPES:
        torch.manual_seed(0)
        a = torch.randn(m, k).bfloat16()
        b = torch.randn(k, n).bfloat16()
        b_columns = b.t().contiguous().t()
        times = {"in place": [], "column-major": [], "eager": [], "copy": []}
        for _ in range(args.rounds):
            times["in place"].append(plan_ms(shim, a, b, IN_PLACE, args.reps)[0])
            times["column-major"].append(plan_ms(shim, a, b_columns, IN_PLACE, args.reps)[0])
            times["eager"].append(eager_ms(a, b, args.reps))
            copies = []
            for _ in range(args.reps):
                start = time.perf_counter()
                b.t().contiguous()
                copies.append(time.perf_counter() - start)
            times["copy"].append(statistics.median(copies) * 1e3)
        med = {name: statistics.median(v) for name, v in times.items()}
        print(f"| {m}x{k}x{n} | {med['in place']:.3f} | {med['column-major']:.3f} | "
              f"{med['eager']:.3f} | {med['copy']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
