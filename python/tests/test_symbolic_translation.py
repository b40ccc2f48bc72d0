"""Issue 33: a Dynamo graph with symbolic sizes (dynamic=True) translates into Stax graphs with
size symbols (`f32[s0, 64]`, `view(x, [s0, 4, 16])`, `where s0: [2, 2147483647] hint=...`),
one per region, whatever the sequence length. Each translated graph, bound to the sizes of a
call, computes what PyTorch computes there: the eager interpreter (the oracle) runs it at
lengths other than the one Dynamo traced with and is compared with the region as PyTorch runs
it. The models are tiny GPT-2, LLaMA-style and T5 encoders from configs (random weights,
nothing downloaded), forward only (inference).
"""

import os

import pytest
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

import stax.backend as B
from stax import _C, aten_ops, partition
from test_one_program import MODELS, VOCAB

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def symbolic_inference_graph(model, lengths):
    """The ATen inference graph Dynamo and AOTAutograd trace with dynamic=True (one graph for
    every length), and the arguments it was called with at each length."""
    graphs, calls = [], []

    def inference(g, example_inputs):
        graphs.append(g)

        def run(*args):
            calls.append(list(args))
            return g(*args)

        return make_boxed_func(run)

    backend = aot_autograd(fw_compiler=inference, inference_compiler=inference,
                           decompositions=B.decompositions())
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for length in lengths:
            ids = torch.randint(0, VOCAB, (1, length), generator=torch.Generator().manual_seed(length))
            compiled(ids)
    assert len(graphs) == 1, "one symbolic graph for every length"
    return graphs[0], calls


class Recorder(torch.nn.Module):
    """A region run as PyTorch runs it, recording its inputs and outputs."""

    def __init__(self, sub):
        super().__init__()
        self.sub = sub
        self.seen = []

    def forward(self, *args):
        out = self.sub(*args)
        self.seen.append((args, out))
        return out


def symbol_values(graph, args):
    """The size symbols' values at a call: from each input dim whose size is one symbol."""
    values = {}
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    for (_, fake), actual in zip(graph.inputs, tensors):
        for size, value in zip(fake.shape, actual.shape):
            if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                values[str(size.node.expr)] = int(value)
    return values


@pytest.mark.parametrize("name", sorted(MODELS))
def test_symbolic_graphs_translate_once_and_match_pytorch_at_other_lengths(name):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    lengths = (7, 12, 5)
    g, calls = symbolic_inference_graph(model, lengths)
    stax_ops = aten_ops.stax_op_params()
    fused, regions, _ = partition.partition(g, stax_ops)
    assert regions
    translated = {}
    for rname in regions:
        sub = getattr(fused, rname)
        translated[rname] = partition.translate_region(sub, rname, stax_ops)
        setattr(fused, rname, Recorder(sub))
    # The model's main region is symbolic: its types and arguments are expressions over the
    # sequence length's symbol, declared with its range and hint.
    texts = [t.text() for t in translated.values()]
    assert any(" where s" in text and "hint=" in text for text in texts), texts[0][:400]
    compared = 0
    with torch.no_grad():
        for args in calls:
            fused(*args)
    for rname, graph in translated.items():
        recorder = getattr(fused, rname)
        assert len(recorder.seen) == len(lengths)
        text = graph.text()
        for args, out in recorder.seen:
            # Inputs are passed as they are: the graph declares PyTorch's layouts.
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            sizes = symbol_values(graph, args)
            results = _C.eager_run(text, [t.data_ptr() for t in tensors], rname, sizes)
            expected = out if isinstance(out, (list, tuple)) else [out]
            assert len(results) == len(graph.outputs)
            for k, (dtype, shape, data) in enumerate(results):
                kind, index, replay = graph.returned[k] if graph.returned else ("output", k, None)
                if kind != "output" or replay is not None:
                    continue
                want = expected[k]
                got = torch.frombuffer(bytearray(data), dtype=want.dtype).reshape(shape) \
                    if want.numel() else torch.empty(shape, dtype=want.dtype)
                assert list(shape) == list(want.shape), (rname, k, sizes)
                torch.testing.assert_close(got, want.contiguous(), rtol=1e-4, atol=1e-4,
                                           msg=lambda m: f"{name} {rname} output {k} at {sizes}: {m}")
                compared += 1
    assert compared >= len(lengths), compared


def test_sizes_dynamo_leaves_unsimplified_are_spelled():
    """Dynamo's training graphs carry sizes such as (s27**2)//s27 and Max(1, (s27**2)//s27):
    an exact floor division is its quotient, and a Max or Min against a constant that bounds
    the other side over the symbol's range is that side; what holds for some values only (s//2,
    Max(3, s) with s >= 2) stays refused, so the region is traced per size."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv
    from torch.utils._sympy.value_ranges import ValueRanges

    from stax.symbolic_sizes import SymbolFacts, Unsupported, _exact_quotients

    s = sympy.Symbol("s27", integer=True, positive=True)

    class ShapeEnv:
        var_to_val = {s: 128}
        var_to_range = {s: ValueRanges(2, 4096)}

    def spelled(expr):
        return SymbolFacts()._expr_text(_exact_quotients(expr), ShapeEnv())

    assert spelled(FloorDiv(s**2, s)) == "s27"
    assert spelled(FloorDiv(6 * s**2 + 3 * s, 3 * s)) == "2*s27 + 1"
    assert spelled(sympy.Max(1, FloorDiv(s**2, s))) == "s27"
    assert spelled(sympy.Max(2, 3 * s)) == "3*s27"
    assert spelled(sympy.Min(2, s)) == "2"
    for refused in (FloorDiv(s, 2), sympy.Max(3, s), sympy.Min(3, s)):
        with pytest.raises(Unsupported):
            spelled(refused)
