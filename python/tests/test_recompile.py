"""Inputs a compiled function did not see when it was compiled: a changed shape recompiles (or
runs a dynamic-shape graph) and is still right; inputs with other strides, a storage offset or
stride 0 are read correctly; a graph with a dtype Stax does not support (complex) falls back
to PyTorch whole and is still right."""

import pytest
import torch

from eager_comparison import FALLBACK_FRACTIONS, assert_same, compile_counted, op_counts
from input_layouts import random_values


def normalize_rows(x):
    return (x * 2).softmax(-1) + x.sum(0) - x.amax(-1, keepdim=True)


@pytest.mark.parametrize("dynamic", (None, False), ids=("automatic_dynamic", "static"))
def test_changed_shape_recompiles_and_is_right(backend, dynamic):
    # With dynamic=None dynamo compiles the second shape as a graph with symbolic sizes and
    # reuses it for the third; with dynamic=False every shape is a graph of its own.
    compiled, counter = compile_counted(normalize_rows, backend, dynamic=dynamic)
    for shape in ((8, 16), (5, 7), (3, 9), (8, 16), (1, 1)):
        x = random_values(shape, torch.float32, -2, 2)
        assert_same(compiled(x), normalize_rows(x), f"shape {shape}")
    assert counter.graphs >= 2


def test_unexpected_strides_are_read_correctly(backend):
    compiled, counter = compile_counted(normalize_rows, backend)
    base = random_values((12, 14), torch.float32, -2, 2)
    contiguous = base[:6, :6].contiguous()
    assert_same(compiled(contiguous), normalize_rows(contiguous), "contiguous")
    later = {
        # Same sizes and strides, another storage offset: dynamo does not guard on offsets,
        # so the graph compiled for offset 0 must honour the offset at run time.
        "storage offset": base.view(-1)[30:66].view(6, 6),
        "transposed": contiguous.t(),
        "sliced with step": base[1::2, 2::2][:, :6],
        "stride 0": base[0, :6].expand(6, 6),
        "contiguous again": contiguous * 3,
    }
    for name, x in later.items():
        assert_same(compiled(x), normalize_rows(x), name)
    assert counter.graphs >= 2


def complex_graph(z, w):
    return (z * w + z.conj()).abs() + torch.view_as_real(z * 2).sum(-1), (z * 1j).exp()


def test_complex_graph_falls_back_whole(backend, is_stax):
    z = torch.randn(4, 5, dtype=torch.complex64)
    w = torch.randn(4, 5, dtype=torch.complex64)
    compiled, counter = compile_counted(complex_graph, backend)
    assert_same(compiled(z, w), complex_graph(z, w))
    assert counter.graphs >= 1
    if is_stax:
        import stax

        report = stax.explain(complex_graph, z, w)
        FALLBACK_FRACTIONS["complex64 graph"] = (float(report.fallback_fraction), op_counts(report.fallback_ops))
        assert not op_counts(report.stax_ops), f"parts of a complex graph ran in Stax:\n{report}"
        assert report.fallback_fraction == 1.0, str(report)


def test_strides_of_size_one_dimensions_share_a_variant(is_stax):
    """A region called with a layout that differs from the compiled one only in the stride of
    a dimension of size 1 (which Stax's wrapper does not check: it never steps along one)
    runs the compiled variant, without compiling another."""
    if not is_stax:
        return
    import stax

    x = random_values((4, 1, 6), torch.float32, -2, 2)
    report = stax.explain(lambda t: (t * 2).exp(), x)
    (region,) = report.graphs[0].regions
    other = torch.empty_strided((4, 1, 6), (6, 1, 1)).copy_(x)
    assert other.stride() != x.stride()
    (out,) = region(other)
    assert_same(out, (x * 2).exp())
    assert len(region._variants) == 1, "a variant was compiled for a size-1 stride"


def test_shapes_past_the_recompile_limit_run_in_pytorch(is_stax, monkeypatch, capfd):
    """A graph with symbolic sizes is compiled per concrete shape (until symbolic programs,
    issue 33) at most torch._dynamo.config.recompile_limit times; later shapes run in PyTorch
    with one warning and stay right, and each compile and refusal is logged under
    "recompiles"."""
    if not is_stax:
        return
    import stax.backend

    compiles = []
    real_aot = stax.backend._aot

    def counted_aot(*args, **kwargs):
        compiles.append(1)
        return real_aot(*args, **kwargs)

    monkeypatch.setattr(stax.backend, "_aot", counted_aot)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=2):
        compiled = torch.compile(normalize_rows, backend="stax", dynamic=True,
                                 options={"logs": ["recompiles"]})
        with pytest.warns(UserWarning, match="recompile_limit") as warned:
            for shape in ((8, 16), (5, 7), (3, 9), (4, 4), (3, 9), (8, 16)):
                x = random_values(shape, torch.float32, -2, 2)
                assert_same(compiled(x), normalize_rows(x), f"shape {shape}")
    torch._dynamo.reset()
    assert len(compiles) == 2, "a shape past the limit was compiled, or a compiled one again"
    assert len([w for w in warned if "recompile_limit" in str(w.message)]) == 1
    err = capfd.readouterr().err
    assert err.count("compiled for shapes") == 2, err
    assert err.count("run in PyTorch") == 2, err  # (3, 9) and (4, 4), each logged once
    # Dynamo passes the symbolic sizes as ints ahead of the tensor: "(8, 16, [8, 16])".
    assert "[8, 16])" in err and "[4, 4])" in err, err
