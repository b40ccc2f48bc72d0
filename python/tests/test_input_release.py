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
