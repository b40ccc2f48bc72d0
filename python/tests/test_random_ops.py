"""rand and rand_like computed in Stax's kernels (python/stax/random_ops.py): uniform on the
dtype's grid of [0, 1), new numbers on every call, repeatable under torch.manual_seed, laid
out as eager lays out rand_like's result, and a dropout whose forward and backward see one
mask, with the graph around it one Stax region (only the per-call seed is PyTorch's).

The numbers differ from eager's (as the default backend's do): the statistical checks bound
what any uniform generator gives at these sizes, at about five standard deviations."""

import math

import pytest
import torch

import stax


def compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="stax")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_uniform_on_the_dtype_grid(dtype):
    n = 1 << 20
    rand_like = compiled(lambda t: torch.rand_like(t))
    u = rand_like(torch.empty(n, dtype=dtype))
    assert u.dtype == dtype and u.shape == (n,)
    v = u.double()
    assert v.min() >= 0 and v.max() < 1
    bits = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}[dtype]
    scaled = v * 2.0**bits
    assert torch.equal(scaled, scaled.floor()), "values off the dtype's grid of [0, 1)"
    # Mean 1/2 and variance 1/12 (of the grid's uniform: 1/12 - 2**-2bits / 12).
    sigma_mean = math.sqrt(1 / 12 / n)
    assert abs(v.mean().item() - (0.5 - 2.0**-(bits + 1))) < 5 * sigma_mean
    assert abs(v.var().item() - (1 - 4.0**-bits) / 12) < 5 * math.sqrt(1 / 180 / n)
    # Every grid cell of the coarse dtypes is reached, about equally often.
    if bits <= 11:
        counts = torch.bincount(scaled.long(), minlength=1 << bits).double()
        expected = n / (1 << bits)
        assert counts.min() > 0
        assert (counts - expected).abs().max() < 6 * math.sqrt(expected)


def test_new_numbers_each_call_repeatable_under_manual_seed():
    rand_like = compiled(lambda t: torch.rand_like(t))
    x = torch.empty(4096)
    a, b = rand_like(x), rand_like(x)
    assert (a == b).float().mean() < 0.01
    torch.manual_seed(7)
    c = rand_like(x)
    torch.manual_seed(7)
    d = rand_like(x)
    assert torch.equal(c, d)
    # Two draws in one graph are independent (correlation within 5 sigma of 0).
    both = compiled(lambda t: (torch.rand_like(t), torch.rand_like(t)))
    p, q = both(torch.empty(1 << 16))
    corr = torch.corrcoef(torch.stack([p, q]))[0, 1].item()
    assert abs(corr) < 5 / math.sqrt(1 << 16)


def test_layout_and_factory_forms_follow_eager():
    transposed = compiled(lambda t: torch.rand_like(t.t()))
    x = torch.empty(3, 5)
    assert transposed(x).stride() == torch.rand_like(x.t()).stride()
    contiguous = compiled(lambda t: torch.rand_like(t.t(), memory_format=torch.contiguous_format))
    assert contiguous(x).stride() == (3, 1)
    rand = compiled(lambda: torch.rand(4, 6, dtype=torch.bfloat16))
    r = rand()
    assert r.dtype == torch.bfloat16 and r.shape == (4, 6)


def test_integer_rand_like_is_refused_as_eager_refuses_it():
    x = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(RuntimeError) as eager:
        torch.rand_like(x)
    with pytest.raises(Exception) as ours:
        compiled(lambda t: torch.rand_like(t))(x)
    assert str(eager.value).splitlines()[0] in str(ours.value)


def test_dropout_sees_one_mask_and_stays_in_one_region():
    torch.manual_seed(0)
    p = 0.25
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Dropout(p)).train()
    x = torch.randn(512, 64, requires_grad=True)

    def loss(x):
        return model(x).sum()

    report = stax.explain(loss, x, backward=True)
    assert set(map(str, report.fallback_ops)) == {"randint.low"}, report.fallback_ops
    for g in report.graphs:
        assert len(g.regions) == 1, g

    x.grad = None  # explain ran a backward too
    step = compiled(lambda x: model(x))
    y = step(x)
    y.sum().backward()
    kept = y != 0
    # About 1 - p of the elements are kept (binomial, 5 sigma), scaled by 1 / (1 - p).
    n = kept.numel()
    assert abs(kept.float().mean().item() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    # The backward uses the forward's mask: d(sum y)/d(h) is 1 / (1 - p) exactly where kept.
    h = model[0](x).detach().requires_grad_(True)
    torch.testing.assert_close(y, torch.where(kept, h / (1 - p), torch.zeros_like(h)))
    expected_grad = torch.where(kept, 1 / (1 - p), 0.0) @ model[0].weight
    torch.testing.assert_close(x.grad, expected_grad)


def test_dropout_over_symbolic_sizes_is_one_program_per_graph(capfd):
    """Issue 33: a dropout in a graph with symbolic sizes (dynamic=True) stays in Stax: the
    regions that draw its numbers read the sizes Dynamo passes as ints (each given to the
    program as a stand-in input of that size), so the forward and the backward are one program
    each for every batch size, none traced again or left to PyTorch; at each size the mask
    keeps about 1 - p of the elements and the backward sees the forward's mask."""
    torch.manual_seed(0)
    p = 0.25
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Dropout(p)).train()
    torch._dynamo.reset()
    step = torch.compile(lambda x: model(x), backend="stax", dynamic=True,
                         options={"logs": ["recompiles", "fallback"]})
    for n in (512, 300, 777):
        x = torch.randn(n, 64, requires_grad=True)
        y = step(x)
        y.sum().backward()
        kept = y != 0
        count = kept.numel()
        assert abs(kept.float().mean().item() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / count)
        h = model[0](x).detach()
        torch.testing.assert_close(y, torch.where(kept, h / (1 - p), torch.zeros_like(h)))
        expected_grad = torch.where(kept, 1 / (1 - p), 0.0) @ model[0].weight
        torch.testing.assert_close(x.grad, expected_grad)
    torch._dynamo.reset()
    err = capfd.readouterr().err
    assert "compiled for sizes" not in err, err
    assert "traced again" not in err, err
    assert "runs in PyTorch" not in err and "run in PyTorch" not in err, err
    assert err.count("one program for every size") >= 2, err
