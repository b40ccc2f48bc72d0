"""Issue 15, point 2: convolutions and their gradients run in Stax. torch.compile(backend="stax") of F.conv1d/2d/3d
and of convolution blocks (a ResNet basic block, ViT's patch embedding) against eager, over
stride, padding, dilation, groups (depthwise included), bias or none, float32 and bfloat16
(oneDNN's convolution, an external call) and float64 (a Stax loop nest: no library computes
it), contiguous and channels-last inputs, odd sizes and an empty batch. stax.explain shows
the convolution ran in Stax, not PyTorch; a transposed convolution is left to PyTorch, with
its reason.

Tolerances: a convolution output is a sum of C_in/groups * prod(kernel) products of values in
[-1, 1], summed in another order than eager's (summation_tolerance); bfloat16 results are
rounded once from a float32 sum, as eager's, so they may differ by one bfloat16 ulp of the
result where the two float32 sums straddle a rounding boundary.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import stax
from eager_comparison import (assert_same, check_explain, summation_tolerance,
                              training_step_matches_eager)
from resnet_blocks import BasicBlock


def uniform(*sizes, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (2 * torch.rand(sizes, generator=g, dtype=torch.float64) - 1).to(dtype)


def tolerance(dtype, length):
    if dtype == torch.bfloat16:
        # One bfloat16 ulp of results of magnitude up to sqrt(length) (random signs), plus
        # the float32 sum's own difference.
        return {"rtol": 2 ** -7, "atol": 2 ** -7 * math.sqrt(length)}
    return summation_tolerance(dtype, length, 1.0)


def compiled_matches_eager(fn, args, dtype, length):
    expected = fn(*args)
    actual = torch.compile(fn, backend="stax", fullgraph=True)(*args)
    assert_same(actual, expected, **tolerance(dtype, length))
    return actual


CASES = [
    # (N, C_in, H, W, C_out, kernel, stride, padding, dilation, groups, bias)
    (2, 3, 17, 19, 8, 3, 1, 1, 1, 1, True),
    (1, 4, 16, 16, 6, 1, 2, 0, 1, 1, False),
    (2, 6, 15, 13, 6, 3, 2, 1, 1, 6, True),  # depthwise
    (1, 8, 12, 12, 12, 3, 1, 2, 2, 4, True),  # grouped and dilated
    (2, 3, 32, 32, 16, 4, 4, 0, 1, 1, True),  # patch embedding
    (1, 5, 9, 11, 7, (3, 2), (2, 1), (1, 0), (1, 2), 1, False),  # asymmetric
    (3, 16, 8, 8, 16, 3, 1, 1, 1, 1, True),  # wide enough for the library's blocked formats
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:6])))
def test_conv2d_matches_eager(case, dtype):
    n, c_in, h, w, c_out, kernel, stride, padding, dilation, groups, bias = case
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x = uniform(n, c_in, h, w, dtype=dtype, seed=1)
    weight = uniform(c_out, c_in // groups, kh, kw, dtype=dtype, seed=2)
    b = uniform(c_out, dtype=dtype, seed=3) if bias else None

    def fn(x, weight, b):
        return F.conv2d(x, weight, b, stride, padding, dilation, groups)

    compiled_matches_eager(fn, (x, weight, b), dtype, c_in // groups * kh * kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_channels_last_input_and_weight(dtype):
    x = uniform(2, 16, 14, 14, dtype=dtype, seed=4).to(memory_format=torch.channels_last)
    weight = uniform(32, 16, 3, 3, dtype=dtype, seed=5).to(memory_format=torch.channels_last)

    def fn(x, weight):
        return F.conv2d(x, weight, None, 1, 1)

    compiled_matches_eager(fn, (x, weight), dtype, 16 * 9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv1d_and_conv3d(dtype):
    x1 = uniform(2, 4, 23, dtype=dtype, seed=6)
    w1 = uniform(6, 2, 5, dtype=dtype, seed=7)
    compiled_matches_eager(lambda x, w: F.conv1d(x, w, None, 2, 2, 1, 2), (x1, w1), dtype, 10)
    x3 = uniform(1, 3, 6, 7, 5, dtype=dtype, seed=8)
    w3 = uniform(4, 3, 3, 3, 3, dtype=dtype, seed=9)
    b3 = uniform(4, dtype=dtype, seed=10)
    compiled_matches_eager(lambda x, w, b: F.conv3d(x, w, b, 1, 1), (x3, w3, b3), dtype, 81)


def test_empty_batch_is_computed():
    x = torch.empty(0, 3, 8, 8)
    weight = uniform(4, 3, 3, 3, seed=11)
    out = compiled_matches_eager(lambda x, w: F.conv2d(x, w, None, 1, 1), (x, weight),
                                 torch.float32, 27)
    assert out.shape == (0, 4, 8, 8)


def test_a_kernel_larger_than_the_padded_input_is_refused_as_eager_refuses():
    x = uniform(1, 3, 4, 4, seed=12)
    weight = uniform(2, 3, 7, 7, seed=13)
    with pytest.raises(RuntimeError) as eager_error:
        F.conv2d(x, weight)
    with pytest.raises(Exception) as stax_error:
        torch.compile(lambda x, w: F.conv2d(x, w), backend="stax")(x, weight)
    assert "Kernel size" in str(eager_error.value) or "kernel size" in str(eager_error.value)
    assert "convolution" in str(stax_error.value) or "Kernel size" in str(stax_error.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_resnet_basic_block_is_one_stax_program(dtype):
    torch.manual_seed(0)
    block = BasicBlock(16, 32, 2).eval().to(dtype)
    for bn in (block.bn1, block.bn2, block.down[1]):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    x = uniform(2, 16, 20, 20, dtype=dtype, seed=14)
    with torch.no_grad():
        report = check_explain(f"resnet_block_{dtype}", block, x,
                               must_run_in_stax=("convolution",))
        assert all(len(g.regions) == 1 for g in report.graphs), report
        # Two convolutions in a chain: the second sums 32 * 9 products of the first's results.
        compiled_matches_eager(block, (x,), dtype, 32 * 9 * 4)


def test_vit_patch_embedding_runs_in_stax():
    embed = torch.nn.Conv2d(3, 64, 16, 16)
    x = uniform(2, 3, 64, 64, seed=15)

    def fn(x):
        return embed(x).flatten(2).transpose(1, 2)

    with torch.no_grad():
        check_explain("vit_patch_embedding", fn, x, must_run_in_stax=("convolution",))
        compiled_matches_eager(fn, (x,), torch.float32, 3 * 256)


def test_explain_names_the_library_call():
    x = uniform(1, 8, 10, 10, seed=16)
    weight = uniform(8, 1, 3, 3, seed=17)
    report = stax.explain(lambda x, w: F.conv2d(x, w, None, 1, 1, 1, 8), x, weight)
    (graph,) = report.graphs
    (region,) = graph.regions
    text = region.primary.compiled.explain()
    assert "through oneDNN convolution" in text, text
    assert "groups 8" in text, text


def test_transposed_convolution_is_left_to_pytorch():
    x = uniform(1, 4, 6, 6, seed=18)
    weight = uniform(4, 2, 3, 3, seed=19)

    def fn(x, w):
        return F.conv_transpose2d(x, w, None, 2, 1, 1) * 2

    report = check_explain("conv_transpose2d", fn, x, weight, may_fall_back=("convolution",))
    reasons = [r for op, rs in report.fallback_reasons.items() if "convolution" in str(op)
               for r in rs]
    assert any("transposed" in r for r in reasons), report.fallback_reasons
    compiled_matches_eager(fn, (x, weight), torch.float32, 4 * 9)


def eager_bfloat16_gradient_roundings(name, batch, kernel):
    """How often eager rounds a bfloat16 convolution gradient of positive terms. With oneDNN's
    bfloat16 kernels (CPUs with AVX-512 BF16 or AMX) once, from a float32 sum. Without them
    (an AVX2 CPU) eager runs its im2col algorithm in bfloat16: grad_input's column products
    are rounded, then added into the image one kernel tap at a time, each addition rounded
    (1 + kernel taps); grad_weight adds each sample's product into a bfloat16 sum (1 + batch)."""
    if torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return 1
    return {"input": 1 + kernel * kernel, "weight": 1 + batch, "bias": 1}[name]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: "x".join(map(str, c[:6])))
def test_conv2d_gradients_match_eager(case, dtype):
    """convolution_backward in Stax: grad_input and grad_weight through oneDNN's backward
    passes (float32, bfloat16) or loop nests (float64), grad_bias a Stax sum. Values in [0, 1)
    for the gradients' long sums over the batch and positions (summation_tolerance's model is
    a sum of terms of one sign)."""
    n, c_in, h, w, c_out, kernel, stride, padding, dilation, groups, bias = case
    g = torch.Generator().manual_seed(20)
    x = torch.rand(n, c_in, h, w, generator=g, dtype=torch.float64).to(dtype)
    weight = torch.rand(c_out, c_in // groups, kernel, kernel, generator=g,
                        dtype=torch.float64).to(dtype)
    b = torch.rand(c_out, generator=g, dtype=torch.float64).to(dtype) if bias else None
    upstream = None

    def step(x, weight, b):
        out = F.conv2d(x, weight, b, stride, padding, dilation, groups)
        return (out * upstream).sum()

    out_shape = F.conv2d(x, weight, b, stride, padding, dilation, groups).shape
    upstream = torch.rand(out_shape, generator=g, dtype=torch.float64).to(dtype)
    leaves = [t.clone().requires_grad_(True) if t is not None else None for t in (x, weight, b)]
    compiled_leaves = [t.clone().requires_grad_(True) if t is not None else None
                       for t in (x, weight, b)]
    step(*leaves).backward()
    torch.compile(step, backend="stax", fullgraph=True)(*compiled_leaves).backward()
    positions = out_shape[0] * out_shape[2] * out_shape[3]
    lengths = [c_out // groups * kernel * kernel, positions, positions]
    for name, want, got, length in zip(("input", "weight", "bias"), leaves, compiled_leaves,
                                       lengths):
        if want is None:
            continue
        if dtype == torch.bfloat16:
            # Each rounding to bfloat16 of a sum of positive terms errs by at most 2^-8 of
            # the result; Stax rounds once, eager as many times as its algorithm does.
            rtol = (1 + eager_bfloat16_gradient_roundings(name, n, kernel)) * 2 ** -8
            tol = {"rtol": rtol, "atol": 2 ** -7}
        else:
            tol = summation_tolerance(dtype, length, 1.0)
            tol["rtol"] = max(tol["rtol"], 4 * torch.finfo(dtype).eps * math.sqrt(length))
        assert_same(got.grad, want.grad, f"grad of {name}", **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_resnet_block_training_step_runs_convolutions_in_stax(dtype):
    torch.manual_seed(0)
    block = BasicBlock(8, 16, 2).train().to(dtype)
    x = torch.rand(2, 8, 12, 12, dtype=torch.float64).to(dtype)

    def loss(x):
        return block(x).float().square().mean()

    report = stax.explain(loss, x, backward=True)
    assert "convolution_backward" in " ".join(str(op) for op in report.stax_ops), report
    fallback = " ".join(str(op) for op in report.fallback_ops)
    assert "convolution" not in fallback, report.fallback_ops
    # The loss is a mean of squares of two chained convolutions' results (each a sum of
    # 16 * 9 products), the gradients sums over the batch and positions.
    tol = ({"rtol": 2 ** -6, "atol": 2 ** -6} if dtype == torch.bfloat16
           else summation_tolerance(torch.float32, 16 * 9 * 72, 1.0))
    training_step_matches_eager(block, loss, x, **tol)
