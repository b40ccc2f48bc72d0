"""Stax's eager interpreter (the oracle compiled code is checked against) on the matrix
products of issue 14 — mm, bmm, addmm, baddbmm — against torch 2.13.0 on CPU, through
stax._C.eager_run: every dtype eager accepts (all but bool), transposed inputs (declared
strides), sliced and expanded operands (views inside the graph), broadcast biases, alpha and
beta (floats truncated for integer dtypes), beta == 0 with a NaN bias, and empty dims. Floating
results must lie within the comparison tolerance Stax derives for them
(stax._C.output_tolerances: the dtype's base and the inner size K); integer results, which
wrap, must be equal. What eager refuses, Stax refuses too, naming the op.

No torch.compile here: this checks the IR's typing and the oracle alone, which compiled
results are then compared with (driver/tolerance.h).
"""

import pytest
import torch

from stax import _C
from stax.aten_ops import STAX_DTYPES

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def type_text(t: torch.Tensor) -> str:
    sizes = ", ".join(str(s) for s in t.shape)
    text = f"{STAX_DTYPES[t.dtype]}[{sizes}]"
    if not t.is_contiguous():
        text += " strides=[" + ", ".join(str(s) for s in t.stride()) + "]"
    return text


def run_eager(inputs: dict, body: list[str], outputs: list[str]):
    """Runs `def f(inputs): body; return outputs` in Stax's eager interpreter (the inputs read
    in place, with their own strides); returns the outputs and their comparison tolerances."""
    for t in inputs.values():
        assert t.storage_offset() == 0
    params = ", ".join(f"{name}: {type_text(t)}" for name, t in inputs.items())
    text = f"def f({params}):\n" + "".join(f"    {line}\n" for line in body)
    text += f"    return {', '.join(outputs)}\n"
    results = _C.eager_run(text, [t.data_ptr() for t in inputs.values()])
    out = []
    for dtype, sizes, data in results:
        torch_dtype = {v: k for k, v in STAX_DTYPES.items()}[dtype]
        flat = torch.frombuffer(bytearray(data), dtype=torch_dtype) if data else torch.empty(0, dtype=torch_dtype)
        out.append(flat.reshape(sizes))
    return out, _C.output_tolerances(text)


def values(sizes, dtype, generator, positive=False):
    """Floats in [-2, 2] ([0, 1) when positive, for long sums: the tolerance model holds for
    sums of one sign); integers over the dtype's whole range, so the products wrap."""
    if dtype.is_floating_point:
        x = torch.rand(sizes, generator=generator, dtype=torch.float64)
        if not positive:
            x = 4 * x - 2
        return x.to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, sizes, generator=generator, dtype=dtype)


def check(name, actual, expected, tolerance):
    assert actual.dtype == expected.dtype, name
    assert actual.shape == expected.shape, name
    if expected.dtype.is_floating_point:
        rtol, atol = tolerance
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{name}: {m}")
    else:
        assert torch.equal(actual, expected), f"{name}: {actual} != {expected}"


def scalars(dtype):
    """(beta, alpha) texts and values: floats for floating dtypes; for integer dtypes ints and
    floats (which torch truncates toward zero)."""
    if dtype.is_floating_point:
        return [("0.5", 0.5, "-1.5", -1.5)]
    if dtype == torch.uint8:
        return [("3", 3, "2.7", 2.7)]
    return [("-3", -3, "2", 2), ("2.7", 2.7, "-2.7", -2.7)]


def test_schemas_are_atens():
    """The bridge translates ATen nodes by parameter name (python/stax/aten_ops.py): Stax's
    schemas of the four are ATen's, names, order and keyword-only markers."""
    stax_ops = dict(_C.op_schemas())
    for op in ["mm", "bmm", "addmm", "baddbmm"]:
        aten = getattr(torch.ops.aten, op).default._schema.arguments
        assert [(p, kw) for p, kw in stax_ops[op]] == [(a.name, a.kwarg_only) for a in aten], op


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: STAX_DTYPES[d])
def test_every_op_and_layout_matches_torch(dtype):
    g = torch.Generator().manual_seed(14)
    long_k = 300 if dtype.is_floating_point else 40
    for k, positive in [(7, False), (long_k, True)]:
        m, n, b = 5, 6, 3
        # a transposed (strides [1, m]), w wider than needed (sliced to n columns in the graph),
        # x a batch, y a transposed batch, c and d biases that broadcast.
        a = values((k, m), dtype, g, positive).t()
        w = values((k, n + 4), dtype, g, positive)
        x = values((b, m, k), dtype, g, positive)
        y = values((b, n, k), dtype, g, positive).transpose(1, 2)
        c = values((n,), dtype, g, positive)
        d = values((m, 1), dtype, g, positive)
        e = values((1, n), dtype, g, positive)
        sliced = w[:, 2 : 2 + n]
        for beta_text, beta, alpha_text, alpha in scalars(dtype):
            inputs = {"a": a, "w": w, "x": x, "y": y, "c": c, "d": d, "e": e}
            body = [
                f"s = slice(w, 1, 2, {2 + n})",
                "p = mm(a, s)",
                f"q = addmm(c, a, s, beta={beta_text}, alpha={alpha_text})",
                "r = addmm(d, a, s)",
                "t = bmm(x, y)",
                f"u = baddbmm(e, x, y, beta={beta_text}, alpha={alpha_text})",
                "v = unsqueeze(a, 0)",
                f"ve = expand(v, [{b}, {m}, {k}])",
                "z = bmm(ve, y)",
            ]
            outs, tolerances = run_eager(inputs, body, ["p", "q", "r", "t", "u", "z"])
            expected = [
                torch.mm(a, sliced),
                torch.addmm(c, a, sliced, beta=beta, alpha=alpha),
                torch.addmm(d, a, sliced),
                torch.bmm(x, y),
                torch.baddbmm(e, x, y, beta=beta, alpha=alpha),
                torch.bmm(a.unsqueeze(0).expand(b, m, k), y),
            ]
            for name, actual, want, tol in zip("pqrtuz", outs, expected, tolerances):
                check(f"{STAX_DTYPES[dtype]} k={k} beta={beta_text} alpha={alpha_text} {name}", actual, want, tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: STAX_DTYPES[d])
def test_beta_zero_ignores_a_nan_bias(dtype):
    g = torch.Generator().manual_seed(15)
    a, b = values((4, 3), dtype, g), values((3, 5), dtype, g)
    c = torch.full((4, 5), float("nan"), dtype=dtype)
    c[0, 0] = float("inf")
    outs, tolerances = run_eager({"c": c, "a": a, "b": b},
                                 ["r = addmm(c, a, b, beta=0, alpha=2)", "q = addmm(c, a, b, beta=1)"], ["r", "q"])
    check("beta=0", outs[0], torch.addmm(c, a, b, beta=0, alpha=2), tolerances[0])
    assert not torch.isnan(outs[0]).any()
    check("beta=1", outs[1], torch.addmm(c, a, b, beta=1), tolerances[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=lambda d: STAX_DTYPES[d])
def test_empty_dims(dtype):
    c = torch.full((2, 3), 2, dtype=dtype)
    cases = {
        # k = 0: zeros, or beta * bias (alpha not applied)
        "k0": ({"a": torch.ones(2, 0, dtype=dtype), "b": torch.ones(0, 3, dtype=dtype)}, "mm(a, b)",
               lambda a, b: torch.mm(a, b)),
        "k0_bias": ({"c": c, "a": torch.ones(2, 0, dtype=dtype), "b": torch.ones(0, 3, dtype=dtype)},
                    "addmm(c, a, b, beta=3, alpha=5)", lambda c, a, b: torch.addmm(c, a, b, beta=3, alpha=5)),
        "m0": ({"a": torch.ones(0, 2, dtype=dtype), "b": torch.ones(2, 3, dtype=dtype)}, "mm(a, b)",
               lambda a, b: torch.mm(a, b)),
        "batch0": ({"x": torch.ones(0, 2, 2, dtype=dtype), "y": torch.ones(0, 2, 3, dtype=dtype)}, "bmm(x, y)",
                   lambda x, y: torch.bmm(x, y)),
    }
    for name, (inputs, expr, reference) in cases.items():
        outs, tolerances = run_eager(inputs, [f"r = {expr}"], ["r"])
        check(name, outs[0], reference(*inputs.values()), tolerances[0])


REFUSED = [
    # (inputs, Stax expression, torch call)
    ({"a": torch.ones(2, 3), "b": torch.ones(5, 4)}, "mm(a, b)", lambda a, b: torch.mm(a, b)),
    ({"a": torch.ones(2, 3), "b": torch.ones(3, 4, dtype=torch.float64)}, "mm(a, b)", lambda a, b: torch.mm(a, b)),
    ({"a": torch.ones(3), "b": torch.ones(3, 4)}, "mm(a, b)", lambda a, b: torch.mm(a, b)),
    ({"a": torch.ones(2, 3, dtype=torch.bool), "b": torch.ones(3, 4, dtype=torch.bool)}, "mm(a, b)",
     lambda a, b: torch.mm(a, b)),
    ({"x": torch.ones(2, 2, 3), "y": torch.ones(3, 3, 4)}, "bmm(x, y)", lambda x, y: torch.bmm(x, y)),
    ({"c": torch.ones(3), "a": torch.ones(2, 3), "b": torch.ones(3, 4)}, "addmm(c, a, b)",
     lambda c, a, b: torch.addmm(c, a, b)),
    ({"c": torch.ones(2, 4, dtype=torch.bfloat16), "a": torch.ones(2, 3), "b": torch.ones(3, 4)},
     "addmm(c, a, b, beta=0)", lambda c, a, b: torch.addmm(c, a, b, beta=0)),
    ({"c": torch.ones(1, 2, 2, 4), "x": torch.ones(2, 2, 3), "y": torch.ones(2, 3, 4)}, "baddbmm(c, x, y)",
     lambda c, x, y: torch.baddbmm(c, x, y)),
    ({"c": torch.ones(2, 4, dtype=torch.int8), "a": torch.ones(2, 3, dtype=torch.int8),
      "b": torch.ones(3, 4, dtype=torch.int8)}, "addmm(c, a, b, alpha=300)",
     lambda c, a, b: torch.addmm(c, a, b, alpha=300)),
]


@pytest.mark.parametrize("case", range(len(REFUSED)))
def test_refuses_what_eager_refuses(case):
    inputs, expr, call = REFUSED[case]
    with pytest.raises((RuntimeError, NotImplementedError)):
        call(*inputs.values())
    op = expr.split("(")[0]
    with pytest.raises(ValueError, match=rf"\b{op}: "):
        run_eager(inputs, [f"r = {expr}"], ["r"])
