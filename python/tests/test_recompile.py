"""Inputs a compiled function did not see when it was compiled: a changed shape recompiles (or
runs a dynamic-shape graph) and is still right; inputs with other strides, a storage offset or
stride 0 are read correctly; a graph with a dtype Stax does not support (complex) falls back
to PyTorch whole and is still right."""

import pytest
import torch

from eager_comparison import (FALLBACK_FRACTIONS, assert_same, compile_counted, counted_compiles,
                              op_counts, training_at_lengths_matches_eager)
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


def powered(x):
    """x to the power of its batch size: the exponent is a size symbol, which pow's lowering
    would read at the hints, so Stax compiles it per size."""
    return (x ** x.shape[0]).tanh()


def test_one_program_runs_every_size_past_the_recompile_limit(is_stax, capfd, monkeypatch):
    """A graph with symbolic sizes whose ops Stax takes symbolically compiles to one program
    (issue 33): sizes past torch._dynamo.config.recompile_limit run it too, right, with no
    warning, no recompile and no fallback; Stax compiles once."""
    if not is_stax:
        return
    import re
    import warnings

    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=2), warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = torch.compile(normalize_rows, backend="stax", dynamic=True,
                                 options={"logs": ["recompiles", "fallback"]})
        compiles = counted_compiles(monkeypatch)
        for shape in ((8, 16), (5, 7), (3, 9), (4, 4), (3, 9), (300, 70), (8, 16)):
            x = random_values(shape, torch.float32, -2, 2)
            # x.sum(0) adds shape[0] rows, in another order than eager's: float32's rounding
            # per addition, times the terms.
            assert_same(compiled(x), normalize_rows(x), f"shape {shape}",
                        rtol=max(shape[0] * 2.0**-24, 1.3e-6), atol=1e-5)
        # dynamic=True: one symbolic graph from the first call, one program for every shape.
        assert len(compiles) == 1, compiles
    torch._dynamo.reset()
    err = capfd.readouterr().err
    assert len(re.findall(r"^stax: \S+: one program for every size", err, re.M)) == 1, err
    assert "compiled for sizes" not in err and "run in PyTorch" not in err, err


def test_sizes_past_the_recompile_limit_run_in_pytorch(is_stax, capfd):
    """A graph with symbolic sizes is traced and translated once (issue 33); a region Stax
    compiles per size (pow by a size: its lowering takes no symbolic exponent) is compiled at
    most torch._dynamo.config.recompile_limit times; later sizes run in PyTorch with one
    warning and stay right, and each compile and refusal is logged under "recompiles"."""
    if not is_stax:
        return
    import re

    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=2):
        compiled = torch.compile(powered, backend="stax", options={"logs": ["recompiles"]})
        with pytest.warns(UserWarning, match="recompile_limit") as warned:
            for n, length in ((8, 16), (5, 7), (3, 9), (4, 4), (3, 9), (8, 16)):
                x = random_values((n, 3, length), torch.float32, -2, 2)
                # The batch and the length symbolic, the weights static.
                torch._dynamo.mark_dynamic(x, 0)
                torch._dynamo.mark_dynamic(x, 2)
                assert_same(compiled(x), powered(x), f"shape {x.shape}", rtol=1e-5,
                            atol=1e-6)
    torch._dynamo.reset()
    assert len([w for w in warned if "recompile_limit" in str(w.message)]) == 1
    err = capfd.readouterr().err
    # (8, 16), the sizes it was traced with, and (5, 7); (8, 16) again reuses its program.
    assert "compiled per size: " in err, err
    compiled_sizes = re.findall(r"compiled for sizes (s\d+=\d+, s\d+=\d+)", err)
    assert len(compiled_sizes) == 2, err
    assert sorted(int(v) for v in re.findall(r"=(\d+)", compiled_sizes[0])) == [8, 16], err
    assert err.count("run in PyTorch") == 2, err  # (3, 9) and (4, 4), each logged once
    assert re.search(r"sizes s\d+=4, s\d+=4 run in PyTorch", err), err


def counted_traces(monkeypatch) -> list:
    """A list that gets one entry per AOTAutograd trace Stax's backend makes from now on."""
    import stax.backend

    traces = []
    real_aot = stax.backend._aot

    def counted_aot(*args, **kwargs):
        traces.append(1)
        return real_aot(*args, **kwargs)

    monkeypatch.setattr(stax.backend, "_aot", counted_aot)
    return traces


def test_a_symbolic_graph_is_traced_once(is_stax, monkeypatch):
    """Sizes that change go through one AOTAutograd trace of the symbolic graph: a new size
    costs a bind and a compile of each region, never a trace."""
    if not is_stax:
        return
    traces = counted_traces(monkeypatch)
    torch._dynamo.reset()
    compiled = torch.compile(normalize_rows, backend="stax", dynamic=True)
    for shape in ((8, 16), (5, 7), (3, 9), (6, 33)):
        x = random_values(shape, torch.float32, -2, 2)
        assert_same(compiled(x), normalize_rows(x), f"shape {shape}")
    torch._dynamo.reset()
    assert len(traces) == 1


def test_training_at_changing_lengths_is_right_and_traced_once_per_graph(is_stax, monkeypatch):
    """A tiny GPT-2's training step at four sequence lengths: Dynamo hands a static graph, then
    a symbolic one (automatic dynamic); Stax traces each once (and compiles the symbolic
    graph's forward and backward once each, test_symbolic_program.py). Loss and gradients
    match eager's at every length."""
    if not is_stax:
        return
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from test_one_program import VOCAB, gpt2

    traces = counted_traces(monkeypatch)
    training_at_lengths_matches_eager(gpt2, lambda out: out.logits, {}, (8, 11, 13, 9), VOCAB)
    assert len(traces) == 2, "a static graph and one symbolic graph"


def test_mark_dynamic_gives_one_symbolic_graph_for_every_size(backend, is_stax, capfd):
    """torch._dynamo.mark_dynamic(x, 0): Dynamo hands one graph whose rows are a symbol from
    the first call, and every later row count runs it (with Stax, one program compiled once,
    logged); a changed column count, not marked, is a new graph."""
    torch._dynamo.reset()
    options = {"options": {"logs": ["recompiles"]}} if is_stax else {}
    if is_stax:
        compiled = torch.compile(normalize_rows, backend="stax", **options)
        counter = None
    else:
        compiled, counter = compile_counted(normalize_rows, backend)
    for rows in (6, 9, 4, 6):
        x = random_values((rows, 10), torch.float32, -2, 2)
        torch._dynamo.mark_dynamic(x, 0)
        assert_same(compiled(x), normalize_rows(x), f"{rows} rows")
    if counter is not None:
        assert counter.graphs == 1
    if is_stax:
        err = capfd.readouterr().err
        # One region, one program for 6, 9 and 4 rows; the columns stay a constant.
        assert err.count("one program for every size") == 1, err
        assert "compiled for sizes" not in err, err
        assert "=10" not in err, err
    torch._dynamo.reset()


def test_images_of_several_sizes_run_one_symbolic_graph(is_stax, capfd):
    """A convolution, pooling and normalization block at three image sizes, height and width
    marked dynamic: one symbolic graph, whose region is one Stax program for every size (the
    convolutions' and poolings' floor divisions are Stax's symbolic rules); right at each."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, stride=2, padding=1), torch.nn.Conv2d(8, 4, 1),
        torch.nn.AdaptiveAvgPool2d(1)).eval()
    torch._dynamo.reset()
    if is_stax:
        compiled = torch.compile(net, backend="stax", options={"logs": ["recompiles"]})
    else:
        compiled = torch.compile(net)
    with torch.no_grad():
        for size in (20, 27, 33):
            x = torch.randn(2, 3, size, size + 4)
            torch._dynamo.mark_dynamic(x, 2)
            torch._dynamo.mark_dynamic(x, 3)
            assert_same(compiled(x), net(x), f"{size}x{size + 4}", rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    if is_stax:
        err = capfd.readouterr().err
        assert err.count("one program for every size") == 1, err
        assert "compiled for sizes" not in err, err
        assert "traced again" not in err, err


def test_explain_shows_a_symbolic_region_and_its_compiled_sizes(is_stax):
    if not is_stax:
        return
    import re

    import stax

    x = random_values((6, 10), torch.float32, -2, 2)
    torch._dynamo.mark_dynamic(x, 0)
    report = stax.explain(normalize_rows, x)
    text = str(report)
    assert re.search(r"sizes known at run time, one program for every size \(s\d+ in \[2, \d+\] "
                     r"\(hint 6\)\)", text), text
    assert re.search(r"sizes run so far \(the last \d+\): s\d+=6$", text, re.M), text
    (graph,) = report.graphs
    (region,) = graph.regions
    assert_same(region(random_values((9, 10), torch.float32, -2, 2))[0].shape, torch.Size([9, 10]))
    assert re.search(r"sizes run so far \(the last \d+\): s\d+=6; s\d+=9$", str(report), re.M), (
        str(report))
    torch._dynamo.reset()
