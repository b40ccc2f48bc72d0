"""Region outputs that eager gives as views with a layout no dense tensor has.

`(t + 1).expand(4, 3)` is, in eager, a stride-0 view of a dense 1x3 tensor; the unfold,
diagonal, step-slice and as_strided of a computed or input tensor are views with gaps or
overlaps likewise. PyTorch code after a region may depend on such a layout, and a copy into
it cannot be made when elements overlap (one address, several elements). So the region does
what eager does: it returns the view's storage root (the dense value Stax computes, in
PyTorch's layout, or the region input the view reads), and the view ops from the root to the
output are replayed on it in PyTorch, where a view costs nothing. A root that is a region
input is replayed on the tensor passed at each call, so the view is eager's for whatever
layout that tensor has.

The storage root is found through the FakeTensors of the FX graph: a view shares the
storage of its input, and the walk follows inputs sharing the output's storage until a node
whose storage is its own (a computation) or a region input.
"""

from __future__ import annotations

import operator

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from .aten_ops import Unsupported


def _tensors(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, torch.Tensor):
        yield value


def _storage(value):
    tensors = list(_tensors(value))
    return StorageWeakRef(tensors[0].untyped_storage()) if len(tensors) == 1 else None


def storage_root(node: torch.fx.Node) -> tuple[torch.fx.Node, list[torch.fx.Node]]:
    """(root, chain): the node whose storage `node`'s value views, and the nodes from just
    after the root to `node` (empty when `node` is its own root). Multi-result view ops
    (split, unbind) are passed through by their getitem."""
    chain = []
    current = node
    storage = _storage(node.meta.get("val"))
    if storage is None:
        return node, chain
    while current.op == "call_function" and _is_view(current):
        following = None
        for inp in current.all_input_nodes:
            vals = list(_tensors(inp.meta.get("val")))
            if any(StorageWeakRef(v.untyped_storage()) == storage for v in vals):
                following = inp
                break
        if following is None:
            break
        chain.append(current)
        current = following
    chain.reverse()
    return current, chain


def _is_view(node: torch.fx.Node) -> bool:
    """Whether the node's value is a view of one of its inputs: a view op (_unsafe_view is
    view's autograd-free twin), or an item of a multi-result view op (split, unbind); an
    item of a computation (var_mean) is that computation's own result."""
    target = node.target
    if target is operator.getitem:
        base = node.args[0]
        return isinstance(base, torch.fx.Node) and base.op == "call_function" and _is_view(base)
    return target is torch.ops.aten._unsafe_view.default or (
        isinstance(target, torch._ops.OpOverload) and target.is_view)


class ViewReplay:
    """The view ops from a storage root to an output, applied to the root's tensor. A size a
    step reads from the region's arguments (the batch of an expand over symbolic sizes: an int
    Dynamo passes) is taken from each call's arguments; `placeholders` are the region's, in
    argument order."""

    def __init__(self, root: torch.fx.Node, chain: list[torch.fx.Node],
                 placeholders: list[torch.fx.Node] = ()):
        self.steps = []
        previous = root
        for node in chain:
            marker = _Previous()
            uses = []

            def substitute(arg, node=node, previous=previous, uses=uses, marker=marker):
                if arg is previous:
                    uses.append(arg)
                    return marker
                if arg in placeholders and isinstance(arg.meta.get("val"), (int, torch.SymInt)):
                    return _Argument(placeholders.index(arg))
                raise Unsupported(
                    f"output {chain[-1].name} is a view (its layout is not dense) made with "
                    f"{node.name}, which reads another value ({arg.name}) besides its base")

            args = torch.fx.map_arg(node.args, substitute)
            kwargs = torch.fx.map_arg(node.kwargs, substitute)
            assert uses, "a chain node reads the previous one (storage_root)"
            self.steps.append((node.target, args, kwargs, marker))
            previous = node

    def __call__(self, base: torch.Tensor, call_args=()) -> torch.Tensor:
        value = base
        for target, args, kwargs, marker in self.steps:
            value = target(*_put(args, marker, value, call_args),
                           **_put(kwargs, marker, value, call_args))
        return value


class _Previous:
    """Stands for the previous step's value in a step's arguments."""

    __slots__ = ()


class _Argument:
    """Stands for the region's argument at `position` (a size) in a step's arguments."""

    __slots__ = ("position",)

    def __init__(self, position: int):
        self.position = position


def _put(args, marker, value, call_args):
    if args is marker:
        return value
    if isinstance(args, _Argument):
        return int(call_args[args.position])
    if isinstance(args, tuple):
        return tuple(_put(a, marker, value, call_args) for a in args)
    if isinstance(args, list):
        return [_put(a, marker, value, call_args) for a in args]
    if isinstance(args, dict):
        return {k: _put(v, marker, value, call_args) for k, v in args.items()}
    return args
