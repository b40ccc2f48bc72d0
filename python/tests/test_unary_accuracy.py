"""Every floating unary op (and the activations built on them) against eager over a dense sweep
of its whole domain, per dtype: one compiled graph per dtype computes all ops at once on one
sweep tensor, and each op's result must be within torch.testing.assert_close's default
tolerance of eager's everywhere (NaN where eager gives NaN).

The sweep (`sweep_values`): for float16 and bfloat16 every representable value; for float32
and float64 both signs of magnitudes spaced logarithmically from the smallest subnormal to the
largest finite value, dense linear runs around the points where ops change behaviour (0, the
domain edges +-1 of asin/acos/atanh/erfinv, 1 of acosh/log, -1 of log1p, the poles of tan, the
overflow thresholds of exp/sinh/cosh, the saturation points of erf/tanh/sigmoid), the values
next to +-1 and 0 bit by bit, and +-0, +-inf, NaN.

`python python/tests/test_unary_accuracy.py` prints each op's worst deviation from eager in
units of the tolerance (<= 1 passes) per dtype."""

import math
import sys

import pytest
import torch
import torch.nn.functional as F

OPS = {
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tanh": torch.tanh,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "erf": torch.erf,
    "erfc": torch.erfc,
    "erfinv": torch.erfinv,
    "sigmoid": torch.sigmoid,
    # Eager's own gelu of |x| > max / 2 depends on the element's position (its vectorized loop
    # overflows to inf, or gives NaN for float16 inf, where its scalar tail does not): such
    # inputs are replaced by 0 for gelu alone.
    "gelu": lambda x: F.gelu(torch.where(x.abs() <= torch.finfo(x.dtype).max / 2, x, 0.0)),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "softplus": F.softplus,
    "elu": F.elu,
    "frac": torch.frac,
    "round": torch.round,
    "sign": torch.sign,
}

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def every_value(dtype):
    """Every value of a 16-bit float dtype, NaNs and infinities included."""
    return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)


def sweep_values(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return every_value(dtype)
    info = torch.finfo(dtype)
    tiny_log2 = math.log2(info.smallest_normal * info.eps)  # the smallest subnormal
    magnitudes = torch.logspace(tiny_log2, math.log2(info.max), 60000, base=2, dtype=torch.float64)
    points = [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0, 10.0, 20.0, 88.7, 89.4, 709.8, 710.5]
    points += [k * math.pi / 2 for k in range(1, 8)]
    runs = [torch.linspace(p - 0.05, p + 0.05, 2001, dtype=torch.float64) for p in points]
    # the 400 values below 1 and above 1, and the first 400 subnormals, bit by bit
    steps = torch.arange(1, 401, dtype=torch.float64)
    near_one = [1 - steps * info.eps / 2, 1 + steps * info.eps]
    near_zero = [steps * (info.smallest_normal * info.eps)]  # the first subnormals
    positive = torch.cat([magnitudes, *runs, *near_one, *near_zero])
    special = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan], dtype=torch.float64)
    return torch.cat([positive, -positive, special]).to(dtype)


def all_ops(x):
    return {name: op(x) for name, op in OPS.items()}


def worst_deviation(actual, expected):
    """max |actual - expected| / (atol + rtol |expected|) with assert_close's defaults for the
    dtype, the worst input index; NaN against non-NaN (or inf against a different value) is inf."""
    rtol, atol = {
        torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7),
        torch.bfloat16: (1.6e-2, 1e-5), torch.float16: (1e-3, 1e-5),
    }[expected.dtype]
    a, e = actual.double(), expected.double()
    same = (a == e) | (a.isnan() & e.isnan())
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs().nan_to_num(math.inf, math.inf))
    ratio = diff / (atol + rtol * e.abs().nan_to_num(0.0, math.inf, math.inf))
    ratio = torch.where(same, torch.zeros_like(ratio), ratio.nan_to_num(math.inf))
    index = int(ratio.argmax())
    return ratio[index].item(), index


def compare(dtype, backend):
    x = sweep_values(dtype)
    with torch.no_grad():
        expected = all_ops(x)
        actual = torch.compile(all_ops, backend=backend, dynamic=False)(x)
    report = {}
    for name in OPS:
        ratio, index = worst_deviation(actual[name], expected[name])
        report[name] = (ratio, x[index].item(), actual[name][index].item(),
                        expected[name][index].item())
    return report


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_unary_ops_match_eager_over_their_domains(backend, dtype):
    report = compare(dtype, backend)
    failures = [
        f"{name}({x!r}) = {got!r}, eager {want!r} ({ratio:.3g} x tolerance)"
        for name, (ratio, x, got, want) in report.items() if not ratio <= 1
    ]
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    import stax  # noqa: F401

    for dtype in DTYPES if len(sys.argv) < 2 else [getattr(torch, a) for a in sys.argv[1:]]:
        report = compare(dtype, "stax")
        for name, (ratio, x, got, want) in sorted(report.items(), key=lambda kv: -kv[1][0]):
            print(f"{str(dtype):15} {name:11} {ratio:10.3g}  at x={x!r}: {got!r} vs eager {want!r}")
