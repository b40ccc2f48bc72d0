"""Functional scatters that PyTorch runs, turned back into in-place ones where nothing can tell.

AOTAutograd hands over functional graphs: a backward's embedding gradient is
`index_put(zeros([vocab, dim]), [ids], grad, accumulate=True)`, whose eager kernel first
clones its destination. For BERT's vocabulary that clone copies 94 MB of zeros on every
training step, fresh pages included (about 20 ms of a 140 ms bfloat16 step on the benchmark
machine). Where the destination is a value computed in this graph (its own storage, not a
view, not an input) and the scatter is its only reader, the in-place op (`index_put_`)
gives the same result without the copy: no other node reads the destination before or
after, so overwriting it is unobservable. Stax computes the destination in a region; a
region output that is its own storage root is a tensor the call allocated for it alone.

This runs on the ATen graph before partitioning, and only on ops PyTorch runs (Stax's own
regions never see them). It is the counterpart of Inductor's reinplacing pass, reduced to the
scatters. Stax now runs index_put with integer tensor indices, index_add and scatter_add
itself (the embedding gradient included, whose zeros it never stores); what remains here is
the form it leaves to PyTorch (index_put with a boolean mask).
"""

from __future__ import annotations

import torch

from .view_outputs import storage_root

aten = torch.ops.aten

# Functional scatter -> its in-place twin; the destination is argument 0 of both, and both
# return the (updated) destination.
_IN_PLACE = {
    aten.index_put.default: aten.index_put_.default,
    aten.index_add.default: aten.index_add_.default,
    aten.scatter_add.default: aten.scatter_add_.default,
}


def _owns_its_storage(node: torch.fx.Node) -> bool:
    """Whether `node` is a computed tensor with storage of its own (not a graph input, not a
    view of another value)."""
    if node.op != "call_function" or not isinstance(node.meta.get("val"), torch.Tensor):
        return False
    root, chain = storage_root(node)
    return root is node and not chain


def reinplace_scatters(gm: torch.fx.GraphModule, unsupported) -> int:
    """Rewrites in `gm` the functional scatters that `unsupported(node)` says PyTorch will run
    into their in-place twins where the destination is read by nothing else. Returns the count."""
    count = 0
    for node in gm.graph.nodes:
        in_place = _IN_PLACE.get(node.target)
        if in_place is None or not unsupported(node):
            continue
        destination = node.args[0]
        if not isinstance(destination, torch.fx.Node) or len(destination.users) != 1:
            continue
        if not _owns_its_storage(destination):
            continue
        node.target = in_place
        count += 1
    if count:
        gm.recompile()
    return count
