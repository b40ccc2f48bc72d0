"""Which memory formats a convolution plan (src/external/convolution.h, oneDNN 2.6) should ask
oneDNN for, against torch's own convolution, on ResNet-18's and ViT's convolutions: batch 1 and
4, float32 and bfloat16, NCHW and channels_last activations.

Per shape the candidates run interleaved, `--rounds` times each: torch.nn.functional.conv2d, and
one ConvolutionPlan per ConvolutionPlan::Formats (auto: what Stax uses, the choice this script
measured; any: oneDNN's choice; nhwc; blocked nChw16c; caller: the caller's strides, no
activation reorder), each built once outside the timing, as
Stax builds it when a graph is loaded. Every run is timed on its own; the table gives the median
ms per convolution, its p10-p90 spread, and the ratio to torch's median. The plan's output has
the input's memory format (as eager's has); weights have it too (as model.to(channels_last)
gives). Each plan's result is checked against torch's once.

With --backward: the two backward passes' plans (ConvolutionPass::BackwardData and
BackwardWeights, automatic formats) on three ResNet-18 shapes at batch 2, against
torch.ops.aten.convolution_backward with mask [True, True, False] (both gradients in one call)
and with each gradient's mask alone, interleaved; plus each plan's agreement with eager and
with a float64 reference on the same inputs.

Usage (after build/ is built; on the shared machine under the benchmark lock, real-time):
    flock /tmp/bench.lock chrt -f 1 .venv/bin/python bench/conv/conv_shapes.py \
        [--threads 2] [--rounds 5] [--quick] [--backward] [--build build]
"""

import argparse
import ctypes
import os
import statistics
import subprocess
import tempfile
import time
import zlib

import torch  # first: its libgomp is the one OpenMP runtime the shim then binds to

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FORMATS = {"auto": 0, "any": 1, "nhwc": 2, "blocked": 3, "caller": 4}  # ConvolutionPlan::Formats
# (name, C_in, C_out, input size, kernel, stride, padding, bias, uses in ResNet-18)
SHAPES = [
    ("conv1 3-64 7x7 s2 @224", 3, 64, 224, 7, 2, 3, False, 1),
    ("64-64 3x3 @56", 64, 64, 56, 3, 1, 1, False, 4),
    ("64-128 3x3 s2 @56", 64, 128, 56, 3, 2, 1, False, 1),
    ("64-128 1x1 s2 @56", 64, 128, 56, 1, 2, 0, False, 1),
    ("128-128 3x3 @28", 128, 128, 28, 3, 1, 1, False, 3),
    ("128-256 3x3 s2 @28", 128, 256, 28, 3, 2, 1, False, 1),
    ("128-256 1x1 s2 @28", 128, 256, 28, 1, 2, 0, False, 1),
    ("256-256 3x3 @14", 256, 256, 14, 3, 1, 1, False, 3),
    ("256-512 3x3 s2 @14", 256, 512, 14, 3, 2, 1, False, 1),
    ("256-512 1x1 s2 @14", 256, 512, 14, 1, 2, 0, False, 1),
    ("512-512 3x3 @7", 512, 512, 7, 3, 1, 1, False, 3),
    ("ViT patch 3-768 16x16 s16 @224", 3, 768, 224, 16, 16, 0, True, 0),
]
QUICK = {"conv1 3-64 7x7 s2 @224", "64-64 3x3 @56", "128-256 1x1 s2 @28", "512-512 3x3 @7",
         "ViT patch 3-768 16x16 s16 @224"}


def build(build_dir):
    # One shim per build directory: two builds (before and after a change) measured in turn.
    tag = zlib.crc32(os.path.realpath(build_dir).encode())
    out = os.path.join(tempfile.gettempdir(), f"stax_conv_shim_{tag}.so")
    lib = lambda module: os.path.join(build_dir, "src", module, f"libstax_{module}.a")
    subprocess.run(["g++", "-std=c++20", "-O2", "-fPIC", "-shared", "-fopenmp",
                    "-I", os.path.join(ROOT, "src"), os.path.join(HERE, "conv_shim.cpp"),
                    lib("external"), lib("ir"), lib("runtime"), "-ldnnl", "-o", out], check=True)
    shim = ctypes.CDLL(out)
    shim.stax_conv_create.restype = ctypes.c_void_p
    shim.stax_conv_time.restype = ctypes.c_int
    shim.stax_conv_destroy.argtypes = [ctypes.c_void_p]
    return shim


def layout(t):
    return (ctypes.c_int64 * (2 * t.dim()))(*(list(t.shape) + list(t.stride())))


def ptr(t):
    return ctypes.c_void_p(t.data_ptr() if t is not None else 0)


class Plan:
    # `run_args`: run()'s buffers for a backward pass (ConvolutionPlan::run), the forward
    # convolution's x, w, b, out describing the geometry.
    def __init__(self, shim, formats, x, w, b, out, stride, padding, threads, pass_=0,
                 run_args=None):
        self.shim, self.threads = shim, threads
        self.args = run_args or (x, w, b, out)
        text = ctypes.create_string_buffer(400)
        params = (ctypes.c_int64 * 7)(stride, stride, padding, padding, 1, 1, 1)
        self.handle = shim.stax_conv_create(
            int(x.dtype == torch.bfloat16), FORMATS[formats], layout(x), layout(w),
            layout(b) if b is not None else None, layout(out), params, threads, text, len(text),
            pass_)
        self.implementation = text.value.decode()

    def times(self, reps, warmup=1):
        ns = (ctypes.c_double * reps)()
        x, w, b, out = self.args
        status = self.shim.stax_conv_time(ctypes.c_void_p(self.handle), ptr(x), ptr(w), ptr(b),
                                          ptr(out), self.threads, warmup, reps, ns)
        assert status == 0
        return [v / 1e6 for v in ns]

    def __del__(self):
        if self.handle:
            self.shim.stax_conv_destroy(ctypes.c_void_p(self.handle))


def torch_times(x, w, b, stride, padding, reps, warmup=1):
    f = torch.nn.functional.conv2d
    for _ in range(warmup):
        f(x, w, b, stride, padding)
    t = []
    for _ in range(reps):
        start = time.perf_counter()
        f(x, w, b, stride, padding)
        t.append((time.perf_counter() - start) * 1e3)
    return t


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def measure(shim, shape, batch, dtype, channels_last, args):
    name, c_in, c_out, size, kernel, stride, padding, has_bias, _ = shape
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(batch, c_in, size, size).to(dtype).contiguous(memory_format=fmt)
    w = (torch.randn(c_out, c_in, kernel, kernel) / (c_in * kernel * kernel) ** 0.5).to(dtype)
    w = w.contiguous(memory_format=fmt)
    b = torch.randn(c_out).to(dtype) if has_bias else None
    want = torch.nn.functional.conv2d(x, w, b, stride, padding)
    plans = {}
    for formats in FORMATS:
        out = torch.empty_like(want)  # eager's shape and memory format
        plan = Plan(shim, formats, x, w, b, out, stride, padding, args.threads)
        if not plan.handle:
            plans[formats] = plan  # refused: the reason is its implementation text
            continue
        plan.times(1)
        scale = want.float().abs().max().item()
        error = (out.float() - want.float()).abs().max().item() / scale
        assert error < (1e-4 if dtype == torch.float32 else 2e-2), (name, formats, error)
        plans[formats] = plan
    # Repetitions per round: about 40 ms of torch's runs.
    once = statistics.median(torch_times(x, w, b, stride, padding, 3))
    reps = max(3, min(40, int(40 / max(once, 1e-3))))
    samples = {k: [] for k in ["torch"] + list(FORMATS)}
    for _ in range(args.rounds):
        samples["torch"] += torch_times(x, w, b, stride, padding, reps)
        for formats, plan in plans.items():
            if plan.handle:
                samples[formats] += plan.times(reps)
    return samples, {k: p.implementation for k, p in plans.items()}


BACKWARD_SHAPES = ["64-64 3x3 @56", "128-256 3x3 s2 @28", "512-512 3x3 @7"]


def agreement(got, want, exact):
    """How a gradient compares with eager's and with the float64 one on the same inputs: the
    largest difference from eager's relative to the largest element, the elements that differ
    from eager's, the largest differences of both from float64, and (bfloat16) the elements
    more than one bfloat16 unit away from the float64 value rounded."""
    scale = exact.abs().max().item()
    far, units = "—", "—"
    if got.dtype == torch.bfloat16:
        unit = torch.finfo(got.dtype).eps * exact.abs().clamp_min(torch.finfo(got.dtype).tiny)
        far = int(((got.double() - exact.to(got.dtype).double()).abs() > unit).sum().item())
        # bfloat16 bit patterns of one sign are ordered as the values: units apart.
        same_sign = (got > 0) == (want > 0)
        apart = (got.view(torch.int16).int() - want.view(torch.int16).int()).abs()
        units = int(apart[same_sign].max().item()) if same_sign.any() else 0
    return ((got.double() - want.double()).abs().max().item() / scale,
            int((got != want).sum().item()), got.numel(), units,
            (got.double() - exact).abs().max().item() / scale,
            (want.double() - exact).abs().max().item() / scale, far)


def backward(shim, args):
    """Both backward passes against torch.ops.aten.convolution_backward, batch 2."""
    print("| dtype | input | shape | torch data+weights ms | torch data ms | stax data ms ×torch "
          "| torch weights ms | stax weights ms ×torch | stax both ×torch both |")
    print("|---|---|---|---|---|---|---|---|---|")
    notes = []
    for dtype in (torch.float32, torch.bfloat16):
        for channels_last in (False, True):
            for shape in SHAPES:
                if shape[0] not in BACKWARD_SHAPES:
                    continue
                name, c_in, c_out, size, kernel, stride, padding, _, _ = shape
                fmt = torch.channels_last if channels_last else torch.contiguous_format
                x = torch.randn(2, c_in, size, size).to(dtype).contiguous(memory_format=fmt)
                w = (torch.randn(c_out, c_in, kernel, kernel) / (c_in * kernel * kernel) ** 0.5)
                w = w.to(dtype).contiguous(memory_format=fmt)
                out = torch.nn.functional.conv2d(x, w, None, stride, padding)
                go = torch.randn(out.shape).to(dtype).contiguous(memory_format=fmt)

                def eager(mask, go=go, x=x, w=w, stride=stride, padding=padding):
                    return torch.ops.aten.convolution_backward(
                        go, x, w, None, [stride] * 2, [padding] * 2, [1, 1], False, [0, 0], 1,
                        mask)

                want_gi, want_gw, _ = eager([True, True, False])
                exact_gi, exact_gw, _ = torch.ops.aten.convolution_backward(
                    go.double(), x.double(), w.double(), None, [stride] * 2, [padding] * 2,
                    [1, 1], False, [0, 0], 1, [True, True, False])
                gi, gw = torch.empty_like(x), torch.empty_like(w)
                data = Plan(shim, "auto", x, w, None, out, stride, padding, args.threads, 1,
                            (go, w, None, gi))
                weights = Plan(shim, "auto", x, w, None, out, stride, padding, args.threads, 2,
                               (go, x, None, gw))
                assert data.handle and weights.handle, (data.implementation,
                                                        weights.implementation)
                data.times(1)
                weights.times(1)
                layout_name = "channels_last" if channels_last else "NCHW"
                for what, got, want, exact, plan in (("grad_input", gi, want_gi, exact_gi, data),
                                                    ("grad_weight", gw, want_gw, exact_gw,
                                                     weights)):
                    vs_eager, differ, total, units, stax_err, eager_err, far = agreement(
                        got, want, exact)
                    notes.append(f"- {str(dtype)[6:]} {layout_name} {name} {what}: "
                                 f"{plan.implementation}; vs eager: max {vs_eager:.1e} of the "
                                 f"largest element, {differ} of {total} elements differ (bfloat16 units apart at "
                                 f"most: {units}); vs "
                                 f"float64: stax {stax_err:.1e}, eager {eager_err:.1e}, "
                                 f"elements of stax's more than one unit from it rounded: {far}")
                    assert vs_eager < (1e-4 if dtype == torch.float32 else 2e-2), (name, what)
                torch_calls = {"both": [True, True, False], "data": [True, False, False],
                               "weights": [False, True, False]}
                once = statistics.median(time_calls(lambda: eager(torch_calls["both"]), 3))
                reps = max(3, min(40, int(40 / max(once, 1e-3))))
                samples = {k: [] for k in ["both", "data", "weights", "stax data",
                                           "stax weights"]}
                for _ in range(args.rounds):
                    for k, mask in torch_calls.items():
                        samples[k] += time_calls(lambda mask=mask: eager(mask), reps)
                    samples["stax data"] += data.times(reps)
                    samples["stax weights"] += weights.times(reps)
                m = {k: statistics.median(v) for k, v in samples.items()}
                print(f"| {str(dtype)[6:]} | {layout_name} | {name} | {m['both']:.3f} | "
                      f"{m['data']:.3f} | {m['stax data']:.3f} ×{m['stax data'] / m['data']:.2f} "
                      f"| {m['weights']:.3f} | {m['stax weights']:.3f} "
                      f"×{m['stax weights'] / m['weights']:.2f} | "
                      f"{m['stax data'] + m['stax weights']:.3f} "
                      f"×{(m['stax data'] + m['stax weights']) / m['both']:.2f} |", flush=True)
    print("\nImplementations and agreement:")
    print("\n".join(notes))


def time_calls(f, reps, warmup=1):
    for _ in range(warmup):
        f()
    t = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        t.append((time.perf_counter() - start) * 1e3)
    return t


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="5 shapes instead of 12")
    p.add_argument("--backward", action="store_true",
                   help="the backward passes on 3 shapes instead of the forward formats")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--batches", type=lambda v: [int(b) for b in v.split(",")], default=[1, 4],
                   help="comma-separated batch sizes of the forward shapes (default 1,4)")
    p.add_argument("--dtypes", default="float32,bfloat16",
                   help="comma-separated dtypes of the forward shapes")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    shim = build(args.build)
    with open("/proc/self/maps") as f:
        runtimes = sorted({line.split()[-1] for line in f if "gomp" in line or "libiomp" in line})
    print(f"torch {torch.__version__}, {args.threads} threads, {args.rounds} rounds; OpenMP "
          f"runtimes in the process: {runtimes}", flush=True)
    if args.backward:
        backward(shim, args)
        return
    shapes = [s for s in SHAPES if not args.quick or s[0] in QUICK]
    implementations = {}
    totals = {}  # (dtype, layout, batch, candidate) -> ResNet-18 ms, its convolutions summed
    print("| dtype | input | batch | shape | torch ms (p10-p90) | " +
          " | ".join(f"{k} ms (p10-p90) ×torch" for k in FORMATS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(FORMATS))
    for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
        for channels_last in (False, True):
            for batch in args.batches:
                for shape in shapes:
                    samples, impls = measure(shim, shape, batch, dtype, channels_last, args)
                    layout_name = "channels_last" if channels_last else "NCHW"
                    for k, v in impls.items():
                        implementations.setdefault((str(dtype), layout_name, shape[0], k), v)
                    base = statistics.median(samples["torch"])
                    cells = []
                    for k in ["torch"] + list(FORMATS):
                        s = samples[k]
                        key = (str(dtype)[6:], layout_name, batch, k)
                        if not s:
                            cells.append("refused")
                            totals[key] = float("nan")
                            continue
                        m = statistics.median(s)
                        cell = f"{m:.3f} ({quantile(s, 0.1):.3f}-{quantile(s, 0.9):.3f})"
                        if k != "torch":
                            cell += f" ×{m / base:.2f}"
                        cells.append(cell)
                        totals[key] = totals.get(key, 0.0) + shape[8] * m
                    print(f"| {str(dtype)[6:]} | {layout_name} | {batch} | {shape[0]} | " +
                          " | ".join(cells) + " |", flush=True)
    print("\nResNet-18's convolutions summed (each shape times its uses), ms:")
    print("| dtype | input | batch | torch | " + " | ".join(FORMATS) + " |")
    print("|---|---|---|---|" + "---|" * len(FORMATS))
    for dtype in ("float32", "bfloat16"):
        for layout_name in ("NCHW", "channels_last"):
            for batch in args.batches:
                t = totals.get((dtype, layout_name, batch, "torch"))
                if t is None:
                    continue
                cells = [f"{t:.2f}"]
                for k in FORMATS:
                    v = totals.get((dtype, layout_name, batch, k))
                    cells.append(f"{v:.2f} ×{v / t:.2f}" if v is not None else "—")
                print(f"| {dtype} | {layout_name} | {batch} | " + " | ".join(cells) + " |")
    print("\nImplementations:")
    for (dtype, layout_name, name, k), v in sorted(implementations.items()):
        print(f"- {dtype[6:]} {layout_name} {name} {k}: {v}")


if __name__ == "__main__":
    main()
