"""Binary pointwise ops (arithmetic, comparisons, logical and bitwise ops, shifts, where, lerp,
ops with a Python scalar) through torch.compile vs eager, for every dtype PyTorch accepts them
in; type promotion between dtypes; integer wraparound; IEEE special values; integer division
by zero."""

import pytest
import torch

from eager_comparison import check_against_eager
from input_layouts import ALL_DTYPES, FLOAT_DTYPES, dtype_id, dtype_kind, make_input, random_values

# Operand ranges per kind of dtype. "nonzero" operands are divisors (random sign, never 0);
# "exponent" keeps integer powers from needing negative exponents, which PyTorch refuses.
DOMAINS = {
    "float": {"real": (-3, 3, False), "nonzero": (0.5, 3, True), "pos": (0.1, 4, False), "exponent": (-2, 2, False)},
    "int": {"real": (-10, 10, False), "nonzero": (1, 9, True), "exponent": (0, 3, False), "shift": (0, 3, False)},
    "bool": {"real": (0, 1, False)},
}

FLOAT, INT, BOOL = {"float"}, {"int"}, {"bool"}
ANY = FLOAT | INT | BOOL
NUMBER = FLOAT | INT

# (name, op(a, b), domain of a, domain of b, kinds of dtype). Ops with one tensor and a Python
# number ignore b.
BINARY_OPS = [
    ("add", torch.add, "real", "real", ANY),
    ("add_alpha", lambda a, b: torch.add(a, b, alpha=2), "real", "real", NUMBER),
    ("sub", torch.sub, "real", "real", NUMBER),
    # alpha=-2 keeps alpha * b exact in every dtype: with an inexact product eager's
    # float16/bfloat16 result depends on the element's position (test_sub_alpha_rounding).
    ("sub_alpha", lambda a, b: torch.sub(a, b, alpha=-2), "real", "real", NUMBER),
    ("mul", torch.mul, "real", "real", ANY),
    ("div", torch.div, "real", "nonzero", NUMBER),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), "real", "nonzero", NUMBER),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), "real", "nonzero", NUMBER),
    ("remainder", torch.remainder, "real", "nonzero", NUMBER),
    ("fmod", torch.fmod, "real", "nonzero", NUMBER),
    ("floor_divide", torch.floor_divide, "real", "nonzero", NUMBER),
    ("pow_float", torch.pow, "pos", "exponent", FLOAT),
    ("pow_int", torch.pow, "real", "exponent", INT),
    ("maximum", torch.maximum, "real", "real", ANY),
    ("minimum", torch.minimum, "real", "real", ANY),
    ("fmax", torch.fmax, "real", "real", ANY),
    ("fmin", torch.fmin, "real", "real", ANY),
    ("atan2", torch.atan2, "real", "real", ANY),
    ("copysign", torch.copysign, "real", "real", ANY),
    ("hypot", torch.hypot, "real", "real", FLOAT),
    ("eq", torch.eq, "real", "real", ANY),
    ("ne", torch.ne, "real", "real", ANY),
    ("lt", torch.lt, "real", "real", ANY),
    ("le", torch.le, "real", "real", ANY),
    ("gt", torch.gt, "real", "real", ANY),
    ("ge", torch.ge, "real", "real", ANY),
    ("logical_and", torch.logical_and, "real", "real", ANY),
    ("logical_or", torch.logical_or, "real", "real", ANY),
    ("logical_xor", torch.logical_xor, "real", "real", ANY),
    ("bitwise_and", torch.bitwise_and, "real", "real", INT | BOOL),
    ("bitwise_or", torch.bitwise_or, "real", "real", INT | BOOL),
    ("bitwise_xor", torch.bitwise_xor, "real", "real", INT | BOOL),
    ("left_shift", torch.bitwise_left_shift, "real", "shift", INT),
    ("right_shift", torch.bitwise_right_shift, "real", "shift", INT),
    ("lerp", lambda a, b: torch.lerp(a, b, 0.3), "real", "real", FLOAT),
    ("lerp_tensor_weight", lambda a, b: torch.lerp(a, b, torch.sigmoid(b)), "real", "real", FLOAT),
    ("where", lambda a, b: torch.where(a > b, a, b), "real", "real", ANY),
    ("where_scalar", lambda a, b: torch.where(a >= b, a, 2), "real", "real", ANY),
    ("add_int_scalar", lambda a, b: a + 3, "real", None, ANY),
    ("mul_float_scalar", lambda a, b: a * 2.5, "real", None, ANY),
    ("rsub_scalar", lambda a, b: 1 - a, "real", None, NUMBER),
    ("div_scalar", lambda a, b: a / 4, "real", None, ANY),
    ("square", lambda a, b: a**2, "real", None, NUMBER),
    ("pow_half", lambda a, b: a**0.5, "pos", None, FLOAT),
    ("scalar_pow", lambda a, b: 2**a, "exponent", None, NUMBER),
    ("gt_scalar", lambda a, b: a > 0.5, "real", None, ANY),
    ("eq_scalar", lambda a, b: a == 2, "real", None, ANY),
    ("floor_divide_scalar", lambda a, b: a // 3, "real", None, NUMBER),
    ("remainder_scalar", lambda a, b: a % 3, "real", None, NUMBER),
    ("bitwise_and_scalar", lambda a, b: a & 6, "real", None, INT),
    ("left_shift_scalar", lambda a, b: a << 2, "real", None, INT),
]

# Operand pairs: (name, (rows, cols) and layout of a, of b). Every op runs on the first;
# LAYOUT_SWEEP_OPS, a few of each kind of op, also on transposed and step-sliced operands,
# broadcasts, stride 0, 0-dim and empty operands. How a kernel reads its operands does not
# depend on the op, and a compiled graph costs time in proportion to its size.
OPERAND_LAYOUTS = {
    "contiguous": (((6, 37), "contiguous"), ((6, 37), "contiguous")),
    "transposed_with_step_sliced": (((6, 37), "transposed"), ((6, 37), "step_sliced")),
    "row_broadcast": (((6, 37), "contiguous"), ((1, 37), "contiguous")),
    "outer_broadcast": (((6, 1), "contiguous"), ((1, 37), "contiguous")),
    "expanded": (((6, 37), "expanded"), ((6, 37), "transposed")),
    "zero_dim": (((6, 37), "step_sliced"), ((), "zero_dim")),
    "both_zero_dim": (((), "zero_dim"), ((), "zero_dim")),
    "empty": (((0, 37), "contiguous"), ((1, 37), "contiguous")),
}
EVERY_OP_LAYOUTS = ("contiguous",)
LAYOUT_SWEEP_OPS = {
    "add", "sub_alpha", "mul", "div", "div_floor", "remainder", "pow_float", "pow_int", "maximum", "fmin", "atan2",
    "lt", "logical_or", "bitwise_xor", "left_shift", "lerp", "where", "mul_float_scalar", "scalar_pow",
}


def layout_tensor(shape, layout, dtype, low, high, random_sign):
    if layout == "zero_dim":
        return make_input(layout, dtype, low, high, random_sign)
    rows, cols = shape
    return make_input(layout, dtype, low, high, random_sign, rows=rows, cols=cols)


def ops_for(dtype):
    kind = dtype_kind(dtype)
    return [(name, op, a, b) for name, op, a, b, kinds in BINARY_OPS if kind in kinds]


def operands(dtype, ops):
    ranges = DOMAINS[dtype_kind(dtype)]
    inputs = {}
    for pair, (a_spec, b_spec) in OPERAND_LAYOUTS.items():
        for _, _, a_domain, b_domain in ops:
            for side, spec, domain in (("a", a_spec, a_domain), ("b", b_spec, b_domain)):
                if domain is not None and (pair, side, domain) not in inputs:
                    inputs[(pair, side, domain)] = layout_tensor(*spec, dtype, *ranges[domain])
    return inputs


def ops_on_operand_layouts(ops):
    def fn(inputs):
        out = {}
        for name, op, a_domain, b_domain in ops:
            for pair in OPERAND_LAYOUTS if name in LAYOUT_SWEEP_OPS else EVERY_OP_LAYOUTS:
                a = inputs[(pair, "a", a_domain)]
                b = inputs[(pair, "b", b_domain)] if b_domain else None
                out[f"{name}/{pair}"] = op(a, b)
        return out

    return fn


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_binary_ops(backend, dtype):
    ops = ops_for(dtype)
    check_against_eager(ops_on_operand_layouts(ops), (operands(dtype, ops),), backend)


# Operands of different dtypes, including 0-dim tensors, whose dtype only counts when their
# category (bool < int < float) is higher.
PROMOTION_PAIRS = [
    ((torch.int32, (5, 7)), (torch.float32, (5, 7))),
    ((torch.int8, (5, 7)), (torch.int64, (5, 7))),
    ((torch.uint8, (5, 7)), (torch.int8, (5, 7))),
    ((torch.bool, (5, 7)), (torch.int16, (5, 7))),
    ((torch.float16, (5, 7)), (torch.bfloat16, (5, 7))),
    ((torch.float16, (5, 7)), (torch.float64, (1, 7))),
    ((torch.bfloat16, (5, 7)), (torch.int64, (5, 7))),
    ((torch.float32, (5, 7)), (torch.float64, ())),
    ((torch.int32, (5, 7)), (torch.float64, ())),
    ((torch.int8, (5, 7)), (torch.int64, ())),
    ((torch.bool, (5, 7)), (torch.float16, ())),
    ((torch.float16, (5, 7)), (torch.int64, ())),
]


def promotion_inputs():
    return [
        (random_values(a_shape, a_dtype, 1, 9), random_values(b_shape, b_dtype, 1, 9))
        for (a_dtype, a_shape), (b_dtype, b_shape) in PROMOTION_PAIRS
    ]


def mixed_dtype_ops(pairs):
    out = {}
    for index, (a, b) in enumerate(pairs):
        out[f"{index}/add"] = a + b
        out[f"{index}/mul"] = a * b
        out[f"{index}/div"] = a / b
        out[f"{index}/maximum"] = torch.maximum(a, b)
        out[f"{index}/ge"] = a >= b
        out[f"{index}/where"] = torch.where(a > 4, a, b)
        out[f"{index}/int_scalar"] = a * 3 + b
        out[f"{index}/float_scalar"] = a * 0.5
    return out


def test_type_promotion_between_dtypes(backend):
    check_against_eager(mixed_dtype_ops, (promotion_inputs(),), backend)


# add/sub/mul over each integer dtype's full range wrap around modulo 2**bits as in eager.
def wraparound_inputs():
    inputs = {}
    for dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
        info = torch.iinfo(dtype)
        edge = torch.tensor([info.min, info.min + 1, -1 if info.min else 0, 0, 1, info.max - 1, info.max], dtype=dtype)
        a = torch.cat([edge.repeat_interleave(len(edge)), random_values((64,), dtype, info.min, info.max)])
        b = torch.cat([edge.repeat(len(edge)), random_values((64,), dtype, info.min, info.max)])
        inputs[dtype_id(dtype)] = (a, b)
    return inputs


def wrapping_arithmetic(inputs):
    return {
        f"{name}/{op}": fn(a, b)
        for name, (a, b) in inputs.items()
        for op, fn in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("neg", lambda a, b: -a))
    }


def test_integer_wraparound(backend):
    check_against_eager(wrapping_arithmetic, (wraparound_inputs(),), backend)


# NaN, infinities, signed zeros, halves (round to even) and a float32 subnormal, through ops
# whose results at these points are specified: NaN propagation of maximum/clamp vs fmax/fmin
# ignoring it, division and remainder by zero, copysign exposing the sign of zero, rounding.
SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 1e-40, -3.0, 3.0]


def special_inputs():
    inputs = {}
    for dtype in FLOAT_DTYPES:
        a = torch.tensor(SPECIAL, dtype=dtype)
        inputs[dtype_id(dtype)] = (a.repeat_interleave(len(SPECIAL)), a.repeat(len(SPECIAL)))
    return inputs


def special_value_ops(inputs):
    out = {}
    for name, (a, b) in inputs.items():
        results = {
            "add": a + b,
            "mul": a * b,
            "div": a / b,
            # Not by subnormal divisors: there eager's own answer depends on the tensor's
            # length (test_remainder_by_a_subnormal below).
            "remainder": torch.remainder(a, torch.where(b.abs() < 1e-30, 1.0, b)),
            "fmod": torch.fmod(a, torch.where(b.abs() < 1e-30, 1.0, b)),
            "floor_divide": torch.floor_divide(a, b),
            "maximum": torch.maximum(a, b),
            "minimum": torch.minimum(a, b),
            "fmax": torch.fmax(a, b),
            "fmin": torch.fmin(a, b),
            "atan2": torch.atan2(a, b),
            "hypot": torch.hypot(a, b),
            "copysign": torch.copysign(torch.ones_like(a), a),
            "lt": a < b,
            "eq": a == b,
            "ne": a != b,
            "clamp": torch.clamp(a, -1.0, 1.0),
            "relu": torch.relu(a),
            "sign": torch.sign(a),
            "isnan": torch.isnan(a),
            "isinf": torch.isinf(a),
            "isfinite": torch.isfinite(a),
            "nan_to_num": torch.nan_to_num(a),
            "nan_to_num_values": torch.nan_to_num(a, nan=0.25, posinf=7.0, neginf=-7.0),
            "round": torch.round(a),
            "floor": torch.floor(a),
            "exp": torch.exp(a),
            "log": torch.log(a),
            "sqrt": torch.sqrt(a),
            "sigmoid": torch.sigmoid(a),
            "tanh": torch.tanh(a),
            # Not at +inf, where eager's own answer depends on the length (test_gelu_of_inf).
            "gelu": torch.nn.functional.gelu(torch.where(a == float("inf"), 0.0, a)),
            "softplus": torch.nn.functional.softplus(a),
            "where_isnan": torch.where(torch.isnan(a), b, a),
            "pow": torch.pow(a, b),
        }
        out.update({f"{name}/{op}": value for op, value in results.items()})
    return out


def test_special_values(backend):
    check_against_eager(special_value_ops, (special_inputs(),), backend, equal_nan=True)


def test_gelu_of_inf(backend):
    # gelu(inf) is inf: x * Phi(x) with Phi(inf) = 1, as eager gives for one element and in
    # float64; torch 2.13.0's float32 vector loop gives NaN for 4 or more elements.
    x = torch.tensor([float("inf"), 1.0, -1.0, 3.0])
    expected = torch.stack([torch.nn.functional.gelu(x[i : i + 1])[0] for i in range(4)])
    assert expected[0].item() == float("inf")
    compiled = torch.compile(torch.nn.functional.gelu, backend=backend)
    torch.testing.assert_close(compiled(x), expected)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sub_alpha_rounding(backend, dtype):
    # torch 2.13.0 computes bf16/f16 a - 3 * b in float in its vector loop (blocks of 32
    # elements) and rounds 3 * b to the dtype first in the tail: sub(8.4375, 2.953125,
    # alpha=3) in bfloat16 is -0.421875 inside a block and -0.4375 in the tail. Stax computes
    # every element as the vector loop does; 64 elements are all inside blocks.
    a = torch.full((64,), 8.4375, dtype=dtype)
    b = torch.full((64,), 2.953125, dtype=dtype)
    expected = torch.sub(a, b, alpha=3)
    compiled = torch.compile(lambda x, y: torch.sub(x, y, alpha=3), backend=backend)
    torch.testing.assert_close(compiled(a, b), expected, rtol=0, atol=0)


@pytest.mark.parametrize("op", [torch.remainder, torch.fmod])
def test_remainder_by_a_subnormal(backend, op):
    # remainder(3, 2**-149) is exactly 0 (3 is a multiple of any power of two at or below 1), as
    # eager gives for tensors shorter than a vector; eager's vector loop divides and gives NaN
    # there (torch 2.13.0: remainder or fmod of 40 elements of 0.5 by 1e-40 is NaN, of 5
    # elements 5.42e-41, the exact fmod). The compiled result must be the exact one.
    a = torch.tensor([3.0, -3.0, 5.5, 0.5])
    b = torch.full((4,), 2.0**-149)  # the smallest float32 subnormal
    expected = torch.stack([op(a[i : i + 1], b[i : i + 1])[0] for i in range(4)])
    assert torch.equal(expected.abs(), torch.zeros(4))  # the scalar path, exact
    compiled = torch.compile(op, backend=backend)
    torch.testing.assert_close(compiled(a, b), expected)


def test_integer_division_by_zero_raises_like_eager(backend, is_stax):
    a = torch.tensor([4, 5, 6], dtype=torch.int32)
    b = torch.tensor([1, 0, 2], dtype=torch.int32)

    def fn(a, b):
        return torch.div(a, b, rounding_mode="floor") + 1

    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, b)
    # Only Stax promises PyTorch's error from compiled code; other backends' kernels divide
    # by zero as the hardware does (a SIGFPE would end the test run).
    if is_stax:
        compiled = torch.compile(fn, backend=backend)
        with pytest.raises(Exception, match="ZeroDivisionError"):
            compiled(a, b)
        nonzero = torch.tensor([1, 3, 2], dtype=torch.int32)
        torch.testing.assert_close(compiled(a, nonzero), fn(a, nonzero))


def test_ops_that_decompositions_leave_run_in_stax(is_stax):
    """aten.true_divide.Tensor and prims.convert_element_type reach the backend from
    decompositions over symbolic sizes (GPT-2's attention scale with dynamic=True), where
    make_fx does not turn them into div and _to_copy: both run in Stax, as eager computes them
    (integer operands divided truly, a division by zero infinite)."""
    if not is_stax:
        return
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    import stax.backend as B
    from stax.options import Options

    aten, prims = torch.ops.aten, torch.ops.prims
    graph = torch.fx.Graph()
    a, b = graph.placeholder("a"), graph.placeholder("b")
    quotient = graph.call_function(aten.true_divide.Tensor, (a, b))
    cast = graph.call_function(prims.convert_element_type.default, (a, torch.float64))
    graph.output((graph.call_function(aten.add.Tensor, (quotient, cast)),))
    gm = torch.fx.GraphModule({}, graph)
    x = torch.arange(-6, 6).reshape(3, 4)
    y = torch.tensor([3, 0, -2, 5])
    FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(x, y)
    records = []
    B._recorders.append(records)
    try:
        fn = B.compile_aten_graph(gm, [x, y], Options.parse(None), "inference")
    finally:
        B._recorders.remove(records)
    (record,) = records
    assert not record.report.fallback_ops, record.report.fallback_ops
    (out,) = fn([x, y])
    expected = torch.true_divide(x, y) + x.to(torch.float64)
    assert out.dtype == expected.dtype == torch.float64
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
