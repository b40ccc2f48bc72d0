"""The scatters run in Stax (issue 15, point 4): torch.compile(backend="stax") of index_put
(with and without accumulate, a None before the tensor index, a 2-D index, negative indices,
broadcast values, several tensor indices broadcast together, as index.Tensor's gathers take
them), index_add (alpha), scatter (a tensor or a scalar src), scatter_add and
scatter_reduce (every reduction, with and without self),
against eager, over dtypes, non-contiguous operands, one and two threads, and sizes large
enough for the parallel split; an embedding's gradient (the index_put of every text model's
training graph) runs in Stax; out-of-range indices raise eager's exception class.

Tolerance: none. Stax visits each element's values in eager's order and rounds as eager's
kernels do (index_put and index_add round every addition to the dtype; scatter_add of 16-bit
values sums in float and rounds once), so results are eager's bit for bit.
"""

import pytest
import torch

import stax
from eager_comparison import assert_same, op_counts

EXACT = {"rtol": 0, "atol": 0, "equal_nan": True}
DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.int8]


def values(*sizes, dtype=torch.float32, seed=0):
    """Floats with fractions that round when summed in bfloat16, or integers that wrap int8."""
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(sizes, generator=g, dtype=torch.float64) * 4).to(dtype)
    return torch.randint(-100, 100, sizes, generator=g).to(dtype)


def indices(n, bound, seed=1, negative=False):
    g = torch.Generator().manual_seed(seed)
    low = -bound if negative else 0
    return torch.randint(low, bound, (n,), generator=g)


def eager_on_one_thread(fn, args):
    """Eager's float32 index_put with accumulate adds atomically from several threads on large
    inputs (an order that changes from run to run); on one thread it adds in index order,
    which is the order Stax always uses. Other scatters give the same result either way."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(threads)


def compiled_matches_eager(fn, args, threads=None):
    expected = eager_on_one_thread(fn, args)
    options = {} if threads is None else {"threads": threads}
    report = stax.explain(fn, *args)
    actual = torch.compile(fn, backend="stax", fullgraph=True, options=options)(*args)
    assert_same(actual, expected, **EXACT)
    return op_counts(report.stax_ops), op_counts(report.fallback_ops)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_eager(dtype, accumulate):
    # 600 rows of 96: several rows per thread; sums see 4000 positions, many per row. Writes
    # to one row twice are left to whichever thread comes last in eager (PyTorch leaves them
    # undefined), so they write distinct rows here (test_repeated_writes_keep_the_last).
    x = values(600, 96, dtype=dtype)
    if accumulate:
        i = indices(4000, 600, negative=True)
    else:
        i = torch.randperm(600, generator=torch.Generator().manual_seed(1))[:500] - 300
    v = values(len(i), 96, dtype=dtype, seed=2)

    def fn(x, i, v):
        return torch.index_put(x, (i,), v, accumulate=accumulate) * 1

    for threads in (1, 2):
        in_stax, fell_back = compiled_matches_eager(fn, (x, i, v), threads)
        assert in_stax.get("index_put") == 1 and not fell_back, (in_stax, fell_back)


def test_repeated_writes_keep_the_last():
    # Stax's writes land in index order, as eager's on one thread (its threads split the
    # positions, so with several the survivor depends on the split).
    x = values(60, 8)
    i = indices(400, 60, negative=True)
    v = values(400, 8, seed=2)

    def fn(x, i, v):
        return torch.index_put(x, (i,), v)

    expected = eager_on_one_thread(fn, (x, i, v))
    for n in (1, 2):
        actual = torch.compile(fn, backend="stax", options={"threads": n})(x, i, v)
        assert_same(actual, expected, **EXACT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_index_put_layouts_match_eager(dtype):
    x = values(8, 50, 6, dtype=dtype)
    i2 = torch.tensor([[0, 49, 3], [-1, 3, 3]])  # a 2-D index with repeats and a negative one

    def none_first(x, i2, v):  # x[:, i2] += v
        return torch.ops.aten.index_put(x, [None, i2], v, True)

    def broadcast(x, i2, row):  # one row of values for every indexed position
        return torch.ops.aten.index_put(x, [None, i2], row, True)

    def transposed(x, i2, v):  # self [50, 8, 6] and values [2, 3, 8, 6] read through strides
        return torch.ops.aten.index_put(x.transpose(0, 1), [i2], v.transpose(2, 3), True)

    v = values(8, 2, 3, 6, dtype=dtype, seed=3)
    compiled_matches_eager(none_first, (x, i2, v))
    compiled_matches_eager(broadcast, (x, i2, values(6, dtype=dtype, seed=4)))
    compiled_matches_eager(transposed, (x, i2, values(2, 3, 6, 8, dtype=dtype, seed=5)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_add_matches_eager(dtype):
    x = values(300, 40, dtype=dtype)
    s = values(40, 700, dtype=dtype, seed=2).t()  # a transposed source
    i = indices(700, 300)
    alpha = 3 if not dtype.is_floating_point else 0.5

    def fn(x, i, s):
        return torch.index_add(x, 0, i, s, alpha=alpha) * 1

    def along_dim1(x, i, s):
        return torch.index_add(x.t(), 1, i, s.t())

    compiled_matches_eager(fn, (x, i, s))
    compiled_matches_eager(along_dim1, (x, i, s), threads=2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter_and_scatter_add_match_eager(dtype):
    x = values(500, 64, dtype=dtype)
    src = values(500, 80, dtype=dtype, seed=2)
    g = torch.Generator().manual_seed(3)
    index = torch.randint(0, 64, (500, 48), generator=g)  # smaller than src in dim 1

    def scatter(x, index, src):
        return torch.scatter(x, 1, index, src)

    def scatter_value(x, index):
        return torch.scatter(x, 1, index, 2)

    def scatter_add(x, index, src):
        return torch.scatter_add(x, 1, index, src) * 1

    def scatter_add_dim0(x, index, src):  # repeats along the sequential dim
        return torch.scatter_add(x, 0, index % 40, src)

    for threads in (1, 2):
        compiled_matches_eager(scatter, (x, index, src), threads)
        compiled_matches_eager(scatter_value, (x, index), threads)
        compiled_matches_eager(scatter_add, (x, index, src), threads)
        compiled_matches_eager(scatter_add_dim0, (x, index, src), threads)


# The C++ tests run every dtype (scatter_torch_cases.inc); here a float, a 16-bit float (kept
# in float, rounded once) and an integer (a floored mean, wrapping products).
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_matches_eager(dtype, reduce):
    x = values(400, 64, dtype=dtype)
    if reduce == "prod" and dtype.is_floating_point:  # products of values near one
        src = (1 + values(400, 80, dtype=torch.float64, seed=2) / 64).to(dtype)
    else:
        src = values(400, 80, dtype=dtype, seed=2)
    g = torch.Generator().manual_seed(3)
    index = torch.randint(0, 48, (400, 72), generator=g)  # columns 48.. keep self's values

    for include_self in (True, False):
        def fn(x, index, src):
            return torch.scatter_reduce(x, 1, index, src, reduce, include_self=include_self)

        for threads in (1, 2):
            in_stax, fell_back = compiled_matches_eager(fn, (x, index, src), threads)
            assert in_stax.get("scatter_reduce") == 1 and not fell_back, (in_stax, fell_back)


def test_bfloat16_sums_round_as_eager():
    # 256 + 1 + 1 + 1 in bfloat16: index_put and index_add round each addition (256);
    # scatter_add sums in float and rounds once (260).
    v = torch.tensor([256.0, 1.0, 1.0, 1.0], dtype=torch.bfloat16)
    i = torch.zeros(4, dtype=torch.long)
    z = torch.zeros(1, dtype=torch.bfloat16)

    def sums(z, i, v):
        return (torch.index_put(z, (i,), v, accumulate=True), torch.index_add(z, 0, i, v),
                torch.scatter_add(z, 0, i, v))

    actual = torch.compile(sums, backend="stax")(z, i, v)
    assert [float(t) for t in actual] == [256.0, 256.0, 260.0]
    compiled_matches_eager(sums, (z, i, v))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_several_tensor_indices_match_eager(dtype):
    # x[i, j] (adjacent: the broadcast dims take their place), x[:, i, j], x[i, :, j]
    # (separated: the broadcast dims first), the same positions written and accumulated into,
    # and a transposed index; sizes large enough for the parallel split.
    x = values(40, 30, 200, dtype=dtype)
    i = indices(300, 40, seed=3, negative=True).reshape(300, 1)
    j = indices(7, 30, seed=4).to(torch.int32)
    k = indices(7 * 300, 200, seed=5).reshape(7, 300).t()
    v = values(300, 7, 200, dtype=dtype, seed=6)

    def gathers(x, i, j, k):
        return x[i, j] * 1, x[:, j.long(), k] * 1, x[i, :, k] * 1

    def scatters(x, i, j, k, v):
        return (torch.index_put(x, (i, j), v, accumulate=True),
                torch.index_put(x, (i, j.long(), k), v[:, :, 0], accumulate=True),
                torch.index_put(x, (i[:20], j[:1]), v[:20, :1]))  # distinct positions

    for threads in (1, 2):
        in_stax, fell_back = compiled_matches_eager(gathers, (x, i, j, k), threads)
        assert in_stax.get("index") == 3 and not fell_back, (in_stax, fell_back)
        in_stax, fell_back = compiled_matches_eager(scatters, (x, i, j, k, v), threads)
        assert in_stax.get("index_put") == 3 and not fell_back, (in_stax, fell_back)


def test_gradient_of_two_tensor_indices_runs_in_stax():
    # The gradient of x[i, j] is an index_put with accumulate over both indices.
    x = values(50, 40, 8).requires_grad_()
    i = indices(500, 50, seed=7, negative=True)
    j = indices(500, 40, seed=8)

    def loss(x, i, j):
        return (x[i, j] * 3).square().sum()

    report = stax.explain(loss, x, i, j, backward=True)
    assert not report.fallback_ops, report.fallback_ops
    assert op_counts(report.stax_ops).get("index_put", 0) == 1, report.stax_ops
    x.grad = None  # explain ran a backward
    torch.set_num_threads(1)  # eager's float32 accumulation order is its one-thread order
    try:
        loss(x, i, j).backward()
    finally:
        torch.set_num_threads(2)
    expected = x.grad.clone()
    x.grad = None
    torch.compile(loss, backend="stax")(x, i, j).backward()
    assert_same(x.grad, expected, "grad", **EXACT)


def test_embedding_gradient_runs_in_stax():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(1000, 64)
    ids = torch.randint(0, 1000, (8, 128), generator=torch.Generator().manual_seed(1))
    ids[0, :10] = 7  # a row that gathers many gradients

    def loss(ids):
        return (embedding(ids) * 2).square().sum()

    report = stax.explain(loss, ids, backward=True)
    assert not report.fallback_ops, report.fallback_ops
    assert op_counts(report.stax_ops).get("index_put", 0) == 1, report.stax_ops

    embedding.zero_grad()
    loss(ids).backward()
    expected = embedding.weight.grad.clone()
    embedding.zero_grad()
    torch.compile(loss, backend="stax")(ids).backward()
    assert_same(embedding.weight.grad, expected, "grad", **EXACT)


def test_out_of_range_indices_raise_as_eager():
    x = torch.zeros(4, 3)
    bad = torch.tensor([0, 4])
    ones = torch.ones(2, 3)
    cases = [
        (lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True), IndexError,
         "index 4 is out of bounds for dimension 0 with size 4"),
        (lambda x, i, v: torch.index_add(x, 0, i, v), RuntimeError,
         "index 4 is out of bounds for dimension 0 with size 4"),
        (lambda x, i, v: torch.scatter_add(x, 0, i.reshape(2, 1).expand(2, 3), v), RuntimeError,
         "index 4 is out of bounds for dimension 0 with size 4"),
        (lambda x, i, v: torch.index_put(x, (i * 0, i), v[:, 0]), IndexError,
         "index 4 is out of bounds for dimension 1 with size 3"),
        (lambda x, i, v: x[i * 0, i] * 1, IndexError,
         "index 4 is out of bounds for dimension 1 with size 3"),
    ]
    for fn, error, message in cases:
        with pytest.raises(error, match=message):
            fn(x, bad, ones)
        compiled = torch.compile(fn, backend="stax")
        compiled(x, torch.tensor([0, 2]), ones)  # compiles for these shapes
        with pytest.raises(error, match=message):
            compiled(x, bad, ones)
