"""Undoes Dynamo's rewrites of a user's call that change what eager computes.

Dynamo (torch 2.13, variables/torch.py handle_addcdiv) traces `torch.addcdiv(x, t1, t2,
value=v)` as three ops, `torch.add(x, torch.mul(torch.div(t1, t2), v))`, to avoid a graph break
on the scalar. Eager's addcdiv kernel computes x + (v * t1) / t2 in float32 for float16 and
bfloat16 and rounds once (in float32 and float64: the same order in the dtype), while the three
ops round 16-bit values after the division and after the product: an OpInfo float16 sample
differs from eager by a float16 ulp, a bfloat16 one by 0.17 relative. The backend sees only the
three ops; what marks them as Dynamo's rewrite is that all three carry the stack trace of one
call expression, the addcdiv (a user's nested torch.add(x, torch.mul(torch.div(...), v))
gives each call its own expression; the call may come through another name, as OpInfo's
op.op(...), so the source text is not looked at). `restore_addcdiv` puts the addcdiv back, which
AOTAutograd then decomposes as eager computes it (half_decompositions.py's rule holds: one
rounding, at the end).
"""

from __future__ import annotations

import numbers

import torch


def _value(node):
    val = node.meta.get("example_value", node.meta.get("val"))
    return val if isinstance(val, torch.Tensor) else None


def _dynamo_addcdiv(add: torch.fx.Node):
    """(x, t1, t2, value) when `add` ends Dynamo's rewrite of one addcdiv call, else None."""
    if add.op != "call_function" or add.target is not torch.add or add.kwargs or len(add.args) != 2:
        return None
    x, mul = add.args
    if not isinstance(mul, torch.fx.Node) or mul.target is not torch.mul or mul.kwargs:
        return None
    if len(mul.args) != 2 or len(mul.users) != 1:
        return None
    div, value = mul.args
    if not isinstance(div, torch.fx.Node) or div.target is not torch.div or div.kwargs:
        return None
    if len(div.args) != 2 or len(div.users) != 1:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return None
    trace = add.meta.get("stack_trace")
    if not trace:
        return None
    if mul.meta.get("stack_trace") != trace or div.meta.get("stack_trace") != trace:
        return None
    out = _value(add)
    if out is None or not out.dtype.is_floating_point:
        return None
    return x, div.args[0], div.args[1], value


def restore_addcdiv(gm: torch.fx.GraphModule) -> int:
    """Replaces each of Dynamo's div-mul-add rewrites of an addcdiv call in `gm` by the
    addcdiv; returns how many it replaced."""
    graph = gm.graph
    restored = 0
    for add in list(graph.nodes):
        found = _dynamo_addcdiv(add)
        if found is None:
            continue
        x, t1, t2, value = found
        mul = add.args[1]
        div = mul.args[0]
        with graph.inserting_before(add):
            call = graph.call_function(torch.addcdiv, (x, t1, t2), {"value": value})
        call.meta = dict(add.meta)
        add.replace_all_uses_with(call)
        graph.erase_node(add)
        graph.erase_node(mul)
        graph.erase_node(div)
        restored += 1
    if restored:
        gm.recompile()
    return restored
