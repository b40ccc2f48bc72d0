"""Decompositions that round float16/bfloat16 values where eager's CPU kernel rounds them.

A decomposition replaces one eager kernel by several ATen ops, and Stax (like eager) rounds a
16-bit result after each ATen op. So a decomposition gives eager's 16-bit answer only when its
ATen ops round where the kernel does. Probing torch 2.13's CPU kernels shows two kinds:

* kernels that widen to float32, compute the whole op there and round once (layer_norm,
  group_norm, softmax, the activations): their core ATen decompositions already widen to the
  computation dtype and round once, and Stax's own ops compute in float32 and round once;
* kernels written in Vectorized<scalar_t> or scalar_t arithmetic, which round every step to the
  16-bit dtype (logit: 1 - x, the quotient and the log; linalg.cross: each product and the
  difference). Their core ATen decompositions widen to float32 and round once, several 16-bit
  ulps away from eager (OpInfo samples: logit 0.032 relative, cross 0.033 in bfloat16).

`round_as_eager` replaces, for 16-bit inputs only, the decompositions of the second kind by
compositions of ATen ops in the input's dtype, one ATen op per rounding step of eager's kernel.
Other dtypes keep the table's decomposition.
"""

from __future__ import annotations

import functools

import torch
import torch.utils._pytree as pytree

aten = torch.ops.aten

_HALF = (torch.float16, torch.bfloat16)


def _logit(self, eps=None):
    # Eager's kernel: with eps >= 0, x clamped to [eps, 1 - eps]; then log(x / (1 - x)), each
    # step in the dtype.
    x = self
    if eps is not None and eps >= 0:
        x = aten.clamp.default(x, eps, 1 - eps)
    one_minus = aten.add.Tensor(aten.neg.default(x), 1)  # -x is exact; 1 - x rounds once
    return aten.log.default(aten.div.Tensor(x, one_minus))


def _linalg_cross(self, other, dim=-1):
    # Eager's kernel: out[i] = a[i+1] * b[i+2] - a[i+2] * b[i+1] in scalar_t arithmetic, so each
    # product and the difference round to the dtype. The inputs broadcast.
    shape = torch.broadcast_shapes(self.shape, other.shape)
    a = aten.expand.default(self, shape)
    b = aten.expand.default(other, shape)
    d = dim % len(shape)

    def part(t, i):
        return aten.slice.Tensor(t, d, i % 3, i % 3 + 1)

    pieces = [
        aten.sub.Tensor(aten.mul.Tensor(part(a, i + 1), part(b, i + 2)),
                        aten.mul.Tensor(part(a, i + 2), part(b, i + 1)))
        for i in range(3)
    ]
    return aten.cat.default(pieces, d)


# Overload packet -> its composition in the 16-bit dtype, rounding where eager's kernel does.
ROUNDED_STEP_BY_STEP = {
    aten.logit: _logit,
    aten.linalg_cross: _linalg_cross,
}


def _is_16_bit(args, kwargs) -> bool:
    return any(isinstance(x, torch.Tensor) and x.dtype in _HALF
               for x in pytree.tree_leaves((args, kwargs)))


def _by_dtype(in_dtype, otherwise):
    @functools.wraps(in_dtype)
    def run(*args, **kwargs):
        if _is_16_bit(args, kwargs):
            return in_dtype(*args, **kwargs)
        return otherwise(*args, **kwargs)

    return run


def round_as_eager(table: dict) -> dict:
    """`table` with the decompositions of ROUNDED_STEP_BY_STEP's ops (functional overloads)
    taken from there for 16-bit inputs."""
    out = dict(table)
    for packet, in_dtype in ROUNDED_STEP_BY_STEP.items():
        op = packet.default
        if op in table:
            out[op] = _by_dtype(in_dtype, table[op])
    return out
