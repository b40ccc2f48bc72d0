"""Runs a function through torch.compile and eagerly on identical copies of its inputs and
compares outputs and inputs afterwards; checks what stax.explain reports about a function.

Comparisons use torch.testing.assert_close's defaults for the dtype unless a test passes a
tolerance derived from the dtype's eps and a reduction length (`summation_tolerance`).
"""

import math

import torch
from torch._dynamo.backends.registry import lookup_backend

# name of a module test -> (fallback fraction, {ATen op: count} run by PyTorch); printed at the
# end of the run by conftest.py.
FALLBACK_FRACTIONS = {}


class CountingBackend:
    """The named backend, counting the graphs dynamo hands it (a test whose function was never
    compiled would otherwise pass by comparing eager with eager)."""

    def __init__(self, name):
        self.name = name
        self.graphs = 0

    def __call__(self, graph_module, example_inputs):
        self.graphs += 1
        return lookup_backend(self.name)(graph_module, example_inputs)


def copy_with_layout(value):
    """A deep copy in which every tensor keeps its sizes, strides and storage offset (clone()
    would make step-sliced or expanded tensors contiguous, hiding the layout under test)."""
    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        copy = torch.empty(0, dtype=value.dtype).set_(
            storage.clone(), value.storage_offset(), value.size(), value.stride()
        )
        if value.requires_grad:
            copy.requires_grad_(True)
        return copy
    if isinstance(value, dict):
        return {key: copy_with_layout(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(copy_with_layout(item) for item in value)
    return value


def assert_same(actual, expected, where="output", **tolerance):
    """assert_close over nested dicts/lists/tuples, naming the key path of a mismatch."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a dict, got {type(actual).__name__}"
        assert actual.keys() == expected.keys(), f"{where}: keys {actual.keys()} != {expected.keys()}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}[{key!r}]", **tolerance)
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)), f"{where}: expected a sequence, got {actual!r}"
        assert len(actual) == len(expected), f"{where}: {len(actual)} items, expected {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            assert_same(got, want, f"{where}[{index}]", **tolerance)
    elif isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, msg=lambda m: f"{where}: {m}", **tolerance)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def training_step_matches_eager(module, loss, x, **tolerance):
    """loss(x) and the gradients of module's parameters from backward(), compiled with the
    stax backend (compiled afresh) against eager, within `tolerance`."""
    module.zero_grad()
    expected = loss(x)
    expected.backward()
    want = {k: p.grad.clone() for k, p in module.named_parameters()}
    module.zero_grad()
    torch._dynamo.reset()
    actual = torch.compile(loss, backend="stax")(x)
    actual.backward()
    assert_same(actual, expected, **tolerance)
    assert_same({k: p.grad for k, p in module.named_parameters()}, want, "grad", **tolerance)


def counted_compiles(monkeypatch) -> list:
    """A list that gets the name of each graph Stax compiles (stax._C.compile) from now on."""
    import stax

    names = []
    real_compile = stax._C.compile

    def counted(text, name, **kwargs):
        names.append(name)
        return real_compile(text, name, **kwargs)

    monkeypatch.setattr(stax._C, "compile", counted)
    return names


def training_at_lengths_matches_eager(make_model, output, compile_kwargs, lengths, vocab,
                                      after_each=None):
    """A model's training step (the mean square of `output(model(ids))`) compiled with the stax
    backend and `compile_kwargs`, at each sequence length of `lengths` (batch 2), against an
    eager copy: loss and every parameter's gradient. `after_each(length)` runs after each."""
    def ids(length):
        return torch.randint(0, vocab, (2, length), generator=torch.Generator().manual_seed(length))

    training_at_sizes_matches_eager(make_model, output, compile_kwargs, lengths, ids, after_each)


def training_at_sizes_matches_eager(make_model, output, compile_kwargs, sizes, make_input,
                                    after_each=None, dtype=torch.float32):
    """training_at_lengths_matches_eager over any input: `make_input(size)` for each of
    `sizes` (token ids of a length, images of a size): loss, every parameter's gradient and
    every buffer the step updates (a batch norm's running statistics).

    In float32 against eager within float32 roundings. In a 16-bit `dtype` eager rounds every
    op's result and Stax its fused results, in other places, and the two differ by roundings
    that grow through the chain of layers as the gradients' sums cancel: there each value is
    held to the float32 step of the same 16-bit weights and inputs, and Stax's error must be
    no larger than eager's own error in that dtype (twice its largest, plus one rounding of
    the value's magnitude)."""
    torch.manual_seed(0)
    model = make_model().to(dtype).train()
    reference = make_model().to(dtype).train()
    reference.load_state_dict(model.state_dict())
    exact = None
    if dtype != torch.float32:
        exact = make_model().train()
        exact.load_state_dict({k: v.float() if v.is_floating_point() else v
                               for k, v in model.state_dict().items()})

    def loss(m, x):
        return output(m(x)).float().square().mean()

    def check(got, want, truth, where):
        if truth is None:
            assert_same(got, want, where, rtol=1e-4, atol=1e-6)
            return
        if not got.is_floating_point():
            assert torch.equal(got, want), where
            return
        got, want, truth = got.float(), want.float(), truth.float()
        eager_error = (want - truth).abs().max().item()
        stax_error = (got - truth).abs().max().item()
        bound = 2 * eager_error + torch.finfo(dtype).eps * truth.abs().max().item()
        assert stax_error <= bound, (f"{where}: error {stax_error:.3g} against float32, eager's "
                                     f"{eager_error:.3g} (bound {bound:.3g})")

    torch._dynamo.reset()
    compiled = torch.compile(lambda x: loss(model, x), backend="stax", **compile_kwargs)
    for size in sizes:
        x = make_input(size)
        models = [model, reference] + ([exact] if exact is not None else [])
        for m in models:
            m.zero_grad()
        actual = compiled(x.to(dtype) if x.is_floating_point() else x)
        actual.backward()
        expected = loss(reference, x.to(dtype) if x.is_floating_point() else x)
        expected.backward()
        truth = None
        if exact is not None:
            truth = loss(exact, x)
            truth.backward()
        check(actual, expected, truth, f"loss at {size}")
        named = [list(m.named_parameters()) for m in models]
        for k, (name, p) in enumerate(named[0]):
            check(p.grad, named[1][k][1].grad, named[2][k][1].grad if exact else None,
                  f"grad {name} at {size}")
        buffers = [list(m.named_buffers()) for m in models]
        for k, (name, b) in enumerate(buffers[0]):
            check(b, buffers[1][k][1], buffers[2][k][1] if exact else None,
                  f"buffer {name} after the step at {size}")
        if after_each is not None:
            after_each(size)
    torch._dynamo.reset()


def compile_counted(fn, backend, **compile_kwargs):
    """torch.compile(fn) through a CountingBackend; returns (compiled fn, counter)."""
    counter = CountingBackend(backend)
    return torch.compile(fn, backend=counter, **compile_kwargs), counter


def check_against_eager(fn, args, backend, fullgraph=True, output_tolerance=None, **tolerance):
    """Runs fn eagerly and compiled on layout-preserving copies of args; compares the outputs
    and the inputs afterwards (so a wrong in-place write to an input is caught too). fullgraph
    makes a graph break an error: the whole function must reach the backend. output_tolerance
    maps keys of a dict output to the tolerance of that entry (summation_tolerance)."""
    eager_args = copy_with_layout(args)
    compiled_args = copy_with_layout(args)
    expected = fn(*eager_args)
    compiled, counter = compile_counted(fn, backend, fullgraph=fullgraph)
    actual = compiled(*compiled_args)
    assert counter.graphs >= 1, f"{backend} never received a graph"
    if output_tolerance:
        assert isinstance(expected, dict) and set(output_tolerance) <= expected.keys()
        assert isinstance(actual, dict) and actual.keys() == expected.keys()
        for key in expected:
            assert_same(actual[key], expected[key], f"output[{key!r}]", **output_tolerance.get(key, tolerance))
    else:
        assert_same(actual, expected, "output", **tolerance)
    assert_same(compiled_args, eager_args, "inputs after the call", **tolerance)
    return actual


def summation_tolerance(dtype, length, magnitude):
    """Tolerance for a sum of `length` terms of size at most `magnitude` computed in another
    order than eager's. Each addition rounds by at most eps/2 of its partial sum (at most
    length * magnitude); independent roundings add up like a random walk, sqrt(length) of
    them, and two orders differ by at most twice that: 4 * eps * sqrt(length) * length *
    magnitude leaves a factor 4 for the tail. A dropped or doubled term (an error of about
    `magnitude`) still fails as long as length**1.5 < 1 / (4 eps): length < 16000 for float32.
    rtol stays assert_close's default for the dtype."""
    eps = torch.finfo(dtype).eps
    default_rtol = {torch.float64: 1e-7, torch.float32: 1.3e-6}[dtype]
    return {"rtol": default_rtol, "atol": 4 * eps * math.sqrt(length) * length * magnitude}


def base_op_name(op):
    """'aten.addmm.default', 'aten::addmm', 'addmm.default' or an OpOverload -> 'addmm'."""
    name = str(op)
    for prefix in ("aten::", "aten."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name.split(".")[0]


def op_counts(ops):
    counts = {}
    for op, count in dict(ops).items():
        counts[base_op_name(op)] = counts.get(base_op_name(op), 0) + count
    return counts


def check_explain(name, fn, *args, may_fall_back=(), must_run_in_stax=()):
    """stax.explain(fn, *args): records and prints its fallback fraction, and asserts that
    only ops in may_fall_back were run by PyTorch and that every op in must_run_in_stax ran
    in Stax. Op names are base ATen names ('addmm')."""
    import stax

    report = stax.explain(fn, *args)
    fallback = op_counts(report.fallback_ops)
    in_stax = op_counts(report.stax_ops)
    fraction = float(report.fallback_fraction)
    FALLBACK_FRACTIONS[name] = (fraction, fallback)
    print(f"stax.explain {name}: fallback fraction {fraction:.3f}; fell back {fallback}")

    assert report.graphs, f"{name}: stax.explain recorded no graph"
    assert 0.0 <= fraction <= 1.0, f"{name}: fallback fraction {fraction}"
    assert (fraction == 0.0) == (not fallback), f"{name}: fraction {fraction} vs {fallback}"
    # Views whose region holds views only stay in PyTorch by design: a view costs nothing
    # there, while a Stax region would copy. Any other reason is a real fallback.
    views_only = {
        base_op_name(op)
        for op, reasons in report.fallback_reasons.items()
        if all(r.startswith("a region of views only") for r in reasons)
    }
    unexpected = sorted(set(fallback) - set(may_fall_back) - views_only)
    assert not unexpected, f"{name}: Stax ops fell back to PyTorch: {unexpected}\n{report}"
    missing = sorted(set(must_run_in_stax) - set(in_stax))
    assert not missing, f"{name}: expected in Stax but not there: {missing}\n{report}"
    text = str(report)
    for op in fallback:
        assert op in text, f"{name}: the report does not name fallback op {op}:\n{text}"
    return report
