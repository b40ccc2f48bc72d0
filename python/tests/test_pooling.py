"""Pooling runs in Stax: torch.compile(backend="stax") of F.max_pool2d (with and without its
indices), F.avg_pool2d and F.adaptive_avg_pool2d against eager, over kernel, stride, padding,
dilation, ceil_mode, count_include_pad and divisor_override, float32, bfloat16 and float64,
contiguous and channels-last inputs, 3-D inputs, odd sizes and NaN inputs. The bridge maps
aten.max_pool2d_with_indices (two results), aten.avg_pool2d and aten._adaptive_avg_pool2d to
the Stax ops of the same names; stax.explain shows they ran in Stax, and a ResNet-style
forward (stem, pooling, blocks, global pooling, classifier) is one Stax program. Their
gradients (aten.max_pool2d_with_indices_backward, avg_pool2d_backward,
_adaptive_avg_pool2d_backward) run in Stax too, so a ResNet training step keeps its pooling
in Stax.

Tolerances: max pooling is exact, values and indices alike (Stax follows eager's NaN and tie
rules). An average is a sum of at most kernel_h * kernel_w values, summed in another order
than eager's (summation_tolerance) and divided as eager divides; bfloat16 results are rounded
once from a float32 sum, as eager's, so they may differ by one bfloat16 ulp where the two
float32 sums straddle a rounding boundary. The gradients are eager's exactly (the same
additions in the same order and roundings) but for windows of more than 64 offsets, a sum
within summation_tolerance of its terms, and for an adaptive gradient of channels-last
operands, where eager's vectorized channels-last kernel divides once where its contiguous
kernel divides twice.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import stax
from eager_comparison import assert_same, check_explain, op_counts, summation_tolerance

DTYPES = [torch.float32, torch.bfloat16, torch.float64]


def uniform(*sizes, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (2 * torch.rand(sizes, generator=g, dtype=torch.float64) - 1).to(dtype)


def coarse(*sizes, dtype=torch.float32, seed=0):
    """Values from a few (ties in most windows), with NaNs and infinities here and there."""
    g = torch.Generator().manual_seed(seed)
    choices = torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0, math.nan, -math.inf, math.inf],
                           dtype=torch.float64)
    return choices[torch.randint(0, len(choices), sizes, generator=g)].to(dtype)


def average_tolerance(dtype, length):
    if dtype == torch.bfloat16:
        return {"rtol": 2 ** -7, "atol": 2 ** -7}
    return summation_tolerance(dtype, length, 1.0)


EXACT = {"rtol": 0, "atol": 0, "equal_nan": True}


def compiled_matches_eager(fn, args, **tolerance):
    expected = fn(*args)
    actual = torch.compile(fn, backend="stax", fullgraph=True)(*args)
    assert_same(actual, expected, **tolerance)
    return actual


MAX_CASES = [
    # (N, C, H, W, kernel, stride, padding, dilation, ceil_mode)
    (2, 3, 17, 19, 3, 2, 1, 1, False),  # ResNet's stem pool
    (1, 4, 16, 16, 2, 2, 0, 1, False),
    (2, 5, 13, 11, (3, 2), (2, 1), (1, 0), (1, 2), True),
    (1, 3, 9, 10, 3, 1, 1, 2, False),
    (3, 2, 7, 7, 2, 3, 1, 1, True),
    (2, 16, 33, 35, 3, 2, 1, 1, True),  # wide enough for the parallel paths
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MAX_CASES, ids=lambda c: "x".join(map(str, c[:4])))
def test_max_pool2d_values_and_indices_match_eager(case, dtype):
    n, c, h, w, kernel, stride, padding, dilation, ceil_mode = case
    x = uniform(n, c, h, w, dtype=dtype, seed=1)

    def fn(x):
        return F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode,
                            return_indices=True)

    compiled_matches_eager(fn, (x,), **EXACT)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_nan_ties_and_infinities(dtype):
    # Eager takes the last NaN of a window and the first of equal maxima.
    x = coarse(2, 4, 15, 14, dtype=dtype, seed=2)

    def fn(x):
        return F.max_pool2d(x, (3, 2), (1, 2), 1, return_indices=True)

    compiled_matches_eager(fn, (x,), **EXACT)
    # Windows of only -inf, padded and dilated: the first position inside the input.
    y = torch.full((1, 2, 8, 9), -math.inf, dtype=dtype)
    y[0, 0, 3, 4] = 1

    def dilated(y):
        return F.max_pool2d(y, 3, 1, 1, 2, True, return_indices=True)

    compiled_matches_eager(dilated, (y,), **EXACT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_channels_last_and_unbatched_inputs(dtype):
    x = uniform(2, 16, 15, 13, dtype=dtype, seed=3).to(memory_format=torch.channels_last)

    def fn(x):
        v, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        return v, i, F.avg_pool2d(x, 3, 2, 1), F.adaptive_avg_pool2d(x, (4, 3))

    expected = fn(x)
    actual = torch.compile(fn, backend="stax", fullgraph=True)(x)
    assert_same(actual[:2], expected[:2], **EXACT)
    assert_same(actual[2:], expected[2:], **average_tolerance(dtype, 9 * 5))
    # [C, H, W]: no batch dim.
    u = uniform(5, 11, 9, dtype=dtype, seed=4)
    compiled_matches_eager(lambda u: F.max_pool2d(u, 2, return_indices=True), (u,), **EXACT)
    compiled_matches_eager(lambda u: F.avg_pool2d(u, 3, 2, 1, True, False), (u,),
                           **average_tolerance(dtype, 9))


AVG_CASES = [
    # (N, C, H, W, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (2, 3, 17, 19, 3, 2, 1, False, True, None),
    (2, 3, 17, 19, 3, 2, 1, True, False, None),
    (1, 4, 8, 8, 4, 3, 2, True, True, None),  # ceil_mode windows past the right padding
    (1, 4, 8, 8, 4, 3, 2, True, False, None),
    (2, 5, 13, 11, (3, 2), (2, 3), (1, 1), True, True, 5),
    (1, 2, 9, 10, 2, 1, 0, False, True, -3),
    (2, 16, 31, 29, 2, 2, 0, True, True, None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", AVG_CASES, ids=lambda c: "x".join(map(str, c[:4])) + f"-{c[7]}-{c[8]}-{c[9]}")
def test_avg_pool2d_matches_eager(case, dtype):
    n, c, h, w, kernel, stride, padding, ceil_mode, count_include_pad, divisor = case
    x = uniform(n, c, h, w, dtype=dtype, seed=5)

    def fn(x):
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)

    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    compiled_matches_eager(fn, (x,), **average_tolerance(dtype, kh * kw))


ADAPTIVE_CASES = [(7, 9, (3, 4)), (13, 11, (5, 2)), (5, 3, (7, 5)), (14, 14, (7, 7)),
                  (9, 9, (2, 2))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ADAPTIVE_CASES, ids=lambda c: f"{c[0]}x{c[1]}-{c[2]}")
def test_adaptive_avg_pool2d_matches_eager(case, dtype):
    h, w, output_size = case
    x = uniform(2, 3, h, w, dtype=dtype, seed=6)
    longest = (math.ceil(h / output_size[0]) + 1) * (math.ceil(w / output_size[1]) + 1)
    compiled_matches_eager(lambda x: F.adaptive_avg_pool2d(x, output_size), (x,),
                           **average_tolerance(dtype, longest))


def test_nan_propagates_through_averages():
    x = uniform(1, 2, 9, 9, seed=7)
    x[0, 0, 4, 4] = math.nan
    x[0, 1, 0, 0] = math.inf
    fn = lambda x: (F.avg_pool2d(x, 3, 2, 1), F.adaptive_avg_pool2d(x, (2, 3)))  # noqa: E731
    compiled_matches_eager(fn, (x,), equal_nan=True, **summation_tolerance(torch.float32, 25, 1))


def test_pooling_runs_in_stax():
    x = uniform(2, 8, 16, 16, seed=8)

    def fn(x):
        v, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        return v, i, F.avg_pool2d(x, 2, ceil_mode=True), F.adaptive_avg_pool2d(x, (3, 5))

    report = check_explain("pooling", fn, x,
                           must_run_in_stax=("max_pool2d_with_indices", "avg_pool2d",
                                             "_adaptive_avg_pool2d"))
    assert all(len(g.regions) == 1 for g in report.graphs), report


def test_a_padding_above_half_the_kernel_is_refused_as_eager_refuses():
    x = uniform(1, 3, 8, 8, seed=9)
    with pytest.raises(RuntimeError) as eager_error:
        F.max_pool2d(x, 2, 1, 2)
    with pytest.raises(Exception) as stax_error:
        torch.compile(lambda x: F.max_pool2d(x, 2, 1, 2), backend="stax")(x)
    assert "pad should be" in str(eager_error.value)
    assert "pad should be" in str(stax_error.value)


class TinyResNet(torch.nn.Module):
    """ResNet's shape in miniature, inference mode: a strided 7x7 stem, batch norm, ReLU, the
    3x3/2 max pool, a basic block, global average pooling and the classifier."""

    def __init__(self, channels=16, classes=10):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, channels, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(channels)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)
        self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.fc = torch.nn.Linear(channels, classes)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        x = torch.relu(x + y)
        return self.fc(torch.flatten(self.avgpool(x), 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_resnet_forward_is_one_stax_program(dtype):
    torch.manual_seed(0)
    model = TinyResNet().eval().to(dtype)
    for bn in (model.bn, model.bn1, model.bn2):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    x = uniform(2, 3, 45, 41, dtype=dtype, seed=10)
    with torch.no_grad():
        report = check_explain(f"tiny_resnet_{dtype}", model, x,
                               must_run_in_stax=("convolution", "max_pool2d_with_indices"))
        assert all(len(g.regions) == 1 for g in report.graphs), report
        expected = model(x)
        actual = torch.compile(model, backend="stax", fullgraph=True)(x)
    if dtype == torch.bfloat16:
        tolerance = {"rtol": 2 ** -5, "atol": 2 ** -5}
    else:
        tolerance = summation_tolerance(dtype, 16 * 9 * 16, 1.0)
    assert_same(actual, expected, **tolerance)


def gradient_of(fn, x, g, compiled):
    """x's gradient of fn(x) against the upstream gradient g, eager or through Stax."""
    x = x.clone().requires_grad_(True)
    out = (torch.compile(fn, backend="stax", fullgraph=True) if compiled else fn)(x)
    out.backward(g)
    return x.grad


def upstream(fn, x, seed):
    """An upstream gradient of fn(x)'s shape (and layout), values in [0.25, 2)."""
    with torch.no_grad():
        out = fn(x)
    gen = torch.Generator().manual_seed(seed)
    g = (0.25 + 1.75 * torch.rand(out.shape, generator=gen, dtype=torch.float64)).to(out.dtype)
    return g.to(memory_format=torch.channels_last) if out.dim() == 4 and out.is_contiguous(
        memory_format=torch.channels_last) and not out.is_contiguous() else g


# The gradients of windows of up to 64 offsets are eager's bit for bit: Stax adds each input
# element's terms in eager's order (its output scan order) with eager's roundings (a 16-bit
# sum rounded after every addition, the average's quotient rounded once, the adaptive one
# after each division).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", MAX_CASES, ids=lambda c: "x".join(map(str, c[:4])))
def test_max_pool2d_gradient_matches_eager(case, dtype):
    n, c, h, w, kernel, stride, padding, dilation, ceil_mode = case
    # Few distinct values: ties, where the first maximum takes the gradient.
    x = (uniform(n, c, h, w, dtype=torch.float64, seed=21) * 4).round().to(dtype)
    fn = lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)  # noqa: E731
    g = upstream(fn, x, 22)
    assert_same(gradient_of(fn, x, g, True), gradient_of(fn, x, g, False), **EXACT)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", AVG_CASES, ids=lambda c: "x".join(map(str, c[:4])) + f"-{c[7]}-{c[8]}-{c[9]}")
def test_avg_pool2d_gradient_matches_eager(case, dtype):
    n, c, h, w, kernel, stride, padding, ceil_mode, count_include_pad, divisor = case
    x = uniform(n, c, h, w, dtype=dtype, seed=23)
    fn = lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode,  # noqa: E731
                                count_include_pad, divisor)
    g = upstream(fn, x, 24)
    assert_same(gradient_of(fn, x, g, True), gradient_of(fn, x, g, False), **EXACT)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ADAPTIVE_CASES, ids=lambda c: f"{c[0]}x{c[1]}-{c[2]}")
def test_adaptive_avg_pool2d_gradient_matches_eager(case, dtype):
    h, w, output_size = case
    x = uniform(2, 3, h, w, dtype=dtype, seed=25)
    fn = lambda x: F.adaptive_avg_pool2d(x, output_size)  # noqa: E731
    g = upstream(fn, x, 26)
    assert_same(gradient_of(fn, x, g, True), gradient_of(fn, x, g, False), **EXACT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_channels_last_and_unbatched_gradients(dtype):
    x = uniform(2, 16, 15, 13, dtype=dtype, seed=27).to(memory_format=torch.channels_last)
    for fn in (lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, 3, 2, 1)):
        g = upstream(fn, x, 28)
        assert_same(gradient_of(fn, x, g, True), gradient_of(fn, x, g, False), **EXACT)
    # Eager's channels-last adaptive backward divides grad_output by the window's size once in
    # the channels its vector loop covers (8 float32 or 16 bfloat16 lanes here), where its
    # contiguous kernel (and Stax) divide by the height and then by the width: each term one
    # rounding apart, at most eps of it. Sums of at most 2 x 2 positive terms (15 -> 4 rows,
    # 13 -> 3 columns), each partial sum rounding at most once more: 5 eps relative.
    fn = lambda x: F.adaptive_avg_pool2d(x, (4, 3))  # noqa: E731
    g = upstream(fn, x, 28)
    assert_same(gradient_of(fn, x, g, True), gradient_of(fn, x, g, False),
                rtol=5 * torch.finfo(dtype).eps, atol=0)
    u = uniform(5, 11, 9, dtype=dtype, seed=29)
    for fn in (lambda u: F.max_pool2d(u, 3, 2, 1, ceil_mode=True),
               lambda u: F.avg_pool2d(u, 3, 2, 1, True, False),
               lambda u: F.adaptive_avg_pool2d(u, (4, 3))):
        g = upstream(fn, u, 30)
        assert_same(gradient_of(fn, u, g, True), gradient_of(fn, u, g, False), **EXACT)


def test_a_long_window_gradient_is_within_its_sum_tolerance():
    # 9x9 windows, stride 2: a Sum reduction over 81 offsets, at most 25 terms each.
    x = uniform(2, 3, 21, 19, seed=31)
    fn = lambda x: F.avg_pool2d(x, 9, 2, 4)  # noqa: E731
    g = upstream(fn, x, 32)
    assert_same(gradient_of(fn, x, g, True), gradient_of(fn, x, g, False),
                **summation_tolerance(torch.float32, 25, 2 / 81))


def test_pooling_backward_runs_in_stax():
    x = uniform(2, 8, 16, 16, seed=33).requires_grad_(True)

    def fn(x):
        return (F.max_pool2d(x, 3, 2, 1).sum() + F.avg_pool2d(x, 2, ceil_mode=True).sum() +
                F.adaptive_avg_pool2d(x, (3, 5)).sum())

    report = stax.explain(fn, x, backward=True)
    in_stax = op_counts(report.stax_ops)
    fallback = op_counts(report.fallback_ops)
    for op in ("max_pool2d_with_indices_backward", "avg_pool2d_backward",
               "_adaptive_avg_pool2d_backward"):
        assert op in in_stax, report
        assert op not in fallback, report


def test_resnet_training_step_runs_pooling_in_stax():
    """A training step of a ResNet stem (convolution, batch norm, ReLU, the 3x3/2 max pool), a
    basic block, global average pooling and the classifier: the pooling backward ops run in
    Stax (issue 15, point 3), none falls back to PyTorch; the gradients match eager's."""
    torch.manual_seed(0)
    model = TinyResNet().train()
    x = uniform(2, 3, 45, 41, seed=34)

    def loss(x):
        return model(x).square().mean()

    report = stax.explain(loss, x, backward=True)
    in_stax = op_counts(report.stax_ops)
    fallback = op_counts(report.fallback_ops)
    # (The global average pool reaches the graph as a mean.)
    assert "max_pool2d_with_indices_backward" in in_stax, report
    assert not any("pool" in op for op in fallback), report.fallback_ops
    model.zero_grad()
    loss(x).backward()
    want = {k: p.grad.clone() for k, p in model.named_parameters()}
    model.zero_grad()
    torch.compile(loss, backend="stax")(x).backward()
    # The longest sums: the stem's weight gradient, over 2 * 23 * 21 positions; batch norm's
    # statistics over as many.
    tol = summation_tolerance(torch.float32, 2 * 23 * 21, 1.0)
    tol["rtol"] = max(tol["rtol"], 4 * torch.finfo(torch.float32).eps * math.sqrt(2 * 23 * 21))
    for name, p in model.named_parameters():
        assert_same(p.grad, want[name], f"grad of {name}", **tol)
