"""How a matmul plan hands B to oneDNN (src/external/matmul_weights_form.h): B read in place
against B packed into the library's layout on every run (the reorder timed with the product),
the plan's measured choice, and eager's torch.mm on the same tensors, interleaved round by
round. Shapes: the products whose B has contiguous columns in the bench/models graphs (GPT-2's
Conv1D forward, the backward products of BERT, ViT, GPT-2 and LLaMA: dX = dY W and
dW = dY^T X), at 2 threads, float32 and bfloat16. Prints per shape the median ms of each and
the ratios to eager.

Usage (after build/ is built):
    chrt -f 1 .venv/bin/python bench/gemm/weights_form.py [--rounds 3] [--build build]
"""

import argparse
import ctypes
import os
import statistics
import sys
import time

import torch  # first: its libgomp is the one OpenMP runtime the shim then binds to

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "models"))
from gemm_efficiency import ROOT, build_shim, layout  # noqa: E402

# (M, K, N, a transposed): c[M, N] = a[M, K] @ b[K, N], b row-major.
SHAPES = [
    (128, 768, 3072, False),   # GPT-2 c_fc forward, batch 1
    (128, 768, 2304, False),   # GPT-2 c_attn forward, batch 1
    (128, 3072, 768, False),   # GPT-2 mlp c_proj forward, batch 1
    (512, 768, 3072, False),   # the same at batch 4
    (394, 768, 3072, False),   # ViT-B/16 batch 2: dX of fc2 (dY[394, 768] @ W2[768, 3072])
    (394, 3072, 768, False),   # ViT: dX of fc1
    (768, 394, 3072, True),    # ViT: dW of fc2 (dY^T @ H)
    (3072, 394, 768, True),    # ViT: dW of fc1 (dY^T @ X)
    (256, 1024, 2752, False),  # LLaMA-style batch 2: dX of the down projection
    (1024, 256, 1024, True),   # LLaMA-style: dW of a 1024 x 1024 projection
    (8, 768, 768, False),      # a few rows
]
FORMS = {"in place": 1, "packed": 2, "blas": 3, "measured": 0}
# The BLAS (MKL's sgemm, src/external/blas_library.h) takes float32 products only.
FORMS_OF = {torch.float32: FORMS, torch.bfloat16: {k: v for k, v in FORMS.items() if k != "blas"}}


def plan_ms(shim, a, b, weights, reps):
    m, n = a.shape[0], b.shape[1]
    c = torch.empty(m, n, dtype=a.dtype)
    ns = (ctypes.c_double * reps)()
    note = ctypes.create_string_buffer(512)
    status = shim.stax_plan_time_weights(
        int(a.dtype == torch.bfloat16), layout(a), layout(b), layout(c),
        ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()),
        torch.get_num_threads(), weights, 3, reps, ns, note, 512)
    assert status == 0
    torch.testing.assert_close(c.float(), (a.double() @ b.double()).float(), rtol=2e-2, atol=5e-1)
    return statistics.median(ns) / 1e6, note.value.decode()


def eager_ms(a, b, reps):
    for _ in range(3):
        a @ b
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # The BLAS the torch.compile bridge uses: the MKL inside PyTorch (python/stax/__init__.py).
    os.environ.setdefault("STAX_BLAS_LIBRARY",
                          os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    shim = build_shim(args.build)
    shim.stax_plan_time_weights.restype = ctypes.c_int
    print("| dtype | M x K x N | a | in place ms | packed ms | BLAS ms | measured ms (choice) "
          "| eager ms | in place / eager | measured / eager |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for dtype in (torch.float32, torch.bfloat16):
        for m, k, n, a_transposed in SHAPES:
            torch.manual_seed(0)
            a = (torch.randn(k, m).t() if a_transposed else torch.randn(m, k)).to(dtype)
            b = torch.randn(k, n).to(dtype)
            forms = FORMS_OF[dtype]
            times = {name: [] for name in list(forms) + ["eager"]}
            choice = ""
            for _ in range(args.rounds):
                for name, weights in forms.items():
                    ms, note = plan_ms(shim, a, b, weights, args.reps)
                    times[name].append(ms)
                    if name == "measured":
                        choice = ("packed" if "B packed" in note else
                                  "BLAS" if "by the BLAS's sgemm" in note else "in place")
                times["eager"].append(eager_ms(a, b, args.reps))
            med = {name: statistics.median(v) for name, v in times.items()}
            blas = f"{med['blas']:.3f}" if "blas" in med else "-"
            print(f"| {str(dtype).removeprefix('torch.')} | {m}x{k}x{n} | "
                  f"{'a^T' if a_transposed else 'a'} | {med['in place']:.3f} | "
                  f"{med['packed']:.3f} | {blas} | {med['measured']:.3f} ({choice}) | "
                  f"{med['eager']:.3f} | {med['in place'] / med['eager']:.2f} | "
                  f"{med['measured'] / med['eager']:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
