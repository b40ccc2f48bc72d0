"""The GEMM libraries Debian packages, against torch's matrix product, in one process (issue 14,
point 2): oneDNN's matmul primitive (libdnnl-dev), OpenBLAS (libopenblas-openmp-dev) and BLIS
(libblis-openmp-dev) through CBLAS, float32 and bfloat16, on the products of a linear layer
(C = A W^T, W row-major [N, K] as PyTorch stores a weight) with K and N from the models' shapes
and M from 1 to 4096, and the batched products of attention.

Every library runs on the OpenMP runtime torch loaded (libgomp: one runtime in the process,
checked below). Per shape the candidates run interleaved, `--rounds` times each, and the table
gives the median GFLOP/s (bfloat16: oneDNN writes bfloat16 as eager does; OpenBLAS's sbgemm
writes float32; BLIS has no bfloat16 routine).

Usage (on a shared machine at real-time priority; apt-get install libdnnl-dev
libopenblas-openmp-dev libblis-openmp-dev first):
    chrt -f 1 .venv/bin/python bench/gemm/gemm_libraries.py [--threads 2] [--rounds 3]
        [--quick] [--markdown]
"""

import argparse
import ctypes
import os
import statistics
import subprocess
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = {
    "OpenBLAS": "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
    "BLIS": "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4",
}
KN = [(768, 768), (768, 3072), (3072, 768), (1024, 1024), (512, 1376), (768, 50257)]
MS = [1, 32, 256, 1024, 4096]
BATCHED = [(24, 128, 128, 64), (24, 128, 64, 128), (48, 128, 128, 64)]  # (b, M, N, K)


def build():
    out = os.path.join(tempfile.gettempdir(), "stax_gemm_candidates.so")
    src = os.path.join(HERE, "gemm_candidates.cpp")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["g++", "-O2", "-std=c++17", "-fPIC", "-shared", "-fopenmp", "-o", out,
                        src, "-ldnnl", "-ldl"], check=True)
    lib = ctypes.CDLL(out)
    lib.stax_bench_dnnl.restype = ctypes.c_double
    lib.stax_bench_dnnl.argtypes = [ctypes.c_int] + [ctypes.c_int64] * 4 + [ctypes.c_int]
    lib.stax_bench_cblas.restype = ctypes.c_double
    lib.stax_bench_cblas.argtypes = ([ctypes.c_char_p, ctypes.c_int] + [ctypes.c_int64] * 4
                                     + [ctypes.c_int, ctypes.c_int])
    return lib


def torch_seconds(dtype, b, m, n, k, iters):
    a = torch.randn(b, m, k).to(dtype) if b > 1 else torch.randn(m, k).to(dtype)
    w = torch.randn(b, n, k).to(dtype) if b > 1 else torch.randn(n, k).to(dtype)
    call = (lambda: torch.bmm(a, w.transpose(1, 2))) if b > 1 else (lambda: torch.mm(a, w.t()))
    call()
    t = []
    for _ in range(iters):
        start = time.perf_counter()
        call()
        t.append(time.perf_counter() - start)
    return statistics.median(t)


def openmp_runtimes():
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "gomp" in line or "libiomp" in line})


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="fewer shapes")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    missing = [path for path in LIBS.values() if not os.path.exists(path)]
    if missing:
        raise SystemExit("gemm_libraries.py compares against " + ", ".join(missing) +
                         ", which this machine lacks: apt-get install libopenblas-openmp-dev "
                         "libblis-openmp-dev")
    lib = build()
    shapes = [(1, m, n, k) for k, n in KN for m in MS] + BATCHED
    if args.quick:
        shapes = [(1, m, n, k) for k, n in KN[:3] for m in (1, 256, 2048)] + BATCHED[:1]
    print(f"OpenMP runtimes in the process: {openmp_runtimes()}", flush=True)
    print("| dtype | batch×M×N×K | torch | oneDNN | OpenBLAS | BLIS | best |")
    print("|---|---|---|---|---|---|---|")
    for dtype_id, dtype in ((0, torch.float32), (1, torch.bfloat16)):
        for b, m, n, k in shapes:
            flop = 2.0 * b * m * n * k
            iters = max(3, min(50, int(2e10 / flop / 10)))
            runs = {"torch": [], "oneDNN": [], "OpenBLAS": [], "BLIS": []}
            for _ in range(args.rounds):
                runs["torch"].append(torch_seconds(dtype, b, m, n, k, iters))
                runs["oneDNN"].append(lib.stax_bench_dnnl(dtype_id, b, m, n, k, iters))
                for name, path in LIBS.items():
                    runs[name].append(lib.stax_bench_cblas(path.encode(), dtype_id, b, m, n, k,
                                                           iters, args.threads))
            gflops = {}
            for name, t in runs.items():
                s = statistics.median(t)
                gflops[name] = flop / s / 1e9 if s > 0 else None
            best = max((v, k_) for k_, v in gflops.items() if v is not None)[1]
            cells = [f"{gflops[x]:.0f}" if gflops[x] is not None else "—"
                     for x in ("torch", "oneDNN", "OpenBLAS", "BLIS")]
            print(f"| {dtype} | {b}×{m}×{n}×{k} | " + " | ".join(cells) + f" | {best} |",
                  flush=True)
    print(f"OpenMP runtimes in the process: {openmp_runtimes()}")


if __name__ == "__main__":
    main()
