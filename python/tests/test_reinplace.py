"""The scatters PyTorch runs between Stax regions are made in-place where nothing else can read
their destination (python/stax/reinplace.py), and only there: the embedding gradient of a
training step updates its zeros in place (no clone of a vocabulary-sized buffer), while a
destination that is a graph input, a graph output, another op's operand or a view keeps the
functional op, and every result matches eager's."""

import torch

import stax
from eager_comparison import assert_same, check_against_eager, summation_tolerance


def fallback_names(report):
    return {str(op) for op in report.fallback_ops}


def test_embedding_gradient_updates_its_zeros_in_place():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(50, 16)
    ids = torch.randint(0, 50, (4, 8), generator=torch.Generator().manual_seed(1))

    def loss(ids):
        return (embedding(ids) * 2).square().sum()

    report = stax.explain(loss, ids, backward=True)
    names = fallback_names(report)
    assert any(n.startswith("index_put_") for n in names), names
    assert not any(n.split(".")[0] == "index_put" for n in names), names

    embedding.zero_grad()
    loss(ids).backward()
    expected = embedding.weight.grad.clone()
    embedding.zero_grad()
    compiled = torch.compile(loss, backend="stax")
    compiled(ids).backward()
    # Each row sums the gradients of the (at most 32) positions holding its id.
    assert_same(embedding.weight.grad, expected, "grad",
                **summation_tolerance(torch.float32, 32, 4 * 64.0))


def _index_put_report(fn, *args):
    return fallback_names(stax.explain(fn, *args))


def test_a_destination_others_can_see_keeps_the_functional_scatter():
    idx = torch.tensor([0, 2, 2, 4])
    values = torch.arange(4 * 3, dtype=torch.float32).reshape(4, 3)
    x = torch.randn(6, 3)

    def into_input(x, idx, values):  # the caller's tensor must not change
        return torch.index_put(x, (idx,), values, accumulate=True) * 2

    def into_output(x, idx, values):  # the destination is returned as well
        z = x * 3
        return torch.index_put(z, (idx,), values, accumulate=True), z

    def into_operand(x, idx, values):  # the destination is read by another op
        z = x * 3
        return torch.index_put(z, (idx,), values, accumulate=True) + z.sum()

    def into_view(x, idx, values):  # the destination views a value that is returned
        z = x * 3
        return torch.index_put(z[1:], (idx,), values, accumulate=True), z

    for fn in (into_input, into_output, into_operand, into_view):
        names = _index_put_report(fn, x, idx, values)
        assert not any(n.startswith("index_put_") for n in names), (fn.__name__, names)
        check_against_eager(fn, (x, idx, values), "stax")


def test_a_computed_destination_read_by_the_scatter_alone_is_updated_in_place():
    idx = torch.tensor([0, 2, 2, 4])
    values = torch.arange(4 * 3, dtype=torch.float32).reshape(4, 3)
    x = torch.randn(6, 3)

    def fn(x, idx, values):
        z = torch.zeros_like(x) + x.exp()
        return torch.index_put(z, (idx,), values, accumulate=True) * 2

    names = _index_put_report(fn, x, idx, values)
    assert any(n.startswith("index_put_") for n in names), names
    check_against_eager(fn, (x, idx, values), "stax")
