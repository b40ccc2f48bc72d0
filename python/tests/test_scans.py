"""The scans run in Stax (issue 16, point 7): torch.compile(backend="stax") of cumsum, cumprod,
logcumsumexp, cummax and cummin against eager, over dtypes, every dim, transposed and sliced
inputs, one and two threads; integer cumsum returns int64 as eager does; a float32 cumsum
over 10^7 elements, which Stax splits by associativity, stays within one float32 ulp of
eager's sequential double sum; the gradients of a loss built on every scan run in Stax.

Tolerance: none where no line is split (Stax walks each line in eager's order in eager's
accumulation type: double for float32, float for the 16-bit floats, int64 for integers). A
split line re-associates double (float32) sums only at block boundaries, so an element can
differ from eager's by the rounding to float32 alone: one ulp.
"""

import pytest
import torch

import stax
from eager_comparison import assert_same, op_counts, summation_tolerance

EXACT = {"rtol": 0, "atol": 0, "equal_nan": True}
SCANS = {
    "cumsum": lambda x, d: torch.cumsum(x, d),
    "cumprod": lambda x, d: torch.cumprod(x, d),
    "logcumsumexp": lambda x, d: torch.logcumsumexp(x, d),
    "cummax": lambda x, d: tuple(torch.cummax(x, d)),
    "cummin": lambda x, d: tuple(torch.cummin(x, d)),
}


def values(*sizes, dtype, seed=0):
    """Floats whose products stay finite over a few hundred factors, with repeats (ties for
    the extrema); small integers whose products wrap."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randint(-12, 13, sizes, generator=g) / 8 + 0.5).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, sizes, generator=g).bool()
    return torch.randint(-9, 10, sizes, generator=g).to(dtype)


def layouts(x):
    yield "contiguous", x
    yield "transposed", x.t().contiguous().t()
    yield "sliced", torch.cat([x, x], 1)[:, ::2]


FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTEGERS = [torch.int64, torch.int32, torch.int8, torch.uint8]
# Every dtype eager takes for each scan: logcumsumexp only floats (test_refusals_match_eager
# checks the rest), cumsum and cumprod no bool dtype but bool inputs (widened to int64).
CASES = [(op, dtype) for op in SCANS for dtype in FLOATS + INTEGERS + [torch.bool]
         if op != "logcumsumexp" or dtype in FLOATS]


@pytest.mark.parametrize("op,dtype", CASES, ids=str)
def test_scan_matches_eager(op, dtype):
    scan = SCANS[op]
    for name, x in layouts(values(70, 33, dtype=dtype)):

        def fn(x):
            return tuple(scan(x, d) for d in (0, 1, -1))

        expected = fn(x)
        report = stax.explain(fn, x)
        assert op_counts(report.stax_ops).get(op) == 3 and not report.fallback_ops, report
        for threads in (1, 2):
            actual = torch.compile(fn, backend="stax", fullgraph=True,
                                   options={"threads": threads})(x)
            assert_same(actual, expected, f"{op} {name} {threads} threads", **EXACT)
        torch._dynamo.reset()


def test_integer_cumsum_returns_int64_and_dtype_converts_first():
    i = torch.randint(-100, 100, (50, 40), dtype=torch.int8)
    x = torch.randn(50, 40) * 50

    def fn(i, x):
        return torch.cumsum(i, 0), torch.cumprod(i, 1), torch.cumsum(x, 1, dtype=torch.int32), \
            torch.cumsum(i, 0, dtype=torch.int8)

    actual = torch.compile(fn, backend="stax", fullgraph=True)(i, x)
    expected = fn(i, x)
    assert actual[0].dtype == torch.int64 and actual[1].dtype == torch.int64
    assert_same(actual, expected, **EXACT)


def test_long_float32_cumsum_within_one_ulp_of_eager():
    # 10^7 elements in one line: Stax splits it into blocks (reduce, scan the totals, rescan);
    # eager sums sequentially in double. Both round a double to float32 per element.
    x = torch.randn(10**7, generator=torch.Generator().manual_seed(3))
    fn = torch.compile(lambda x: torch.cumsum(x, 0), backend="stax", fullgraph=True,
                       options={"threads": 2})
    actual = fn(x)
    expected = torch.cumsum(x, 0)
    ulp = torch.nextafter(expected.abs(), torch.tensor(float("inf"))) - expected.abs()
    excess = ((actual - expected).abs() - ulp).max().item()
    assert excess <= 0, f"an element differs from eager's by more than one ulp ({excess})"
    # Most elements are equal: the re-association moves only near-ties of the rounding.
    assert (actual == expected).float().mean().item() > 0.99


def test_refusals_match_eager():
    with pytest.raises(Exception, match="not implemented for"):
        torch.compile(lambda x: torch.logcumsumexp(x, 0), backend="stax", fullgraph=True)(
            torch.arange(5))


def test_scan_gradients_run_in_stax():
    x = torch.randn(24, 40, requires_grad=True)

    def loss(x):
        return (torch.cumsum(x, 1) * torch.cumprod(x.tanh(), 0)).sum() \
            + torch.logcumsumexp(x, 1).sum() + torch.cummax(x, 0)[0].sum() \
            + torch.cummin(x, 1)[0].sum()

    report = stax.explain(loss, x, backward=True)
    assert not report.fallback_ops, report.fallback_ops
    x.grad = None
    loss(x).backward()
    expected = x.grad.clone()
    x.grad = None
    torch.compile(loss, backend="stax")(x).backward()
    # Each gradient element sums up to 40 terms per scan (cumsum's backward is a reversed
    # cumsum), of size at most the largest product of tanh values (< 1) times the 40-term
    # cumsum: at most 40.
    torch.testing.assert_close(x.grad, expected, **summation_tolerance(torch.float32, 40, 40.0))
