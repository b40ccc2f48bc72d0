"""16-bit results rounded where eager's kernel rounds them (issue 32, point 4): the inputs on
which addr, addcdiv and soft_margin_loss differed from eager in float16's OpInfo samples,
reduced to single elements. Each test first checks that its input tells the two rounding
orders apart (else it would pass whichever order the backend took), then that the compiled
result is bitwise eager's.

* addr: eager's kernel rounds alpha * vec1, the product with vec2, beta * self and the sum to
  the 16-bit dtype; a float32 computation rounded once differs by an ulp
  (half_decompositions._addr).
* addcdiv(..., value=v): Dynamo traces it as div, mul and add, which round after each op;
  eager's kernel computes self + v * t1 / t2 in float32 and rounds once
  (dynamo_rewrites.restore_addcdiv). The same three ops written by the user keep their
  roundings.
* soft_margin_loss: eager computes exp(-input * target) in float16, which overflows to inf
  where a float32 computation gives a finite loss (half_decompositions._soft_margin_loss).
"""

import pytest
import torch

f16, bf16 = torch.float16, torch.bfloat16


def _compiled_equals_eager(fn, *args, backend):
    expected = fn(*[a.clone() for a in args])
    actual = torch.compile(fn, backend=backend, dynamic=False)(*[a.clone() for a in args])
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual.isnan(), expected.isnan()), f"{actual} != eager's {expected}"
    assert torch.equal(actual.nan_to_num(), expected.nan_to_num()), (
        f"{actual} != eager's {expected}")
    return expected


def test_addr_rounds_each_step(backend):
    self, vec1, vec2 = (torch.tensor(v, dtype=f16) for v in ([[3.0]], [1.1], [1.7]))
    once = (self.float() + vec1.float()[:, None] * vec2.float()).half()
    expected = _compiled_equals_eager(torch.addr, self, vec1, vec2, backend=backend)
    assert expected.item() == 4.8671875 and once.item() == 4.87109375


@pytest.mark.parametrize("dtype", [f16, bf16])
def test_addr_with_beta_and_alpha(dtype, backend):
    torch.manual_seed(0)
    self, vec1, vec2 = torch.randn(16, 24), torch.randn(16), torch.randn(24)
    self, vec1, vec2 = self.to(dtype), vec1.to(dtype), vec2.to(dtype)

    def fn(s, a, b):
        return torch.addr(s, a, b, beta=0.6, alpha=0.2)

    expected = _compiled_equals_eager(fn, self, vec1, vec2, backend=backend)
    once = (0.6 * self.float() + 0.2 * vec1.float()[:, None] * vec2.float()).to(dtype)
    assert not torch.equal(expected, once)


def test_addr_beta_zero_ignores_self(backend):
    self = torch.full((2, 3), float("nan"), dtype=f16)
    vec1, vec2 = torch.tensor([1.1, -2.0], dtype=f16), torch.tensor([1.7, 0.5, 3.0], dtype=f16)

    def fn(s, a, b):
        return torch.addr(s, a, b, beta=0, alpha=0.2)

    expected = _compiled_equals_eager(fn, self, vec1, vec2, backend=backend)
    assert not expected.isnan().any()


@pytest.mark.parametrize("dtype,values,eager", [
    (f16, (1.0, 2.3, 1.1), 7.5703125),
    (bf16, (1.0, 2.3, 1.1), 7.5625),
])
def test_addcdiv_with_value_rounds_once(dtype, values, eager, backend):
    s, t1, t2 = (torch.tensor([v], dtype=dtype) for v in values)
    steps = s + (t1 / t2) * 3.14  # what Dynamo's div, mul and add compute

    def fn(s, t1, t2):
        return torch.addcdiv(s, t1, t2, value=3.14)

    expected = _compiled_equals_eager(fn, s, t1, t2, backend=backend)
    assert expected.item() == eager and steps.item() != eager


def test_written_div_mul_add_keeps_its_roundings(backend):
    s, t1, t2 = (torch.tensor([v], dtype=f16) for v in (1.0, 2.3, 1.1))

    def operators(s, t1, t2):
        return s + (t1 / t2) * 3.14

    def functions(s, t1, t2):
        return torch.add(s, torch.mul(torch.div(t1, t2), 3.14))

    for fn in (operators, functions):
        torch._dynamo.reset()
        expected = _compiled_equals_eager(fn, s, t1, t2, backend=backend)
        assert expected.item() == 7.56640625  # not addcdiv's 7.5703125


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_soft_margin_loss_overflows_as_eager(reduction, backend):
    # -input * target = 12: exp(12) = 162755 is past float16's 65504.
    x, target = torch.tensor([-6.0, 1.0], dtype=f16), torch.tensor([2.0, 1.0], dtype=f16)

    def fn(x, target):
        return torch.nn.functional.soft_margin_loss(x, target, reduction=reduction)

    expected = _compiled_equals_eager(fn, x, target, backend=backend)
    assert expected.isinf().any()
    finite = torch.nn.functional.soft_margin_loss(x.float(), target.float(), reduction=reduction)
    assert finite.isfinite().all()
