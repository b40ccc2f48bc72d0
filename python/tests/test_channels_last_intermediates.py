"""Intermediates stored channels last around convolutions (lowering/channels_last.h): a small
ResNet (stem, max pooling, two basic blocks, average pooling, a linear head) compiled with the
layouts Stax chooses and with every intermediate row-major (the `channels_last_intermediates`
option) gives eager's values, and every output keeps the layout eager gives it: a
convolution's output returned (or viewed by an output) is row-major for NCHW inputs and
channels last for channels-last inputs, with no second compile to fix a layout. Training
steps' gradients match eager's too.

Tolerances as in test_convolution.py: a chain of convolutions summing up to 32 * 9 products of
values of either sign per layer (summation_tolerance for float32; a few bfloat16 ulps of the
result, which rounds each layer's float32 sum once as eager does)."""

import pytest
import torch

import stax
from eager_comparison import assert_same, summation_tolerance, training_step_matches_eager
from resnet_blocks import BasicBlock


class SmallResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, 2, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.blocks = torch.nn.ModuleList([BasicBlock(16, 16, 1), BasicBlock(16, 32, 2)])
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):
        y = self.pool(torch.relu(self.bn(self.stem(x))))
        for b in self.blocks:
            y = b(y)
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def model(dtype):
    torch.manual_seed(0)
    m = SmallResNet().eval().to(dtype)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    return m


def tolerance(dtype):
    if dtype == torch.bfloat16:
        return {"rtol": 2 ** -5, "atol": 2 ** -5}
    return summation_tolerance(torch.float32, 32 * 9 * 4, 1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_small_resnet_matches_eager_with_and_without_channels_last_intermediates(dtype, layout):
    m = model(dtype)
    x = torch.rand(2, 3, 40, 36, dtype=torch.float64).to(dtype)
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        expected = m(x)
        for chosen in (True, False):
            torch._dynamo.reset()
            fn = torch.compile(m, backend="stax",
                               options={"channels_last_intermediates": chosen})
            actual = fn(x)
            assert actual.stride() == expected.stride()
            assert_same(actual, expected, f"channels_last_intermediates={chosen}",
                        **tolerance(dtype))


def _conv_and_readers(conv, x):
    c = conv(x)
    return c, torch.relu(c).flatten(2), torch.relu(c) * 2


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_outputs_keep_eagers_layout_and_compile_once(layout):
    """A convolution's output that is a graph output, and values computed from it, come back
    in eager's layout from the first compile: none asks the bridge for another layout."""
    torch.manual_seed(1)
    conv = torch.nn.Conv2d(8, 16, 3, 1, 1).to(torch.bfloat16)
    x = torch.rand(2, 8, 20, 20).to(torch.bfloat16)
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        expected = _conv_and_readers(conv, x)
        report = stax.explain(_conv_and_readers, conv, x)
        torch._dynamo.reset()
        actual = torch.compile(_conv_and_readers, backend="stax")(conv, x)
    for a, e in zip(actual, expected):
        assert a.stride() == e.stride()
    assert_same(actual, expected, **tolerance(torch.bfloat16))
    # An output in another layout than eager's would be written again in eager's (region.py:
    # permute, clone, permute back, a second compile) or copied after the run (relayout). For
    # NCHW inputs Stax's own choice is eager's. (Channels-last inputs: lowering stores graph
    # outputs row-major and the bridge asks for eager's channels-last layout, as before.)
    regions = [r for g in report.graphs for r in g.regions]
    assert len(regions) == 1
    if layout == "contiguous":
        assert "_laid" not in regions[0].text and not regions[0].relayout, regions[0].text


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_small_resnet_training_step_matches_eager(dtype):
    m = model(dtype).train()
    x = torch.rand(2, 3, 24, 24, dtype=torch.float64).to(dtype)

    def loss(x):
        return m(x).float().square().mean()

    tol = ({"rtol": 2 ** -5, "atol": 2 ** -5} if dtype == torch.bfloat16
           else summation_tolerance(torch.float32, 32 * 9 * 288, 1.0))
    training_step_matches_eager(m, loss, x, **tol)
