"""pow by the exponents eager PyTorch's CPU kernels treat specially, through torch.compile vs
eager: a Python-number exponent (pow.Tensor_Scalar: 0.5, -0.5 and -1 are eager's sqrt, rsqrt
and reciprocal, 2, 3 and -2 products, except in float16) and the same exponent as a tensor
(pow.Tensor_Tensor: elementwise pow, whatever the values), over +-0, +-inf, NaN, negatives and
a subnormal, in every floating dtype; integer dtypes with the exponents they accept. Special
values must match exactly: torch.pow(-inf, 0.5) is NaN but torch.pow(-inf, full_like(x, 0.5))
is inf, and the sign of a zero result counts."""

import math

import pytest
import torch

EXPONENTS = [0.5, -0.5, 2, 3, -1, -2, 1, 0, 1 / 3]
SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, -2.0, -0.5, 2.0, 1e-40, -1.0, 1.0, 3.0]


def pows(x, exponents):
    out = []
    for e in exponents:
        out.append(torch.pow(x, e))
        out.append(torch.pow(x, torch.full_like(x, e)))
    return out


def assert_same_specials(got, expected, where):
    torch.testing.assert_close(got, expected, equal_nan=True, msg=where)
    special = expected.isinf() | expected.isnan() | (expected == 0)
    g, e = got[special].double(), expected[special].double()
    assert torch.equal(g.isnan(), e.isnan()), f"{where}: NaN at {got} vs eager {expected}"
    finite = ~e.isnan()
    assert torch.equal(g[finite], e[finite]), f"{where}: {got} vs eager {expected}"
    assert torch.equal(g[finite].signbit(), e[finite].signbit()), f"{where}: sign of zero"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16],
                         ids=str)
def test_pow_special_exponents_at_special_values(backend, dtype):
    # Three copies: vector bodies and tails.
    x = torch.tensor(SPECIAL * 3, dtype=dtype)
    compiled = torch.compile(lambda x: pows(x, EXPONENTS), backend=backend)
    got, expected = compiled(x), pows(x, EXPONENTS)
    for k, (g, e) in enumerate(zip(got, expected)):
        form = "as a tensor" if k % 2 else "as a number"
        assert_same_specials(g, e, f"pow(x, {EXPONENTS[k // 2]} {form}) in {dtype}")


def test_pow_of_negative_infinity_by_a_tensor_of_halves_is_infinity(backend):
    # The case: eager gives inf (elementwise pow), not sqrt's NaN.
    x = torch.tensor([-math.inf, -0.0, 4.0])
    fn = torch.compile(lambda x: torch.pow(x, torch.full_like(x, 0.5)), backend=backend)
    assert_same_specials(fn(x), torch.tensor([math.inf, 0.0, 2.0]), "pow(x, full_like(x, 0.5))")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=str)
def test_pow_integer_exponents(backend, dtype):
    values = [0, 1, 2, 3, 5, 255] if dtype == torch.uint8 else [0, 1, 2, 3, -1, -2, 5, 3037000499]
    x = torch.tensor(values * 3).to(dtype)
    compiled = torch.compile(lambda x: pows(x, [2, 3, 1, 0]), backend=backend)
    for k, (g, e) in enumerate(zip(compiled(x), pows(x, [2, 3, 1, 0]))):
        torch.testing.assert_close(g, e, rtol=0, atol=0, msg=f"output {k} in {dtype}")
