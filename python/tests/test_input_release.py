"""Inputs released at their last use (issue 16, point 5): a graph that Stax runs as regions
and PyTorch nodes takes AOTAutograd's boxed list of arguments, clears it, and drops each input
after the last node that reads it, so a backward graph frees the activations saved for it as
it goes. The probe below is an op Stax does not know (it runs in PyTorch between two regions)
that records whether the first input is still alive when it runs."""

import gc
import weakref

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from stax import backend
from stax.options import Options

_alive = []
_watched = [None]


@torch.library.custom_op("stax_test::probe", mutates_args=())
def probe(t: torch.Tensor) -> torch.Tensor:
    if _watched[0] is not None:  # not while tracing
        _alive.append(_watched[0]() is not None)
    return t.clone()


@probe.register_fake
def _(t):
    return torch.empty_like(t)


def graph(a, b):
    c = (a * 2).sum()                     # the last use of a: a Stax region
    d = torch.ops.stax_test.probe(b + c)  # PyTorch, after that region: a is dead by now
    return (c + (d * 3).sum(),)           # another region


def test_an_input_is_freed_after_its_last_use():
    a, b = torch.randn(256, 1024), torch.randn(64, 64)
    gm = make_fx(graph)(a, b)
    run = backend.compile_aten_graph(gm, [a, b], Options.parse({}), "backward")
    assert run._boxed_call
    expected = graph(a, b)[0]
    args = [a.clone(), b.clone()]
    _watched[0] = weakref.ref(args[0])
    del a
    gc.collect()
    _alive.clear()
    (out,) = run(args)
    assert args == []  # the boxed convention: the list is the callee's to clear
    assert _alive == [False], "the first input outlived its last use"
    torch.testing.assert_close(out, expected)


def single_region(a, b, c):
    t = torch.tanh(a)            # the last read of a
    p = torch.mm(t, b)           # of b (a library call in the same program)
    return ((p * c).sum(),)      # of c


def test_a_whole_graph_region_drops_each_input_after_the_programs_last_read():
    # One region is the whole graph: its program reports each input's last read (the
    # wrapper's release statements) and the bridge drops the tensor then. Without that the
    # inputs die together when the call returns, in the reverse of their order.
    a, b, c = torch.randn(64, 96), torch.randn(96, 32), torch.randn(64, 32)
    expected = single_region(a, b, c)[0]
    gm = make_fx(single_region)(a, b, c)
    run = backend.compile_aten_graph(gm, [a, b, c], Options.parse({}), "backward")
    assert run.__name__ == "call_boxed"
    deaths = []
    args = [a.clone(), b.clone(), c.clone()]
    refs = [weakref.ref(t, lambda _, name=name: deaths.append(name))
            for name, t in zip("abc", args)]
    (out,) = run(args)
    assert args == [] and all(r() is None for r in refs)
    assert deaths == ["a", "b", "c"]
    torch.testing.assert_close(out, expected)


def two_regions(a, b, c):
    t = torch.tanh(a)
    p = torch.mm(t, b)                  # the last read of b
    r = p + a[:, :32]                   # of a, after b's: both in the first region
    q = torch.ops.stax_test.probe(r)    # PyTorch between the regions
    return ((q * c).sum(),)             # c: the second region


def test_a_region_among_pytorch_nodes_drops_its_inputs_as_its_program_reads_them():
    # The graph runs through FX (a region, a PyTorch node, a region); each region call hands
    # over its arguments, so inside the first region's program b dies at its last read (the
    # product), before a; without that the call would hold both until it returns and FX
    # would drop them after it in argument order, a first.
    a, b, c = torch.randn(64, 96), torch.randn(96, 32), torch.randn(64, 32)
    expected = two_regions(a, b, c)[0]
    gm = make_fx(two_regions)(a, b, c)
    run = backend.compile_aten_graph(gm, [a, b, c], Options.parse({}), "backward")
    deaths = []
    args = [a.clone(), b.clone(), c.clone()]
    refs = [weakref.ref(t, lambda _, name=name: deaths.append(name))
            for name, t in zip("abc", args)]
    _watched[0] = None
    (out,) = run(args)
    assert args == [] and all(r() is None for r in refs)
    assert deaths == ["b", "a", "c"]
    torch.testing.assert_close(out, expected)
