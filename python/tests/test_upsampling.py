"""F.interpolate's upsampling (nearest, nearest-exact, bilinear, bicubic) runs in Stax:
PyTorch decomposes it into index.Tensor with two tensor indices (rows [H', 1] and columns
[W'], broadcast together) plus, for the interpolating modes, weights and sums of the gathered
values. Before index took several tensor indices, these gathers fell back to PyTorch.

Tolerance: nearest modes copy, so the result is eager's exactly. The interpolating modes sum
k gathered values per dim with weights (k = 2 for bilinear, 4 for bicubic), and the weights
come from the fraction of a source coordinate computed in floating point, whose absolute
error grows with the coordinate (up to eps x the input size). Eager's kernel and the
decomposition compute both differently, so they may differ by the sums' roundings (k^2 x eps
x max|x|) plus the weights' error times the values they weigh (2 dims x k taps x eps x size x
max|x| x the weights' slope: 1 for linear, 1.5 for cubic).
"""

import pytest
import torch
import torch.nn.functional as F

import stax
from eager_comparison import assert_same

# (mode, options, taps per dim, the weights' slope)
CASES = [("nearest", {}, 1, 0.0), ("nearest-exact", {}, 1, 0.0),
         ("bilinear", {"align_corners": False}, 2, 1.0),
         ("bilinear", {"align_corners": True}, 2, 1.0),
         ("bicubic", {"align_corners": False}, 4, 1.5)]


@pytest.mark.parametrize("mode,options,taps,slope", CASES,
                         ids=[c[0] + str(c[1].get("align_corners", "")) for c in CASES])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_upsampling_runs_in_stax(mode, options, taps, slope, dtype):
    def fn(x):
        return F.interpolate(x, scale_factor=(2, 3), mode=mode, **options)

    # Odd sizes (vector tails) and a transposed input; large enough for the parallel split.
    x = torch.randn(2, 40, 9, 17, generator=torch.Generator().manual_seed(0)).to(dtype)
    for inp in (x, x.transpose(2, 3)):
        report = stax.explain(fn, inp)
        assert not report.fallback_ops, report.fallback_ops
        assert report.stax_ops.get("index.Tensor", 0) >= 1, report.stax_ops
        expected = fn(inp)
        actual = torch.compile(fn, backend="stax")(inp)
        if taps == 1:
            assert_same(actual, expected, rtol=0, atol=0)
        else:
            eps = torch.finfo(dtype).eps
            size = max(inp.shape[2:])
            bound = eps * inp.abs().max().item() * (taps * taps + 2 * taps * size * slope)
            assert_same(actual, expected, rtol=0, atol=bound)
