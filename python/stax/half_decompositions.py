"""Decompositions that round float16/bfloat16 values where eager's CPU kernel rounds them.

A decomposition replaces one eager kernel by several ATen ops, and Stax (like eager) rounds a
16-bit result after each ATen op. So a decomposition gives eager's 16-bit answer only when its
ATen ops round where the kernel does. Probing torch 2.13's CPU kernels shows these kinds:

* kernels that widen to float32, compute the whole op there and round once (layer_norm,
  group_norm, softmax over the last dim, log_softmax over other dims, the activations): their
  core ATen decompositions already widen to the computation dtype and round once, and Stax's
  own ops compute in float32 and round once;
* kernels written in Vectorized<scalar_t> or scalar_t arithmetic, which round every step to the
  16-bit dtype (logit: 1 - x, the quotient and the log; linalg.cross: each product and the
  difference). Their core ATen decompositions widen to float32 and round once, several 16-bit
  ulps away from eager (OpInfo samples: logit 0.032 relative, cross 0.033 in bfloat16);
* batch_norm's kernel (and instance_norm's, which is batch_norm): sums in float32, statistics
  kept in bfloat16 arithmetic for bfloat16 parameters (float32 otherwise), the saved mean and
  1 / sqrt(var + eps) rounded to the parameters' dtype, then x * alpha + beta in float32,
  rounded once (see _batch_norm); core ATen's (x - mean) * rstd * weight + bias differs near
  the mean (bfloat16: 0.11 relative on OpInfo samples, instance_norm 0.82);
* log_softmax over the last dim: float32 arithmetic, but two intermediates (the sum and its
  log) stored in 16-bit buffers (see _log_softmax).
* softmax over a dim other than the last: at the positions its scalar path handles, exp is
  rounded to the 16-bit dtype before the division (see _softmax).
* addr: Vectorized<scalar_t> arithmetic with beta and alpha converted to the dtype, each
  product and the sum rounded (see _addr); core ATen's computes in float32 and rounds once
  (float16 OpInfo samples: one element a float16 ulp away).
* soft_margin_loss: eager runs neg, mul, exp and log1p in place on a 16-bit buffer, so exp
  overflows to inf in float16 where core ATen's float32 decomposition stays finite (an OpInfo
  sample: 7.64 for eager's inf); then the mean or sum of the 16-bit losses (see
  _soft_margin_loss).

`round_as_eager` replaces, for 16-bit inputs only, these ops' decompositions by compositions of
ATen ops that round where eager's kernel does (each step in the input's dtype for the second
kind). Other dtypes keep the table's decomposition, and so do the 16-bit cases for which a
composition returns NotImplemented (eager's kernel for them rounds as the table's does).
"""

from __future__ import annotations

import functools
import math
import struct

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


def _addr(self, vec1, vec2, *, beta=1, alpha=1):
    """Eager's addr kernel (LinearAlgebraKernel.cpp) for a 16-bit dtype: beta and alpha
    converted to the dtype, then beta * self + (alpha * vec1) * vec2 with every product and
    the sum rounded to the dtype (Vectorized<scalar_t> arithmetic); self is not read when
    beta is 0 (its NaNs do not propagate). Mixed dtypes keep the table's decomposition."""
    dtype = vec1.dtype
    if self.dtype != dtype or vec2.dtype != dtype or vec1.dim() != 1 or vec2.dim() != 1:
        return NotImplemented
    shape = (vec1.shape[0], vec2.shape[0])
    try:
        expands = self.dim() <= 2 and torch.broadcast_shapes(self.shape, shape) == shape
    except RuntimeError:
        expands = False
    if not expands:
        return NotImplemented  # the table's decomposition raises eager's error
    if isinstance(beta, bool) or isinstance(alpha, bool):
        return NotImplemented
    beta, alpha = _in_dtype(beta, dtype), _in_dtype(alpha, dtype)
    column = aten.view.default(vec1, [vec1.shape[0], 1])
    outer = aten.mul.Tensor(aten.mul.Tensor(column, alpha), vec2)
    if beta == 0:
        return outer
    return aten.add.Tensor(aten.mul.Tensor(self, beta), outer)


def _soft_margin_loss(input, target, reduction=1):
    """Eager's soft_margin_loss for 16-bit inputs: log1p(exp(-input * target)) computed in
    place in the input's dtype, one ATen op (and one rounding) per step, so exp overflows to
    inf where eager's does; then the mean (float32 sum, rounded once) or the sum."""
    if target.dtype != input.dtype or input.shape != target.shape:
        return NotImplemented
    loss = aten.log1p.default(aten.exp.default(
        aten.mul.Tensor(aten.neg.default(input), target)))
    if reduction == 1:
        return aten.mean.default(loss)
    if reduction == 2:
        return aten.sum.default(loss)
    return loss


def _round_through(t, dtype):
    """float32 `t` rounded to the 16-bit `dtype` and widened back, as a kernel that stores a
    float32 intermediate in a scalar_t buffer does."""
    return aten._to_copy.default(aten._to_copy.default(t, dtype=dtype), dtype=torch.float32)


def _log_softmax(x, dim, half_to_float):
    """log_softmax over the last dim as eager's CPU kernel for it computes a 16-bit input: the
    max and the sum of exp(x - max) in float32, but the sum and then its log stored in 16-bit
    buffers (one rounding each), then (x - max) - log(sum) in float32, rounded once. Where the
    sum is near 1 its 16-bit rounding makes the log 0 or a 16-bit ulp, so the results near 0
    differ from a float32 computation by up to 0.41 relative in bfloat16 (OpInfo samples).
    Over any other dim eager's kernel rounds once, as the table's decomposition does."""
    if half_to_float or x.dim() == 0 or x.numel() == 0 or dim % x.dim() != x.dim() - 1:
        return NotImplemented
    shifted = aten._to_copy.default(x, dtype=torch.float32)
    shifted = aten.sub.Tensor(shifted, aten.amax.default(shifted, [dim], True))
    total = aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True)
    log_total = _round_through(aten.log.default(_round_through(total, x.dtype)), x.dtype)
    return aten._to_copy.default(aten.sub.Tensor(shifted, log_total), dtype=x.dtype)


def _lanes_16_bit() -> int:
    """Lanes of eager's Vectorized<BFloat16> / Vectorized<Half> on this CPU: 64-byte vectors
    where ATen dispatches to its AVX512 kernels, 32-byte ones otherwise."""
    return 32 if torch.backends.cpu.get_cpu_capability().startswith("AVX512") else 16


def _vectorized_positions(shape, dim, device):
    """Where eager's CPU softmax over a dim other than the last takes its vector path, as a
    bool tensor broadcasting against `shape` (size 1 along `dim`). The kernel runs
    parallel_for over the outer * inner positions, so each of the num_threads threads gets a
    contiguous chunk [b, e) of ceil(N / num_threads) positions; a thread scans its chunk in
    blocks of `lanes` positions, each block vectorized while it ends inside both its row of
    the inner dims and the chunk; the rest of a row (or of the chunk, once a block would pass
    its end) takes the scalar path."""
    outer = math.prod(shape[:dim])
    inner = math.prod(shape[dim + 1:])
    total = outer * inner
    threads = torch.get_num_threads()
    chunk = -(-total // threads) if threads > 1 and total > 1 else total
    lanes = _lanes_16_bit()
    p = aten.arange.default(total, dtype=torch.int64, device=device)

    def floor_to(t, n):  # t rounded down to a multiple of n
        return aten.mul.Tensor(aten.div.Tensor_mode(t, n, rounding_mode="floor"), n)

    begin = floor_to(p, chunk)
    end = aten.clamp_max.default(aten.add.Tensor(begin, chunk), total)
    row = floor_to(p, inner)
    scan = aten.maximum.default(begin, row)  # where the thread's scan of p's row starts
    block = aten.add.Tensor(scan, floor_to(aten.sub.Tensor(p, scan), lanes))
    in_row = aten.le.Scalar(aten.sub.Tensor(block, row), inner - lanes)
    in_chunk = aten.le.Tensor(aten.add.Tensor(block, lanes), end)
    mask = aten.logical_and.default(in_row, in_chunk)
    return aten.view.default(mask, list(shape[:dim]) + [1] + list(shape[dim + 1:]))


def _softmax(x, dim, half_to_float):
    """softmax over a dim other than the last as eager's CPU kernel computes a 16-bit input:
    exp(x - max) and its sum in float32; at vectorized positions exp / sum is rounded once,
    at scalar ones the kernel first stores exp in the output (rounded to the 16-bit dtype)
    and divides that by the sum (a 16-bit ulp from the other now and then). Which positions
    are vectorized depends on the thread count and the CPU's vector width (see
    _vectorized_positions), read when the graph is traced. Over the last dim eager's kernel
    rounds once, as the table's decomposition does."""
    if half_to_float or x.dim() == 0 or x.numel() == 0 or dim % x.dim() == x.dim() - 1:
        return NotImplemented
    dim %= x.dim()
    shifted = aten._to_copy.default(x, dtype=torch.float32)
    shifted = aten.sub.Tensor(shifted, aten.amax.default(shifted, [dim], True))
    exp = aten.exp.default(shifted)
    total = aten.sum.dim_IntList(exp, [dim], True)
    vector = aten.div.Tensor(exp, total)
    scalar = aten.div.Tensor(_round_through(exp, x.dtype), total)
    out = aten.where.self(_vectorized_positions(x.shape, dim, x.device), vector, scalar)
    return aten._to_copy.default(out, dtype=x.dtype)


def _in_dtype(value: float, dtype: torch.dtype) -> float:
    """The Python number `value` converted to `dtype` as C++'s static_cast does (through float
    for the 16-bit types), computed in Python: a decomposition runs while tracing, where a
    torch.tensor would become a graph constant."""
    if dtype == torch.float64:
        return float(value)
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    if dtype == torch.float16:
        return struct.unpack("<e", struct.pack("<e", single))[0]
    if dtype == torch.bfloat16:
        bits = struct.unpack("<I", struct.pack("<f", single))[0]
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16  # nearest, ties to even
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return single


def _count_in_dtype(count, dtype: torch.dtype):
    """An element count converted to `dtype` as _in_dtype converts a number. A symbolic count
    (issue 33) cannot be converted in Python without a guard on its value, which would make
    Dynamo compile the graph again at every size: it is converted by the graph instead, as a
    0-d tensor of `dtype`, which a 16-bit op reads as its float32 value, as it reads the
    Python number."""
    if not isinstance(count, torch.SymInt):
        return _in_dtype(count, dtype)
    as_float = aten.add.Tensor(aten.zeros.default([], dtype=torch.float32), count)
    return as_float if dtype == torch.float32 else aten._to_copy.default(as_float, dtype=dtype)


def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_rstd, new_running_mean, new_running_var) as eager's CPU kernel
    computes them for a 16-bit contiguous input, with parameters of dtype `params` (the
    parameters' dtype, else the input's):

    * per channel, sum(x) / N and then sum((x - mean)^2) around that float32 mean, both in
      float32, each stored as `params` (mean_p, var_sum_p);
    * var = var_sum_p / N and the unbiased var_sum_p / (N - 1) in `params` arithmetic (a 16-bit
      value divided by an integer converts the integer to the 16-bit type and rounds the
      quotient), save_rstd = 1 / sqrt(var + eps) in double, rounded to float32, then `params`;
    * the running statistics with momentum converted to `params`: the mean's update in
      `params` arithmetic (each product and the sum rounded), the variance's as
      float32(momentum * unbiased) + `params`((1 - momentum) * running_var), rounded once;
    * output = x * alpha + beta in float32, rounded once, where alpha = rstd * weight and
      beta = bias - mean * alpha (rstd from the rounded save_rstd in training; in evaluation
      1 / sqrt(running_var + eps) in float32, unrounded).

    Core ATen's (x - mean) * rstd * weight + bias, all in float32, differs where x is near the
    mean (bfloat16: 0.11 relative on OpInfo samples); rounding var_sum to bfloat16 moves rstd
    by a bfloat16 ulp (0.2 relative on OpInfo samples before it was modelled)."""
    channels = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    shape = [1, channels] + [1] * (input.dim() - 2)
    f32 = torch.float32
    params = next((t.dtype for t in (weight, running_mean) if t is not None), input.dtype)
    x = aten._to_copy.default(input, dtype=f32)
    new_mean, new_var = running_mean, running_var
    if training:
        count = input.numel() // channels
        mean = aten.div.Tensor(aten.sum.dim_IntList(x, dims), count)
        deviation = aten.sub.Tensor(x, aten.view.default(mean, shape))
        var_sum = aten.sum.dim_IntList(aten.mul.Tensor(deviation, deviation), dims)
        # `stats`: the dtype of the kernel's statistics buffers (see the docstring).
        stats = torch.bfloat16 if params == torch.bfloat16 else f32
        mean = aten._to_copy.default(mean, dtype=stats)
        var_sum = aten._to_copy.default(var_sum, dtype=stats)
        var = aten.div.Tensor(var_sum, _count_in_dtype(count, stats))
        rstd = aten.reciprocal.default(aten.sqrt.default(
            aten.add.Tensor(aten._to_copy.default(var, dtype=torch.float64), eps)))
        if eps == 0:
            # The kernel leaves rstd 0 where var + eps is 0.
            rstd = aten.where.self(aten.eq.Scalar(var, 0), aten.zeros_like.default(rstd), rstd)
        rstd = aten._to_copy.default(rstd, dtype=f32)
        rate = _in_dtype(momentum, stats)
        keep = _in_dtype(1 - rate, stats)  # 1 - momentum in the dtype's arithmetic
        if running_mean is not None:
            new_mean = aten._to_copy.default(
                aten.add.Tensor(aten.mul.Tensor(mean, rate), aten.mul.Tensor(
                    aten._to_copy.default(running_mean, dtype=stats), keep)),
                dtype=running_mean.dtype)
        if running_var is not None:
            unbiased = aten.div.Tensor(var_sum, _count_in_dtype(count - 1, stats))
            new_var = aten._to_copy.default(
                aten.add.Tensor(
                    aten.mul.Tensor(aten._to_copy.default(unbiased, dtype=f32), rate),
                    aten._to_copy.default(aten.mul.Tensor(
                        aten._to_copy.default(running_var, dtype=stats), keep), dtype=f32)),
                dtype=running_var.dtype)
        save_mean = aten._to_copy.default(mean, dtype=params)
        save_rstd = aten._to_copy.default(rstd, dtype=params)
        mean = aten._to_copy.default(save_mean, dtype=f32)
        invstd = aten._to_copy.default(save_rstd, dtype=f32)
    else:
        mean = aten._to_copy.default(running_mean, dtype=f32)
        invstd = aten.reciprocal.default(aten.sqrt.default(
            aten.add.Tensor(aten._to_copy.default(running_var, dtype=f32), eps)))
        save_mean = aten.new_zeros.default(input, [0], dtype=params)
        save_rstd = aten.new_zeros.default(input, [0], dtype=params)
    alpha = invstd
    if weight is not None:
        alpha = aten.mul.Tensor(alpha, aten._to_copy.default(weight, dtype=f32))
    beta = aten.neg.default(aten.mul.Tensor(mean, alpha))
    if bias is not None:
        beta = aten.add.Tensor(aten._to_copy.default(bias, dtype=f32), beta)
    out = aten.add.Tensor(aten.mul.Tensor(x, aten.view.default(alpha, shape)),
                          aten.view.default(beta, shape))
    return aten._to_copy.default(out, dtype=input.dtype), save_mean, save_rstd, new_mean, new_var


def _batch_norm_functional(input, weight, bias, running_mean, running_var, training, momentum,
                           eps):
    return _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def _batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    return _batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)[:3]


def _batch_norm_in_place(input, weight, bias, running_mean, running_var, training, momentum,
                         eps):
    out, save_mean, save_rstd, new_mean, new_var = _batch_norm(
        input, weight, bias, running_mean, running_var, training, momentum, eps)
    if training and running_mean is not None:
        running_mean.copy_(new_mean)
    if training and running_var is not None:
        running_var.copy_(new_var)
    return out, save_mean, save_rstd


def _batch_norm_no_stats(input, weight, bias, training, momentum, eps):
    return _batch_norm(input, weight, bias, None, None, True, momentum, eps)[:3]


# Op -> its composition for 16-bit inputs, rounding where eager's kernel does.
ROUNDED_AS_EAGER = {
    aten.logit.default: _logit,
    aten._log_softmax.default: _log_softmax,
    aten._softmax.default: _softmax,
    aten.linalg_cross.default: _linalg_cross,
    aten.addr.default: _addr,
    aten.soft_margin_loss.default: _soft_margin_loss,
    aten._native_batch_norm_legit_functional.default: _batch_norm_functional,
    aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training,
    aten._native_batch_norm_legit.default: _batch_norm_in_place,
    aten._native_batch_norm_legit.no_stats: _batch_norm_no_stats,
}


def _is_16_bit(args, kwargs) -> bool:
    return any(isinstance(x, torch.Tensor) and x.dtype in _HALF
               for x in pytree.tree_leaves((args, kwargs)))


def _by_dtype(in_dtype, otherwise):
    @functools.wraps(in_dtype)
    def run(*args, **kwargs):
        if _is_16_bit(args, kwargs):
            result = in_dtype(*args, **kwargs)
            if result is not NotImplemented:
                return result
        return otherwise(*args, **kwargs)

    return run


def round_as_eager(table: dict) -> dict:
    """`table` with the decompositions of ROUNDED_AS_EAGER's ops taken from there for 16-bit
    inputs."""
    out = dict(table)
    for op, in_dtype in ROUNDED_AS_EAGER.items():
        if op in table:
            out[op] = _by_dtype(in_dtype, table[op])
    return out
