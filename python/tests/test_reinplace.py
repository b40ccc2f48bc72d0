"""The scatters PyTorch runs between Stax regions are made in-place where nothing else can read
their destination (python/stax/reinplace.py), and only there. Stax runs index_put with integer
tensor indices itself (test_scatters.py); an index_put with a boolean mask (x[mask] += v)
still runs in PyTorch, and it is updated in place where its destination is a computed value
read by nothing else, while a destination that is a graph input, a graph output, another op's
operand or a view keeps the functional op, and every result matches eager's."""

import torch

import stax
from eager_comparison import check_against_eager


def fallback_names(report):
    return {str(op) for op in report.fallback_ops}


def _index_put_report(fn, *args):
    return fallback_names(stax.explain(fn, *args))


# x[mask] += values: a boolean mask, which Stax leaves to PyTorch (its rows are data).
MASK = torch.tensor([True, False, True, True, False, True])


def test_a_destination_others_can_see_keeps_the_functional_scatter():
    values = torch.arange(3, dtype=torch.float32)
    x = torch.randn(6, 3)

    def into_input(x, mask, values):  # the caller's tensor must not change
        return torch.index_put(x, (mask,), values, accumulate=True) * 2

    def into_output(x, mask, values):  # the destination is returned as well
        z = x * 3
        return torch.index_put(z, (mask,), values, accumulate=True), z

    def into_operand(x, mask, values):  # the destination is read by another op
        z = x * 3
        return torch.index_put(z, (mask,), values, accumulate=True) + z.sum()

    def into_view(x, mask, values):  # the destination views a value that is returned
        z = x * 3
        return torch.index_put(z[:, 1:], (mask,), values[1:], accumulate=True), z

    for fn in (into_input, into_output, into_operand, into_view):
        names = _index_put_report(fn, x, MASK, values)
        assert any(n.startswith("index_put") for n in names), (fn.__name__, names)
        assert not any(n.startswith("index_put_") for n in names), (fn.__name__, names)
        check_against_eager(fn, (x, MASK, values), "stax")


def test_a_computed_destination_read_by_the_scatter_alone_is_updated_in_place():
    values = torch.arange(3, dtype=torch.float32)
    x = torch.randn(6, 3)

    def fn(x, mask, values):
        z = torch.zeros_like(x) + x.exp()
        return torch.index_put(z, (mask,), values, accumulate=True) * 2

    names = _index_put_report(fn, x, MASK, values)
    assert any(n.startswith("index_put_") for n in names), names
    check_against_eager(fn, (x, MASK, values), "stax")
