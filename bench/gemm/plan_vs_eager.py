"""How close Stax's matmul plans (src/external, oneDNN) come to eager's bits: addmm, bmm and
baddbmm on random inputs of the models' shapes, float32 and bfloat16, alpha and beta 1 and not.
Prints the share of bit-equal elements, and for float32 the error of eager and of the plan
against a float64 reference in units of 2^-24 * sum |a||b| (different libraries sum in a
different order: equal accuracy, not equal bits, is what float32 can promise).

Usage (after scripts/setup.sh has built build/):
    .venv/bin/python bench/gemm/plan_vs_eager.py [--build build]
"""

import argparse
import ctypes
import os
import subprocess
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LAYOUT = ctypes.c_int64 * 6


def build(build_dir):
    out = os.path.join(tempfile.gettempdir(), "stax_plan_shim.so")
    lib = lambda module: os.path.join(build_dir, "src", module, f"libstax_{module}.a")
    subprocess.run(["g++", "-std=c++20", "-O2", "-fPIC", "-shared", "-fopenmp",
                    "-I", os.path.join(ROOT, "src"), os.path.join(HERE, "plan_shim.cpp"),
                    lib("external"), lib("ir"), "-ldnnl", "-o", out], check=True)
    shim = ctypes.CDLL(out)
    shim.stax_plan_run.restype = ctypes.c_int
    return shim


def layout(t):
    sizes, strides = list(t.shape), list(t.stride())
    if t.dim() == 2:
        sizes, strides = [1] + sizes, [0] + strides
    return LAYOUT(*(sizes + strides))


def run_plan(shim, a, b, bias, alpha, beta, out_shape):
    c = torch.empty(out_shape, dtype=a.dtype)
    ptr = lambda t: ctypes.c_void_p(t.data_ptr() if t is not None else 0)
    status = shim.stax_plan_run(int(a.dtype == torch.bfloat16), layout(a), layout(b), layout(c),
                                layout(bias) if bias is not None else None,
                                ctypes.c_double(alpha), ctypes.c_double(beta), ptr(a), ptr(b),
                                ptr(bias), ptr(c), torch.get_num_threads())
    assert status == 0
    return c


def bits(t):
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int16)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    shim = build(args.build)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for dtype in (torch.float32, torch.bfloat16):
        for m, n, k in ((128, 768, 768), (256, 3072, 768), (64, 50, 1000)):
            a, w, bias = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
            a, w, bias = a.to(dtype), w.to(dtype), bias.to(dtype)
            for alpha, beta in ((1.0, 1.0), (0.5, 0.25)):
                eager = torch.addmm(bias, a, w.t(), beta=beta, alpha=alpha)
                plan = run_plan(shim, a, w.t(), bias.expand(m, n), alpha, beta, (m, n))
                line = (f"{dtype} addmm {m}x{n}x{k} alpha={alpha} beta={beta}: bit-equal "
                        f"{(bits(plan) == bits(eager)).double().mean().item():.2%}")
                if dtype == torch.float32:
                    ref = torch.addmm(bias.double(), a.double(), w.t().double(), beta=beta,
                                      alpha=alpha)
                    unit = (abs(alpha) * (a.double().abs() @ w.t().double().abs())
                            + abs(beta) * bias.double().abs()) * 2.0**-24
                    err = lambda x: ((x.double() - ref).abs() / unit).max().item()
                    line += f"; max error eager {err(eager):.2f}, plan {err(plan):.2f}"
                print(line)
        a, b = torch.randn(24, 128, 64).to(dtype), torch.randn(24, 128, 64).to(dtype)
        bias = torch.randn(24, 128, 128).to(dtype)
        eager = torch.baddbmm(bias, a, b.transpose(1, 2), beta=0.5, alpha=0.125)
        plan = run_plan(shim, a, b.transpose(1, 2), bias, 0.125, 0.5, (24, 128, 128))
        print(f"{dtype} baddbmm 24x128x128x64: bit-equal "
              f"{(bits(plan) == bits(eager)).double().mean().item():.2%}")
        eager = torch.bmm(a, b.transpose(1, 2))
        plan = run_plan(shim, a, b.transpose(1, 2), None, 1.0, 0.0, (24, 128, 128))
        print(f"{dtype} bmm 24x128x128x64: bit-equal "
              f"{(bits(plan) == bits(eager)).double().mean().item():.2%}")


if __name__ == "__main__":
    main()
