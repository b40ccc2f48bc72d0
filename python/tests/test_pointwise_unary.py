"""Unary pointwise ops and activations through torch.compile vs eager, for every dtype PyTorch
accepts them in, in one compiled function per dtype: every op on a contiguous input, a dozen
ops covering each domain and kind of op on the other layouts of input_layouts (step-sliced
with a storage offset, transposed, expanded, 0-dim, empty). How a kernel reads its input does
not depend on the op, so the sweep of layouts need not repeat every op (and a compiled graph
costs time in proportion to its size)."""

import pytest
import torch
import torch.nn.functional as F

from eager_comparison import check_against_eager
from input_layouts import ALL_DTYPES, LAYOUTS, dtype_id, dtype_kind, make_input

EVERY_OP_LAYOUTS = ("contiguous",)
LAYOUT_SWEEP_OPS = {
    "exp", "neg", "abs", "round", "sign", "isnan", "clamp", "gelu", "sigmoid", "bitwise_not", "logical_not", "log",
    "sqrt", "asin", "erfinv", "acosh",
}

# Input domains per kind of dtype: real-valued ops see [-3, 3], ops defined on part of the
# line see only that part, so that no case compares NaN with NaN (test_special_values does).
DOMAINS = {
    "float": {"real": (-3, 3), "pos": (0.1, 4), "unit": (-0.95, 0.95), "ge1": (1, 4)},
    "int": {"real": (-20, 20), "pos": (0, 20)},
    "bool": {"real": (0, 1), "pos": (0, 1)},
}

FLOAT, INT, BOOL = {"float"}, {"int"}, {"bool"}
ANY = FLOAT | INT | BOOL
NUMBER = FLOAT | INT

# (name, op, domain, kinds of dtype it is tested with)
UNARY_OPS = [
    ("exp", torch.exp, "real", ANY),
    ("exp2", torch.exp2, "real", ANY),
    ("expm1", torch.expm1, "real", ANY),
    ("sin", torch.sin, "real", ANY),
    ("cos", torch.cos, "real", ANY),
    ("tan", torch.tan, "real", FLOAT),
    ("atan", torch.atan, "real", ANY),
    ("sinh", torch.sinh, "real", FLOAT),
    ("cosh", torch.cosh, "real", FLOAT),
    ("tanh", torch.tanh, "real", ANY),
    ("asinh", torch.asinh, "real", FLOAT),
    ("erf", torch.erf, "real", ANY),
    ("erfc", torch.erfc, "real", FLOAT),
    ("sigmoid", torch.sigmoid, "real", ANY),
    ("reciprocal", torch.reciprocal, "real", ANY),
    ("neg", torch.neg, "real", NUMBER),
    ("abs", torch.abs, "real", NUMBER),
    ("relu", torch.relu, "real", NUMBER),
    ("floor", torch.floor, "real", NUMBER),
    ("ceil", torch.ceil, "real", NUMBER),
    ("trunc", torch.trunc, "real", NUMBER),
    ("round", torch.round, "real", NUMBER),
    ("round_decimals", lambda x: torch.round(x, decimals=1), "real", FLOAT),
    ("frac", torch.frac, "real", FLOAT),
    ("sign", torch.sign, "real", ANY),
    ("isnan", torch.isnan, "real", ANY),
    ("isinf", torch.isinf, "real", ANY),
    ("isfinite", torch.isfinite, "real", ANY),
    ("nan_to_num", torch.nan_to_num, "real", ANY),
    ("logical_not", torch.logical_not, "real", ANY),
    ("bitwise_not", torch.bitwise_not, "real", INT | BOOL),
    ("clamp", lambda x: torch.clamp(x, -1, 2), "real", ANY),
    ("clamp_min", lambda x: torch.clamp_min(x, 1), "real", ANY),
    ("clamp_max", lambda x: torch.clamp_max(x, -1), "real", ANY),
    ("hardtanh", lambda x: F.hardtanh(x, -1.5, 2.5), "real", FLOAT),
    ("hardtanh_int", lambda x: F.hardtanh(x, -5, 7), "real", INT),
    ("silu", F.silu, "real", FLOAT),
    ("mish", F.mish, "real", FLOAT),
    ("hardsigmoid", F.hardsigmoid, "real", FLOAT),
    ("hardswish", F.hardswish, "real", FLOAT),
    ("gelu", F.gelu, "real", FLOAT),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "real", FLOAT),
    ("softplus", F.softplus, "real", FLOAT),
    ("softplus_beta", lambda x: F.softplus(x, beta=2.0, threshold=3.0), "real", FLOAT),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), "real", FLOAT),
    ("elu", lambda x: F.elu(x, alpha=0.7), "real", FLOAT),
    ("log", torch.log, "pos", ANY),
    ("log10", torch.log10, "pos", FLOAT),
    ("log1p", torch.log1p, "pos", ANY),
    ("log2", torch.log2, "pos", FLOAT),
    ("sqrt", torch.sqrt, "pos", ANY),
    ("rsqrt", torch.rsqrt, "pos", FLOAT),
    ("asin", torch.asin, "unit", FLOAT),
    ("acos", torch.acos, "unit", FLOAT),
    ("atanh", torch.atanh, "unit", FLOAT),
    ("erfinv", torch.erfinv, "unit", FLOAT),
    ("acosh", torch.acosh, "ge1", FLOAT),
]

# PyTorch refuses these for unsigned integers.
NOT_FOR_UINT8 = {"hardtanh_int"}


def ops_for(dtype):
    kind = dtype_kind(dtype)
    return [
        (name, op, domain)
        for name, op, domain, kinds in UNARY_OPS
        if kind in kinds and not (dtype == torch.uint8 and name in NOT_FOR_UINT8)
    ]


def layouts_of(name):
    return LAYOUTS if name in LAYOUT_SWEEP_OPS else EVERY_OP_LAYOUTS


def ops_on_layouts(ops):
    def fn(inputs):
        return {
            f"{name}/{layout}": op(inputs[f"{domain}/{layout}"])
            for name, op, domain in ops
            for layout in layouts_of(name)
        }

    return fn


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_unary_ops(backend, dtype):
    ops = ops_for(dtype)
    ranges = DOMAINS[dtype_kind(dtype)]
    inputs = {
        f"{domain}/{layout}": make_input(layout, dtype, *ranges[domain])
        for domain in {domain for _, _, domain in ops}
        for layout in LAYOUTS
    }
    check_against_eager(ops_on_layouts(ops), (inputs,), backend)


# Casts between every pair of dtypes from contiguous sources, and to a few targets from
# transposed and step-sliced ones. Sources hold values every target can represent (0..100,
# with fractions for the floats, so float->int truncation is exercised; zeros included, so
# ->bool gives both values).
CAST_LAYOUT_TARGETS = {
    "contiguous": ALL_DTYPES,
    "transposed": (torch.float32, torch.int64, torch.bool),
    "step_sliced": (torch.bfloat16, torch.int32, torch.uint8),
}


def cast_inputs():
    inputs = {}
    for dtype in ALL_DTYPES:
        for layout in CAST_LAYOUT_TARGETS:
            tensor = make_input(layout, dtype, 0, 100)
            if dtype != torch.bool:
                tensor[0, :5] = 0
            inputs[(dtype_id(dtype), layout)] = tensor
    return inputs


def cast_all(inputs):
    return {
        f"{source}/{layout}->{dtype_id(target)}": tensor.to(target)
        for (source, layout), tensor in inputs.items()
        for target in CAST_LAYOUT_TARGETS[layout]
    }


def test_casts_between_all_dtypes(backend):
    check_against_eager(cast_all, (cast_inputs(),), backend)


def test_casts_of_negative_and_fractional_floats(backend):
    # float -> signed int truncates towards zero; float -> float16/bfloat16 rounds to nearest.
    x = torch.tensor([-2.7, -1.5, -0.5, 0.49, 1.5, 2.5, 126.9, -127.9, 1e-3, 65519.0])

    def fn(x):
        return {dtype_id(d): x.to(d) for d in (torch.int8, torch.int16, torch.int32, torch.int64)} | {
            "bfloat16": x.to(torch.bfloat16),
            "float16": x.to(torch.float16),
            "float64": x.to(torch.float64),
            "bool": x.to(torch.bool),
        }

    check_against_eager(fn, (x,), backend)
