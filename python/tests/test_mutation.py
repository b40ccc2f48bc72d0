"""Inputs mutated in place (issue 16, point 6). AOTAutograd keeps each input mutation in the
graph as copy_(input, final value) (keep_inference_input_mutations); Stax writes the value
into the input's own memory from the compiled program, so PyTorch copies nothing back, and
a node reading the old contents runs before the write (WeakDep).

Each case runs compiled and eager on separate copies of the same inputs; the outputs and the
mutated inputs must agree. Pointwise cases compute exactly what eager computes (tolerance 0);
the AdamW step uses assert_close's float32 defaults (its sqrt and divisions are SLEEF's, a few
ulps from eager's, and nothing sums)."""

import copy

import pytest
import torch

import stax
from eager_comparison import op_counts

EXACT = {"rtol": 0, "atol": 0}


def run_both(fn, *inputs):
    """(compiled result, compiled inputs after), (eager result, eager inputs after), and the
    explain report of the compiled run."""
    torch._dynamo.reset()
    mine = [t.clone() for t in inputs]
    theirs = [t.clone() for t in inputs]
    report = stax.explain(fn, *mine)
    torch._dynamo.reset()
    again = [t.clone() for t in inputs]
    got = torch.compile(fn, backend="stax")(*again)
    want = fn(*theirs)
    return (got, again), (want, theirs), report


def assert_copy_in_stax(report):
    in_stax = op_counts(report.stax_ops)
    fallback = op_counts(report.fallback_ops)
    assert in_stax.get("copy_", 0) >= 1, f"copy_ ran in PyTorch: {fallback}"
    assert "copy_" not in fallback, fallback


def test_dst_keeps_the_old_src_when_src_is_updated_after():
    def f(dst, src):
        dst[0:, :] = src[0:, :]
        src.add_(1)

    dst, src = torch.randn(300, 257), torch.randn(300, 257)
    (_, (d1, s1)), (_, (d2, s2)), report = run_both(f, dst, src)
    torch.testing.assert_close(d1, src, **EXACT)  # the old src
    torch.testing.assert_close(s1, src + 1, **EXACT)
    torch.testing.assert_close(d1, d2, **EXACT)
    torch.testing.assert_close(s1, s2, **EXACT)
    assert_copy_in_stax(report)


def test_a_read_after_the_update_sees_the_new_value():
    def f(x, y):
        before = x * 2
        x.add_(y)
        return before, x * 3, x.sum(1)

    x, y = torch.randn(513, 129), torch.randn(513, 129)
    (got, (x1, _)), (want, (x2, _)), report = run_both(f, x, y)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1.3e-6, atol=1e-5)
    torch.testing.assert_close(x1, x2, **EXACT)
    assert_copy_in_stax(report)


def test_two_views_of_one_input_both_written():
    def f(x):
        v1, v2 = x[0], x[:, 1]
        v1.mul_(2)
        v2.add_(1)
        return x.sum()

    x = torch.randn(700, 700)
    (got, (x1,)), (want, (x2,)), report = run_both(f, x)
    torch.testing.assert_close(x1, x2, **EXACT)
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-5)
    assert_copy_in_stax(report)


def test_a_non_contiguous_input_and_a_dtype_conversion():
    def f(x, counts):
        x.mul_(0.5)
        counts.copy_(x * 10)  # float into int32, truncated as eager's copy_

    x = torch.randn(1000, 512).t()
    counts = torch.zeros(512, 1000, dtype=torch.int32)
    (_, (x1, c1)), (_, (x2, c2)), report = run_both(f, x, counts)
    assert x1.stride() == x.stride()
    torch.testing.assert_close(x1, x2, **EXACT)
    torch.testing.assert_close(c1, c2, **EXACT)
    assert_copy_in_stax(report)


def test_the_inputs_memory_is_written_no_copy_back():
    """The compiled call writes the caller's tensor where it lives: its data pointer is the
    same after the call and no intermediate tensor of its size was copied into it."""

    def f(x):
        x.mul_(3).add_(1)

    x = torch.randn(4096, 1024)
    expected = x * 3 + 1
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="stax")
    pointer = x.data_ptr()
    compiled(x)
    assert x.data_ptr() == pointer
    torch.testing.assert_close(x, expected, **EXACT)
    report = stax.explain(f, x.clone())
    assert_copy_in_stax(report)
    graph = report.graphs[0]
    explained = "\n".join(r.primary.compiled.explain(verbose=True) for r in graph.regions)
    assert "in place in input" in explained, explained


def test_batchnorm_running_statistics_updated_in_place():
    torch.manual_seed(0)
    model = torch.nn.BatchNorm1d(64).train()
    reference = copy.deepcopy(model)
    x = torch.randn(256, 64)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="stax")
    for _ in range(3):
        got = compiled(x)
        want = reference(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.running_mean, reference.running_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.running_var, reference.running_var, rtol=1e-5, atol=1e-6)
    assert model.num_batches_tracked == reference.num_batches_tracked == 3


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for-loop"])
def test_adamw_step_updates_parameters_in_place(foreach):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8))
    reference = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=foreach)
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=1e-2, foreach=foreach)
    x = torch.randn(32, 64)
    for m in (model, reference):
        m(x).square().mean().backward()
    pointers = [p.data_ptr() for p in model.parameters()]
    torch._dynamo.reset()
    step = torch.compile(opt.step, backend="stax")
    for _ in range(3):
        step()
        ref_opt.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, msg=lambda m: f"{name}: {m}")
    for p, q in zip(opt.state.values(), ref_opt.state.values()):
        torch.testing.assert_close(p["exp_avg"], q["exp_avg"])
        torch.testing.assert_close(p["exp_avg_sq"], q["exp_avg_sq"])
    assert [p.data_ptr() for p in model.parameters()] == pointers
    # Each parameter and both of its moments are written by Stax's program (the step counts
    # too, 0-d tensors), not copied back by PyTorch.
    probe = copy.deepcopy(reference)
    probe_opt = torch.optim.AdamW(probe.parameters(), lr=1e-2, foreach=foreach)
    probe(x).square().mean().backward()
    torch._dynamo.reset()
    report = stax.explain(probe_opt.step)
    assert op_counts(report.stax_ops).get("copy_", 0) == 4 * len(list(probe.parameters()))
    assert "copy_" not in op_counts(report.fallback_ops)


def test_a_region_writing_an_input_that_pytorch_reads_after_it_runs_in_pytorch():
    """If a region's call were placed before a PyTorch node reading the input it writes, the
    node would read the new contents: the backend runs such a region in PyTorch instead."""
    from stax import backend

    aten = torch.ops.aten
    sub_graph = torch.fx.Graph()
    p = sub_graph.placeholder("p")
    added = sub_graph.call_function(aten.add.Tensor, (p, 1))
    sub_graph.call_function(aten.copy_.default, (p, added))
    sub_graph.output(())

    def fused_with_reader(reader_first):
        g = torch.fx.Graph()
        x = g.placeholder("x")
        if reader_first:
            s = g.call_function(aten.sort.default, (x,))
        g.call_module("stax_region_0", (x,))
        if not reader_first:
            s = g.call_function(aten.sort.default, (x,))
        g.output((s,))
        root = torch.nn.Module()
        root.stax_region_0 = torch.fx.GraphModule(torch.nn.Module(), sub_graph)
        return torch.fx.GraphModule(root, g)

    reason = backend._late_reader_of_written_input(fused_with_reader(False), "stax_region_0")
    assert reason is not None and "writes input x in place" in reason, reason
    assert backend._late_reader_of_written_input(fused_with_reader(True), "stax_region_0") is None


def test_mutations_copied_back_by_aotautograd_when_asked():
    """options={"mutations_in_place": False} (before/after measurements): the graph returns
    the new value and AOTAutograd copies it into the input, as before issue 16's point 6."""

    def f(x):
        x.mul_(3).add_(1)
        return x.sum()

    x = torch.randn(64, 64)
    expected = x * 3 + 1
    torch._dynamo.reset()
    report = stax.explain(f, x, options={"mutations_in_place": False})
    torch.testing.assert_close(x, expected, **EXACT)
    assert "copy_" not in op_counts(report.stax_ops)
    assert "copy_" not in op_counts(report.fallback_ops)
