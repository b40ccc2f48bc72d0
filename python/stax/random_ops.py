"""Uniform random numbers computed inside Stax's kernels (rand, rand_like, and so dropout).

Eager's CPU generator (a Mersenne twister) is sequential state that no parallel kernel can
reproduce, so torch.compile's default backend already draws other numbers than eager (a
counter-based generator in its kernels, seeded from PyTorch's generator). Stax does the
same: each rand op draws one 64-bit seed from PyTorch's default generator per call (a
`randint` PyTorch runs, so `torch.manual_seed` makes runs repeatable), and element i is a
hash of (seed, i), SplitMix64's finalizer, written with the integer ops Stax already
compiles (multiply, xor, shifts). The rest of the graph around a dropout then stays one Stax
region instead of being cut at every `rand_like`, and the numbers are made in the kernel
that uses them rather than by PyTorch's single-threaded generator.

A value takes the top `m` bits of the hash, m the dtype's significand width (24 for
float32, 8 for bfloat16, 53 for float64), times 2**-m: uniform on the dtype's grid of
[0, 1), exactly representable, never 1.
"""

from __future__ import annotations

import torch
from torch._prims_common import compute_elementwise_output_logical_to_physical_perm

aten = torch.ops.aten

_INT64 = torch.int64
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# SplitMix64 (Steele, Lea and Flood, 2014): the Weyl increment and the finalizer's multipliers.
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
# Significand bits (the implicit one included) of the dtypes drawn here.
_SIGNIFICAND_BITS = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}


def _signed(value: int) -> int:
    """A 64-bit pattern as the int64 scalar holding it (int64 arithmetic wraps in Stax as in
    eager, so the products are SplitMix64's modulo 2**64)."""
    return value - 2**64 if value >= 2**63 else value


def _shift_right_logical(z, bits: int):
    # bitwise_right_shift of int64 is arithmetic (the sign is copied in); the mask clears it.
    return aten.bitwise_and.Scalar(aten.bitwise_right_shift.Tensor_Scalar(z, bits),
                                   (1 << (64 - bits)) - 1)


def _uniform(sizes, dtype):
    """A contiguous tensor of `sizes` uniform on [0, 1) in `dtype`."""
    seed = aten.randint.low(_INT64_MIN, _INT64_MAX, [], dtype=_INT64)
    numel = 1
    for s in sizes:
        numel *= s
    counter = aten.view.default(aten.arange.start(1, numel + 1, dtype=_INT64), list(sizes))
    z = aten.add.Tensor(aten.mul.Tensor(counter, _signed(_GOLDEN)), seed)
    z = aten.mul.Tensor(aten.bitwise_xor.Tensor(z, _shift_right_logical(z, 30)), _signed(_MIX1))
    z = aten.mul.Tensor(aten.bitwise_xor.Tensor(z, _shift_right_logical(z, 27)), _signed(_MIX2))
    z = aten.bitwise_xor.Tensor(z, _shift_right_logical(z, 31))
    bits = _SIGNIFICAND_BITS[dtype]
    top = aten._to_copy.default(_shift_right_logical(z, 64 - bits), dtype=dtype)
    return aten.mul.Tensor(top, 2.0**-bits)


def _floating(dtype) -> bool:
    return dtype in _SIGNIFICAND_BITS


def _rand(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = dtype or torch.get_default_dtype()
    if not _floating(dtype) or (device is not None and torch.device(device).type != "cpu"):
        return NotImplemented
    return _uniform(list(size), dtype)


def _rand_like(x, *, dtype=None, layout=None, device=None, pin_memory=None,
               memory_format=None):
    dtype = dtype or x.dtype
    if not _floating(dtype) or x.device.type != "cpu":
        return NotImplemented
    if memory_format not in (None, torch.preserve_format) or x.is_contiguous():
        return _uniform(list(x.shape), dtype)
    # preserve_format: eager lays the result out in x's order of strides (empty_like); the
    # numbers are drawn in that memory order, then viewed in x's dimension order.
    perm, _ = compute_elementwise_output_logical_to_physical_perm(x)
    physical = _uniform([x.shape[p] for p in perm], dtype)
    inverse = [0] * len(perm)
    for position, dim in enumerate(perm):
        inverse[dim] = position
    return aten.permute.default(physical, inverse)


# Returning NotImplemented (integer or complex dtypes, another device) leaves the op to
# PyTorch: the tracer then records the op itself.
DECOMPOSITIONS = {
    aten.rand.default: _rand,
    aten.rand_like.default: _rand_like,
}
