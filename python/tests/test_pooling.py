"""Pooling runs in Stax: torch.compile(backend="stax") of F.max_pool2d (with and without its
indices), F.avg_pool2d and F.adaptive_avg_pool2d against eager, over kernel, stride, padding,
dilation, ceil_mode, count_include_pad and divisor_override, float32, bfloat16 and float64,
contiguous and channels-last inputs, 3-D inputs, odd sizes and NaN inputs. The bridge maps
aten.max_pool2d_with_indices (two results), aten.avg_pool2d and aten._adaptive_avg_pool2d to
the Stax ops of the same names; stax.explain shows they ran in Stax, and a ResNet-style
forward (stem, pooling, blocks, global pooling, classifier) is one Stax program.

Tolerances: max pooling is exact, values and indices alike (Stax follows eager's NaN and tie
rules). An average is a sum of at most kernel_h * kernel_w values, summed in another order
than eager's (summation_tolerance) and divided as eager divides; bfloat16 results are rounded
once from a float32 sum, as eager's, so they may differ by one bfloat16 ulp where the two
float32 sums straddle a rounding boundary.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from eager_comparison import assert_same, check_explain, summation_tolerance

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


def test_max_pool_training_step_matches_eager():
    """The backward of max pooling (max_pool2d_with_indices_backward) stays in PyTorch and
    reads the indices Stax computed."""
    x = uniform(2, 3, 12, 11, seed=11)

    def fn(x):
        return (F.max_pool2d(x.sin(), 3, 2, 1) ** 2).sum()

    x_eager = x.clone().requires_grad_(True)
    fn(x_eager).backward()
    x_stax = x.clone().requires_grad_(True)
    torch.compile(fn, backend="stax")(x_stax).backward()
    assert_same(x_stax.grad, x_eager.grad, rtol=1.3e-6, atol=1e-6)
