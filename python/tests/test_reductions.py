"""Reductions (sum, mean, prod, amax, amin, argmax, argmin, any, all, var, std, var_mean,
logsumexp) and softmax/log_softmax through torch.compile vs eager, for every dtype PyTorch
accepts them in: over all dims, one dim (keepdim or not) and several dims; on contiguous,
transposed (column reductions), step-sliced, expanded, permuted 3-D, 0-dim and empty inputs;
ties for argmax/argmin; NaN propagation; long rows with a tolerance derived from their length."""

import pytest
import torch

from eager_comparison import check_against_eager, check_explain, summation_tolerance
from input_layouts import ALL_DTYPES, COLS, ROWS, dtype_id, make_input, random_values

FLOAT, INT, BOOL = {"float"}, {"int"}, {"bool"}
ANY = FLOAT | INT | BOOL
NUMBER = FLOAT | INT

# (name, op, kinds). Ops reduce the last dim (the only one of a 0-dim input) unless their
# name says otherwise.
REDUCTIONS = [
    ("sum_all", lambda x: x.sum(), ANY),
    ("sum_dim0", lambda x: x.sum(0), ANY),
    ("sum_keepdim", lambda x: x.sum(-1, keepdim=True), ANY),
    ("sum_float64", lambda x: x.sum(-1, dtype=torch.float64), ANY),
    ("mean_all", lambda x: x.mean(), FLOAT),
    ("mean_keepdim", lambda x: x.mean(-1, keepdim=True), FLOAT),
    ("mean_float64", lambda x: x.mean(-1, dtype=torch.float64), FLOAT),
    ("prod", lambda x: x.prod(-1), ANY),
    ("prod_dim0", lambda x: x.prod(0), ANY),
    ("amax", lambda x: x.amax(-1), ANY),
    ("amin_dim0", lambda x: x.amin(0), ANY),
    ("amax_all", lambda x: x.amax(), ANY),
    ("argmax", lambda x: x.argmax(-1), NUMBER),
    ("argmin_dim0", lambda x: x.argmin(0), NUMBER),
    ("argmax_all", lambda x: x.argmax(), NUMBER),
    ("argmin_keepdim", lambda x: x.argmin(-1, keepdim=True), NUMBER),
    ("any", lambda x: x.any(-1), ANY),
    ("all_dim0", lambda x: x.all(0), ANY),
    ("any_all", lambda x: (x > 1).any(), ANY),
    ("all_all", lambda x: (x > -2).all(), ANY),
    ("var", lambda x: x.var(-1), FLOAT),
    ("var_correction0_dim0", lambda x: x.var(0, correction=0), FLOAT),
    ("std_keepdim", lambda x: x.std(-1, keepdim=True), FLOAT),
    ("var_mean", lambda x: torch.var_mean(x, -1, correction=0), FLOAT),
    ("logsumexp", lambda x: torch.logsumexp(x, -1), ANY),
    ("softmax", lambda x: torch.softmax(x, -1), FLOAT),
    ("softmax_dim0", lambda x: torch.softmax(x, 0), FLOAT),
    ("log_softmax", lambda x: torch.log_softmax(x, -1), FLOAT),
    ("softmax_float32", lambda x: torch.softmax(x, -1, dtype=torch.float32), FLOAT),
]

# Reductions over several dims, of 3-D inputs only.
MULTI_DIM_REDUCTIONS = [
    ("sum_dims02", lambda x: x.sum((0, 2)), ANY),
    ("mean_dims12", lambda x: x.mean((1, 2), keepdim=True), FLOAT),
    ("amax_dims01", lambda x: x.amax((0, 1)), ANY),
    ("var_dims12", lambda x: x.var((1, 2)), FLOAT),
    ("std_all", lambda x: x.std(), FLOAT),
]

# An empty input reduced over its empty dim has no value without an identity (amax, argmax,
# var of nothing are errors or NaN in eager); those run on empty inputs over dim 1 only. A
# 0-dim input has one element: var/std with correction 1 would divide by zero.
NEEDS_NONEMPTY = {"amin_dim0", "amax_all", "argmin_dim0", "argmax_all", "mean_all", "var_correction0_dim0"}
NEEDS_TWO_ELEMENTS = {"var", "std_keepdim"}

EVERY_OP_LAYOUTS = ("contiguous", "transposed")
LAYOUT_SWEEP_OPS = {
    "sum_all", "sum_dim0", "prod", "amax_all", "argmax", "any", "var", "softmax", "logsumexp", "mean_keepdim"
}
SWEEP_LAYOUTS = ("step_sliced", "expanded", "zero_dim", "empty")


def dtype_kind(dtype):
    if dtype == torch.bool:
        return "bool"
    return "float" if dtype.is_floating_point else "int"


def layouts_of(name):
    layouts = EVERY_OP_LAYOUTS + (SWEEP_LAYOUTS if name in LAYOUT_SWEEP_OPS else ())
    if name in NEEDS_NONEMPTY:
        layouts = tuple(layout for layout in layouts if layout != "empty")
    if name in NEEDS_TWO_ELEMENTS:
        layouts = tuple(layout for layout in layouts if layout != "zero_dim")
    return layouts


def reduction_inputs(dtype):
    # Values near 1 keep products of 37 terms in range; integers in [-3, 3] make argmax and
    # argmin ties (the first index wins) and include zeros for any/all.
    low, high = (0.6, 1.5) if dtype.is_floating_point else (-3, 3)
    inputs = {layout: make_input(layout, dtype, low, high) for layout in EVERY_OP_LAYOUTS + SWEEP_LAYOUTS}
    inputs["permuted_3d"] = random_values((9, 4, 5), dtype, low, high).permute(1, 2, 0)
    inputs["contiguous_3d"] = random_values((4, 5, 9), dtype, low, high)
    return inputs


def reductions_for(dtype):
    kind = dtype_kind(dtype)
    ops = [(name, op) for name, op, kinds in REDUCTIONS if kind in kinds]
    multi = [(name, op) for name, op, kinds in MULTI_DIM_REDUCTIONS if kind in kinds]

    def fn(inputs):
        out = {f"{name}/{layout}": op(inputs[layout]) for name, op in ops for layout in layouts_of(name)}
        for layout in ("contiguous_3d", "permuted_3d"):
            out.update({f"{name}/{layout}": op(inputs[layout]) for name, op in multi})
        return out

    return fn


# var of the empty input's 0 rows of 37 is an empty result; eager warns while computing it.
@pytest.mark.filterwarnings("ignore:var\\(\\). degrees of freedom is <= 0")
def half_precision_product_tolerance(dtype):
    """Eager multiplies float16/bfloat16 products in the input dtype, rounding each of the
    n - 1 partial products (by at most eps/2 relative); a backend keeping the product in
    float32 differs by up to (n - 1) * eps / 2 relative, n = 37 along rows, 6 down columns."""
    eps = torch.finfo(dtype).eps
    tolerance = {}
    for layout in layouts_of("prod"):
        tolerance[f"prod/{layout}"] = {"rtol": (COLS - 1) * eps / 2, "atol": 1e-5}
    for layout in layouts_of("prod_dim0"):
        tolerance[f"prod_dim0/{layout}"] = {"rtol": (ROWS - 1) * eps / 2, "atol": 1e-5}
    return tolerance


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_reductions(backend, dtype):
    half = dtype in (torch.float16, torch.bfloat16)
    output_tolerance = half_precision_product_tolerance(dtype) if half else None
    check_against_eager(reductions_for(dtype), (reduction_inputs(dtype),), backend, output_tolerance=output_tolerance)


def nan_reductions(x):
    return {
        "sum": x.sum(-1),
        "amax": x.amax(-1),
        "amin": x.amin(0),
        "argmax": x.argmax(-1),
        "argmin": x.argmin(-1),
        "max_dim": torch.max(x, -1),
        "softmax": torch.softmax(x, -1),
        "logsumexp": torch.logsumexp(x, -1),
        "any": x.any(-1),
        "var": x.var(-1),
    }


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=dtype_id)
def test_reductions_propagate_nan_and_inf(backend, dtype):
    # Row 0 holds a NaN, row 1 an inf, row 2 a -inf and row 3 only -inf: amax/argmax return
    # the NaN (and its index), logsumexp of a row of -inf is -inf.
    x = random_values((5, 19), dtype, -1, 1)
    x[0, 7] = float("nan")
    x[1, 3] = float("inf")
    x[2, 11] = float("-inf")
    x[3, :] = float("-inf")
    check_against_eager(nan_reductions, (x,), backend, equal_nan=True)


LONG = 4096


def long_reductions(x):
    return {
        "sum_rows": x.sum(-1),
        "sum_all": x.sum(),
        "mean_rows": x.mean(-1),
        "var_rows": x.var(-1),
        "softmax_rows": torch.softmax(x, -1),
        "logsumexp_rows": torch.logsumexp(x, -1),
        "sum_cols_of_transposed": x.t().sum(0),
    }


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=dtype_id)
def test_long_reductions(backend, dtype):
    rows, magnitude = 3, 1.0
    x = random_values((rows, LONG), dtype, -magnitude, magnitude)
    row_sum = summation_tolerance(dtype, LONG, magnitude)
    # A mean divides the sum and its error by the length; var sums squares of deviations of
    # size up to 2*magnitude, divided by the length - 1.
    mean = {"rtol": row_sum["rtol"], "atol": row_sum["atol"] / LONG}
    var = summation_tolerance(dtype, LONG, (2 * magnitude) ** 2)
    var["atol"] /= LONG - 1
    # softmax and logsumexp sum positive terms exp(x - max): the relative error of that sum
    # (4 * eps * sqrt(n), see summation_tolerance) becomes softmax's relative error and
    # logsumexp's absolute one.
    positive = 4 * torch.finfo(dtype).eps * LONG**0.5
    check_against_eager(
        long_reductions,
        (x,),
        backend,
        output_tolerance={
            "sum_rows": row_sum,
            "sum_all": summation_tolerance(dtype, rows * LONG, magnitude),
            "mean_rows": mean,
            "var_rows": var,
            "softmax_rows": {"rtol": positive, "atol": 0.0},
            "logsumexp_rows": {"rtol": row_sum["rtol"], "atol": positive},
            "sum_cols_of_transposed": row_sum,
        },
    )


def half_precision_sums(x):
    return {"sum": x.sum(), "mean": x.mean(), "row_sums": x.view(4, 1024).sum(-1)}


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16), ids=dtype_id)
def test_half_precision_sums_accumulate_in_float32(backend, dtype):
    # Eager sums 4096 ones to exactly 4096; an accumulator of the input dtype would stop at
    # 2048 (float16) or 256 (bfloat16), where adding 1 no longer changes it.
    x = torch.ones(4096, dtype=dtype)
    check_against_eager(half_precision_sums, (x,), backend)


def variances(x, rows):
    """var/std/var_mean/std_mean of a whole 1-D tensor `x` and of the (3, n) tensor `rows`
    over dims, keepdim, dim 0 of its transpose and several corrections."""
    return {
        "var_all": x.var(),
        "std_all": x.std(),
        "std_all_correction0": torch.std(x, correction=0),
        "var_mean_all": torch.var_mean(x),
        "std_mean_all": torch.std_mean(x, correction=0),
        "var_rows": rows.var(-1),
        "std_rows_keepdim": rows.std(-1, keepdim=True),
        "std_cols": rows.t().std(0, correction=2),
        "var_mean_rows": torch.var_mean(rows, 1, keepdim=True),
        "std_mean_rows": torch.std_mean(rows, -1),
        "std_mean_cols": torch.std_mean(rows.t(), 0, correction=0),
    }


@pytest.mark.parametrize("scale", (1e30, 1e-30, 1e19), ids=("1e30", "1e-30", "1e19"))
def test_float32_variance_accumulates_in_double(backend, scale):
    # PyTorch's CPU var/std/var_mean/std_mean accumulate float32 in double: squares of 1e30
    # overflow float32 and of 1e-30 underflow (std and the means are in range), and at 1e19
    # the variance fits but the sum of squared deviations of 20000 values does not. A float32
    # accumulator gives inf, 0 or NaN; both sides round a double result once.
    n = 20000
    x = random_values((n,), torch.float32, -scale, scale)
    rows = random_values((3, n), torch.float32, -scale, scale)
    check_against_eager(variances, (x, rows), backend, rtol=4 * 2.0**-24, atol=0.0)


def test_variances_run_as_stax_ops(is_stax):
    # AOTAutograd keeps var, std and var_mean (Stax ops, not decomposed); std_mean becomes
    # var_mean and sqrt in double. All of it runs in Stax.
    if is_stax:
        x = random_values((64,), torch.float32, -1, 1)
        rows = random_values((3, 64), torch.float32, -1, 1)
        check_explain("float32 variances", variances, x, rows,
                      must_run_in_stax=("var", "std", "var_mean", "sqrt"))


def variances_over_dims(rows):
    return {
        "var_rows": rows.var(-1),
        "std_rows": rows.std(-1, correction=0),
        "var_mean_rows": torch.var_mean(rows, -1),
        "std_mean_cols": torch.std_mean(rows.t(), 0),
        "var_mean_all": torch.var_mean(rows),
    }


def test_float32_variance_of_a_large_mean(backend):
    # A mean of 1e4 and a spread of 1e-3 (kappa = 1e7): a float32 Welford accumulation loses
    # the spread; eager's double one is exact to rounding. (A whole tensor's var/std are
    # eager's two passes about its float32 mean, whose rounding moves them by the variance's
    # own size, so they are not compared here.)
    rows = 1e4 + random_values((3, 20000), torch.float32, -1e-3, 1e-3)
    check_against_eager(variances_over_dims, (rows,), backend, rtol=4 * 2.0**-24, atol=0.0)


def test_whole_tensor_var_takes_eagers_float32_mean(backend):
    # torch.var/std of a whole float32 tensor compute mean() in float32 first: 4 * 3e38
    # overflows, so they are inf where var_mean (Welford, in double) gives 0.
    x = torch.full((4,), 3e38)
    out = check_against_eager(
        lambda x: (x.var(), x.std(), torch.var_mean(x), x.view(2, 2).var(1)), (x,), backend)
    assert out[0].item() == float("inf") and out[2][0].item() == 0.0


def test_max_and_min_dim_of_bool(backend):
    # Eager's max.dim and min.dim take bool where its argmax refuses it; cumprod's backward
    # finds each line's first zero with max.dim of a bool mask. The first extremum's index:
    # all-False and all-True lines give 0.
    m = torch.tensor([[False, True, True, False], [False, False, False, False],
                      [True, True, False, True], [True, True, True, True]])
    out = check_against_eager(lambda m: (torch.max(m, 1), torch.min(m, 0), torch.min(m, 1)),
                              (m,), backend)
    assert out[0][1].tolist() == [1, 0, 0, 0]
