"""How Stax's matmul post-ops (src/external/post_ops.cpp, oneDNN 2.6 post-ops) compare with
eager applying the same op to the same product: per kind, the share of bit-different elements
and the largest difference in float32 ulps between the plan and eager, and for the
transcendental kinds each one's largest error against float64 (in ulps of the result, where
the float64 result is a normal float32), on
- random linear-layer shapes (64x768 @ 768x3072 + bias, inputs scaled so that the product is
  about N(0, 1)), and
- a sweep: 2^20 random float32 bit patterns (every exponent, subnormals, inf, NaN) plus the
  specials, passed through a K = 1 product, and the same negated by a first Linear(-1) (so -0
  reaches the op); binary kinds on every pair of specials.
Eager is applied to the plan's own product (the plan without post-ops), so that only the
post-op is compared (float32 addmm in eager is another library's sgemm, with other bits).

Then, for the transcendental kinds on a larger sweep, the pointwise comparison of accuracy:
special values (non-finite or zero results) that differ from eager's, each one's largest
error where the exact result is a normal float32, how much worse than eager the plan is at
the same input, and both errors where eager's is within 4 ulp.

Refused kinds print "refused" (supported()'s reason on stderr); their figures in
bench/gemm/POST_OPS.md were measured with this script at commit 3d846d6, before the refusals.

Usage (after building build/): .venv/bin/python bench/gemm/post_ops_vs_eager.py [--build build]
"""

import argparse
import ctypes
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plan_vs_eager  # noqa: E402  (the shim's build)

LAYOUT = plan_vs_eager.LAYOUT
layout = plan_vs_eager.layout

KINDS = ["relu", "gelu_erf", "gelu_tanh", "tanh", "sigmoid", "silu", "exp", "abs", "square",
         "sqrt", "linear", "clip", "add", "sub", "mul", "div", "maximum", "minimum"]
EAGER = {
    "relu": torch.relu, "gelu_erf": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": F.silu, "exp": torch.exp,
    "abs": torch.abs, "square": torch.square, "sqrt": torch.sqrt,
}
TRANSCENDENTAL = ["gelu_erf", "gelu_tanh", "tanh", "sigmoid", "silu", "exp", "sqrt"]
SPECIALS = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 3.4e38, -3.4e38, 1e30, -1e30,
            1e-40, -1e-40, 1e-30, -1e-30, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 10.0, -10.0, 88.7,
            89.0, -87.0, -104.0, 5.5, -5.5, 9.0, -9.0, 20.0, -20.0, 1e5, -1e5]


class PostOp:
    def __init__(self, kind, alpha=0.0, beta=0.0, t=None, first=False):
        self.kind, self.alpha, self.beta, self.t, self.first = kind, alpha, beta, t, first

    def eager(self, x):
        k = self.kind
        if k in EAGER:
            return EAGER[k](x)
        if k == "linear":
            y = x * self.alpha if self.alpha != 1 else x
            return y + self.beta if self.beta != 0 else y
        if k == "clip":
            return torch.clamp(x, self.alpha, self.beta)
        t = self.t
        op = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
              "maximum": torch.maximum, "minimum": torch.minimum}[k]
        return op(t, x) if self.first else op(x, t)

    def name(self):
        extra = f"({self.alpha:g}, {self.beta:g})" if self.kind in ("linear", "clip") else ""
        return self.kind + extra + (" t-first" if self.first else "")


def run(shim, a, b, bias, post_ops, threads=2):
    m, n = a.shape[0], b.shape[1]
    c = torch.empty(m, n)
    binaries = [p for p in post_ops if p.t is not None]
    layouts = (ctypes.c_int64 * (6 * max(1, len(binaries))))()
    for i, p in enumerate(binaries):
        t = p.t
        sizes = [1] + list(t.shape)
        strides = [0] + list(t.stride())
        layouts[6 * i:6 * i + 6] = sizes + strides
    ptrs = (ctypes.c_void_p * max(1, len(binaries)))(*[p.t.data_ptr() for p in binaries])
    k = len(post_ops)
    status = shim.stax_plan_run_post(
        layout(a), layout(b), layout(c), layout(bias) if bias is not None else None,
        ctypes.c_double(1.0), ctypes.c_double(1.0), ctypes.c_void_p(a.data_ptr()),
        ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(bias.data_ptr() if bias is not None else 0),
        ctypes.c_void_p(c.data_ptr()), threads, k,
        (ctypes.c_int * max(1, k))(*[KINDS.index(p.kind) for p in post_ops]),
        (ctypes.c_double * max(1, k))(*[p.alpha for p in post_ops]),
        (ctypes.c_double * max(1, k))(*[p.beta for p in post_ops]),
        (ctypes.c_int * max(1, k))(*[int(p.first) for p in post_ops]), layouts, ptrs)
    return c if status == 0 else None


def ulps(x, ref):
    """|x - ref| in float32 ulps of ref (ref float64; its ulp floored at the subnormal step)."""
    e = torch.frexp(ref.abs().clamp_min(2.0**-126))[1].double()
    unit = torch.ldexp(torch.ones_like(ref), (e - 24).to(torch.int64))
    return (x.double() - ref).abs() / unit


def compare(plan, eager):
    same = (plan.view(torch.int32) == eager.view(torch.int32)) | (plan.isnan() & eager.isnan())
    finite = plan.isfinite() & eager.isfinite()
    diff = ulps(plan[finite], eager[finite].double()).max().item() if finite.any() else 0.0
    nonfinite_differ = ((~same) & ~finite).sum().item()
    return (~same).sum().item(), diff, nonfinite_differ


def accuracy(x, y, kind):
    """Largest error of y = op(x) against float64, in ulps, where the float64 result is a
    normal float32 (elsewhere float32 has no relative accuracy to speak of)."""
    ref = EAGER[kind](x.double())
    ok = ref.isfinite() & (ref.abs() >= 2.0**-126) & (ref.abs() <= 3.4e38) & y.isfinite()
    if not ok.any():
        return 0.0, None
    err = ulps(y[ok], ref[ok])
    i = err.argmax()
    return err.max().item(), x[ok][i].item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(plan_vs_eager.ROOT, "build"))
    args = parser.parse_args()
    shim = plan_vs_eager.build(args.build)
    shim.stax_plan_run_post.restype = ctypes.c_int
    torch.manual_seed(0)
    torch.set_num_threads(2)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    m, k, n = 64, 768, 3072
    a = torch.randn(m, k) / math.sqrt(k)
    w = torch.randn(n, k)
    bias = torch.randn(n)
    biasx = bias.expand(m, n)
    plain = run(shim, a, w.t(), biasx, [])
    bits = torch.randint(-2**31, 2**31 - 1, (1 << 20,), dtype=torch.int64).to(torch.int32)
    sweep = torch.cat([torch.tensor(SPECIALS), bits.view(torch.float32),
                       torch.linspace(-30, 30, 60001)])
    sa, sb = sweep.reshape(-1, 1).contiguous(), torch.ones(1, 1)
    splain = run(shim, sa, sb, None, [])
    neg = PostOp("linear", -1.0, 0.0)
    specials = torch.tensor(SPECIALS)
    ga = specials.reshape(-1, 1).contiguous()
    gb = torch.ones(1, len(SPECIALS))
    gplain = run(shim, ga, gb, None, [])
    gt = specials.reshape(1, -1).expand(len(SPECIALS), -1).contiguous()

    ops = [PostOp(kd) for kd in EAGER] + [
        PostOp("linear", 0.1, 0.0), PostOp("linear", 1.0, -0.3), PostOp("linear", -1.7, 0.3),
        PostOp("clip", -1.0, 2.0), PostOp("clip", 0.0, 6.0)]
    t_full = torch.randn(m, n)
    for kd in ("add", "sub", "mul", "div", "maximum", "minimum"):
        for first in ((False, True) if kd in ("sub", "div") else (False,)):
            ops.append(PostOp(kd, t=t_full, first=first))
    print(f"{'post-op':<22} {'linear-layer: differ, max ulp':>30} "
          f"{'sweep: differ, max ulp, non-finite differ':>44}  accuracy vs float64 (ulp): "
          "eager / plan on the sweep")
    for p in ops:
        y = run(shim, a, w.t(), biasx, [p])
        if y is None:
            print(f"{p.name():<22} refused")
            continue
        line = f"{p.name():<22} {'%d, %.3g' % compare(y, p.eager(plain))[:2]:>30} "
        if p.t is None:
            ys = run(shim, sa, sb, None, [p])
            yn = run(shim, sa, sb, None, [neg, p])
            d1, u1, nf1 = compare(ys, p.eager(splain))
            d2, u2, nf2 = compare(yn, p.eager(neg.eager(splain)))
            line += f"{'%d, %.3g, %d' % (d1 + d2, max(u1, u2), nf1 + nf2):>44}"
            if p.kind in TRANSCENDENTAL:
                ee, ex = accuracy(splain, p.eager(splain), p.kind)
                pe, px = accuracy(splain, ys, p.kind)
                line += f"  {ee:.3g} (x={ex:.7g}) / {pe:.3g} (x={px:.7g})"
        else:
            q = PostOp(p.kind, t=gt, first=p.first)
            yg = run(shim, ga, gb, None, [q])
            d, u, nf = compare(yg, q.eager(gplain))
            line += f"{'%d, %.3g, %d (pairs of specials)' % (d, u, nf):>44}"
        print(line)
    # Broadcast operands: a row (over rows), a column (over columns), a scalar.
    for name, t in (("row", torch.randn(1, n)), ("column", torch.randn(m, 1)),
                    ("scalar", torch.randn(1, 1))):
        p = PostOp("add", t=t.expand(m, n))
        y = run(shim, a, w.t(), biasx, [p])
        print(f"add {name} operand: " + ("refused" if y is None else
                                         "%d differ, max ulp %.3g" % compare(y, p.eager(plain))[:2]))
    pointwise_accuracy(shim)


def pointwise_accuracy(shim):
    torch.manual_seed(0)
    bits = torch.randint(-2**31, 2**31 - 1, (1 << 20,), dtype=torch.int64).to(torch.int32)
    sweep = torch.cat([torch.tensor(SPECIALS), bits.view(torch.float32),
                       torch.linspace(-30, 30, 600001), torch.linspace(-110, 110, 220001)])
    sa, sb = sweep.reshape(-1, 1).contiguous(), torch.ones(1, 1)
    x = run(shim, sa, sb, None, []).flatten()
    for kind in TRANSCENDENTAL:
        p = PostOp(kind)
        y = run(shim, sa, sb, None, [p])
        if y is None:
            print(f"{kind:10} refused")
            continue
        y, e, ref = y.flatten(), p.eager(x), EAGER[kind](x.double())
        special = ~(y.isfinite() & e.isfinite()) | (y == 0) | (e == 0)
        same = (y.view(torch.int32) == e.view(torch.int32)) | (y.isnan() & e.isnan())
        normal = (ref.isfinite() & (ref.abs() >= 2.0**-126) & (ref.abs() < 3.4e38)
                  & y.isfinite() & e.isfinite())
        ey, ee = ulps(y[normal], ref[normal]), ulps(e[normal], ref[normal])
        worse = ey - ee
        i = worse.argmax()
        acc = normal & (ulps(e, ref) <= 4)
        print(f"{kind:10} special values differing {(special & ~same).sum().item()}; "
              f"max ulp eager {ee.max():.3g}, plan {ey.max():.3g}; plan worse than eager by at "
              f"most {worse.max():.3g} ulp (x={x[normal][i].item():.7g}); where eager <= 4 ulp: "
              f"eager {ulps(e[acc], ref[acc]).max():.3g}, plan {ulps(y[acc], ref[acc]).max():.3g}")


if __name__ == "__main__":
    main()
