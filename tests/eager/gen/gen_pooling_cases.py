# Generates tests/eager/pooling_torch_cases.inc (a C++ raw string literal, parsed by
# pooling_torch_cases.h): eager pooling cases whose expected results come from PyTorch. Run
# with the torch venv from this directory:
#   python gen_pooling_cases.py > ../pooling_torch_cases.inc
# Every case is one torch.ops.aten call (max_pool2d_with_indices, avg_pool2d or
# _adaptive_avg_pool2d). Its input is not stored: it is a function of (seed, element position)
# that pooling_torch_cases.h computes the same way (pooling_value), and the expected values
# (and max pooling's indices) are torch's CPU eager results, all of them: the eager oracle
# computes what torch computes bit for bit (eager/pooling.cpp), so they compare exactly. The
# generator checks that torch gives the same results for a channels-last copy of the input.
# Backward cases (max_pool2d_with_indices_backward, avg_pool2d_backward,
# _adaptive_avg_pool2d_backward) draw grad_output the same way (its own kind, seed + 1) and
# store torch's gradient of the input; max pooling's indices are the forward's over the same
# input (the oracle's forward gives torch's indices bit for bit).
import math
import sys

import torch

A = torch.ops.aten
DT = {'f32': torch.float32, 'f64': torch.float64, 'f16': torch.float16, 'bf16': torch.bfloat16,
      'i64': torch.int64, 'i32': torch.int32, 'i16': torch.int16, 'i8': torch.int8,
      'u8': torch.uint8}
MASK = (1 << 64) - 1
COARSE = [-1.0, -0.5, 0.0, 0.5, 1.0, math.nan, -math.inf, math.inf]


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def value(kind, seed, position):
    """Element `position` of an input drawn with `seed` (pooling_torch_cases.h mirrors this):
    'dyadic' multiples of 1/8 in [-2, 2] (ties in most windows), 'coarse' one of -1, -0.5, 0,
    0.5, 1, NaN, -inf, inf (several NaNs in a window), 'neginf' -inf with a dyadic value at
    every fifth position or so (windows of nothing but -inf), 'positive' doubles in [0.25, 2)
    (sums that round), 'int' integers in [-16, 16], 'wide' any int64 (wrapped to the dtype:
    sums overflow)."""
    h = splitmix64(((seed * 0x9E3779B97F4A7C15) + position) & MASK)
    dyadic = ((h >> 40) % 33 - 16) / 8.0
    if kind == 'dyadic':
        return dyadic
    if kind == 'coarse':
        return COARSE[(h >> 40) % 8]
    if kind == 'neginf':
        return dyadic if (h >> 20) % 5 == 0 else -math.inf
    if kind == 'positive':
        return 0.25 + (h >> 11) * 2.0 ** -53 * 1.75
    if kind == 'int':
        return int((h >> 40) % 33) - 16
    if kind == 'wide':
        return h - (1 << 64) if h >= 1 << 63 else h
    raise ValueError(kind)


def operand(kind, dtype, seed, sizes):
    n = math.prod(sizes)
    vals = [value(kind, seed, p) for p in range(n)]
    if kind in ('int', 'wide'):
        return torch.tensor(vals, dtype=torch.int64).to(DT[dtype]).reshape(sizes)
    return torch.tensor(vals, dtype=torch.float64).to(DT[dtype]).reshape(sizes)


def text_value(v):
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return 'nan'
    if math.isinf(v):
        return 'inf' if v > 0 else '-inf'
    return repr(v)


def text_list(values):
    return ','.join(str(v) for v in values)


def channels_last(x):
    if x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x.permute(1, 2, 0).contiguous().permute(2, 0, 1)  # [C, H, W] stored as [H, W, C]


def same(a, b):
    return torch.equal(a, b) if not a.dtype.is_floating_point else bool(
        ((a == b) | (a.isnan() & b.isnan())).all())


lines = []


def case(name, op, dtype, kind, sizes, args, stax_args):
    """One call op(x, *args); stax_args is the same call's argument text in the Stax text
    format (after `x, `)."""
    seed = len(lines) * 2 + 1
    x = operand(kind, dtype, seed, sizes)
    fn = getattr(A, op).default
    r = fn(x, *args)
    r_cl = fn(channels_last(x), *args)
    results = list(r) if isinstance(r, tuple) else [r]
    results_cl = list(r_cl) if isinstance(r_cl, tuple) else [r_cl]
    for a, b in zip(results, results_cl):
        if not same(a, b):
            # Seen for float64 global averages: torch's channels-last kernel is one ulp off
            # its contiguous one, which the oracle follows.
            print(f'note: {name}: torch\'s channels-last result differs', file=sys.stderr)
    fields = [name, op, dtype, text_list(sizes), stax_args, kind, str(seed),
              text_list(results[0].shape)]
    for t in results:
        flat = t.flatten()
        if t.dtype.is_floating_point:
            fields.append(','.join(text_value(float(v)) for v in flat.double().tolist()))
        else:
            fields.append(','.join(str(int(v)) for v in flat.tolist()))
    lines.append('|'.join(fields))


def backward_case(name, op, dtype, kind, sizes, args, stax_args, grad_kind):
    """One backward call op(g, x, *args) (max pooling: op(g, x, *args, indices)), g drawn
    with grad_kind and seed + 1 in the forward result's sizes. Fields: those of case() (the
    result sizes are x's), then GRAD KIND|GRAD SIZES."""
    seed = len(lines) * 2 + 1
    x = operand(kind, dtype, seed, sizes)
    forward = getattr(A, op[:-len('_backward')]).default
    r = forward(x, *args)
    out = r[0] if isinstance(r, tuple) else r
    g = operand(grad_kind, dtype, seed + 1, list(out.shape))
    fn = getattr(A, op).default
    extra = [r[1]] if isinstance(r, tuple) else []
    gi = fn(g, x, *args, *extra)
    extra_cl = [channels_last(r[1])] if isinstance(r, tuple) else []
    gi_cl = fn(channels_last(g), channels_last(x), *args, *extra_cl)
    if not same(gi, gi_cl):
        print(f'note: {name}: torch\'s channels-last gradient differs', file=sys.stderr)
    fields = [name, op, dtype, text_list(sizes), stax_args, kind, str(seed),
              text_list(gi.shape)]
    flat = gi.flatten()
    if gi.dtype.is_floating_point:
        fields.append(','.join(text_value(float(v)) for v in flat.double().tolist()))
    else:
        fields.append(','.join(str(int(v)) for v in flat.tolist()))
    fields += [grad_kind, text_list(out.shape)]
    lines.append('|'.join(fields))


def max_pool(name, dtype, kind, sizes, kernel, stride=(), padding=(0,), dilation=(1,),
             ceil_mode=False):
    args = [list(kernel), list(stride), list(padding), list(dilation), ceil_mode]
    text = ', '.join(str(list(a)) for a in args[:4]) + f', {ceil_mode}'
    case(name, 'max_pool2d_with_indices', dtype, kind, sizes, args, text)


def avg_pool(name, dtype, kind, sizes, kernel, stride=(), padding=(0,), ceil_mode=False,
             count_include_pad=True, divisor_override=None):
    args = [list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
            divisor_override]
    text = (', '.join(str(list(a)) for a in args[:3]) +
            f', {ceil_mode}, {count_include_pad}, {divisor_override}')
    case(name, 'avg_pool2d', dtype, kind, sizes, args, text)


def adaptive(name, dtype, kind, sizes, output_size):
    case(name, '_adaptive_avg_pool2d', dtype, kind, sizes, [list(output_size)],
         str(list(output_size)))


def max_backward(name, dtype, kind, grad_kind, sizes, kernel, stride, padding=(0,),
                 dilation=(1,), ceil_mode=False):
    args = [list(kernel), list(stride), list(padding), list(dilation), ceil_mode]
    text = ', '.join(str(list(a)) for a in args[:4]) + f', {ceil_mode}'
    backward_case(name, 'max_pool2d_with_indices_backward', dtype, kind, sizes, args, text,
                  grad_kind)


def avg_backward(name, dtype, kind, grad_kind, sizes, kernel, stride, padding=(0,),
                 ceil_mode=False, count_include_pad=True, divisor_override=None):
    args = [list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
            divisor_override]
    text = (', '.join(str(list(a)) for a in args[:3]) +
            f', {ceil_mode}, {count_include_pad}, {divisor_override}')
    backward_case(name, 'avg_pool2d_backward', dtype, kind, sizes, args, text, grad_kind)


def adaptive_backward(name, dtype, kind, grad_kind, sizes, output_size):
    # The forward's output_size is the only argument; the backward takes it from g.
    seed = len(lines) * 2 + 1
    x = operand(kind, dtype, seed, sizes)
    out = list(sizes[:-2]) + list(output_size)
    g = operand(grad_kind, dtype, seed + 1, out)
    gi = A._adaptive_avg_pool2d_backward.default(g, x)
    gi_cl = A._adaptive_avg_pool2d_backward.default(channels_last(g), channels_last(x))
    if not same(gi, gi_cl):
        print(f'note: {name}: torch\'s channels-last gradient differs', file=sys.stderr)
    fields = [name, '_adaptive_avg_pool2d_backward', dtype, text_list(sizes), '', kind,
              str(seed), text_list(gi.shape),
              ','.join(text_value(float(v)) for v in gi.flatten().double().tolist()),
              grad_kind, text_list(out)]
    lines.append('|'.join(fields))


for dt in ('f32', 'f64', 'bf16', 'f16'):
    # ResNet's stem pool; ties (dyadic values) take the first maximum.
    max_pool(f'max_resnet.{dt}', dt, 'dyadic', [2, 3, 13, 11], [3, 3], [2, 2], [1, 1])
    # NaNs (the last one of a window wins) and infinities.
    max_pool(f'max_nan.{dt}', dt, 'coarse', [2, 2, 9, 10], [3, 2], [1, 2], [1, 1])
    # Windows of only -inf: the first position inside the input (padded and dilated).
    max_pool(f'max_neginf.{dt}', dt, 'neginf', [1, 3, 8, 9], [3, 3], [1, 1], [1, 1])
    max_pool(f'max_neginf_dilated.{dt}', dt, 'neginf', [1, 2, 9, 8], [3, 2], [2, 1], [1, 1],
             [2, 3], True)
    # ceil_mode, per-dim parameters, 3-D input.
    max_pool(f'max_ceil.{dt}', dt, 'dyadic', [3, 10, 7], [2, 3], [2, 2], [1, 1], [1, 1], True)
    avg_pool(f'avg_resnet.{dt}', dt, 'positive', [2, 3, 13, 11], [3, 3], [2, 2], [1, 1])
    avg_pool(f'avg_ceil_exclude_pad.{dt}', dt, 'positive', [2, 2, 9, 10], [3, 2], [2, 3],
             [1, 1], True, False)
    avg_pool(f'avg_ceil_include_pad.{dt}', dt, 'positive', [1, 3, 8, 8], [4, 4], [3, 3], [2, 2],
             True, True)
    avg_pool(f'avg_divisor.{dt}', dt, 'dyadic', [3, 7, 9], [2, 3], [1, 2], [1, 1], True, True,
             -5)
    adaptive(f'adaptive_uneven.{dt}', dt, 'positive', [2, 3, 7, 9], [3, 4])
    adaptive(f'adaptive_global.{dt}', dt, 'positive', [2, 5, 7, 7], [1, 1])
    adaptive(f'adaptive_upsample.{dt}', dt, 'dyadic', [3, 5, 3], [7, 5])

# Long windows, in float32 (rounding in the sums).
avg_pool('avg_long.f32', 'f32', 'positive', [1, 2, 30, 30], [15, 15], [5, 5], [7, 7])
adaptive('adaptive_long.f32', 'f32', 'positive', [1, 2, 41, 37], [2, 3])
# Integers: max pool over every integer dtype; avg_pool2d on i64 (wrapping sums, division
# truncated toward zero, a negative divisor).
for dt in ('i64', 'i32', 'i16', 'i8', 'u8'):
    max_pool(f'max_int.{dt}', dt, 'int', [2, 3, 9, 8], [3, 3], [2, 1], [1, 1], [1, 2], True)
    max_pool(f'max_wide.{dt}', dt, 'wide', [1, 2, 7, 7], [2, 2], [1, 1], [1, 1])
avg_pool('avg_int.i64', 'i64', 'int', [2, 3, 9, 8], [3, 3], [2, 2], [1, 1], True, False)
avg_pool('avg_wrap.i64', 'i64', 'wide', [1, 2, 6, 6], [2, 3], [2, 2], [1, 1], False, True, -3)
# Empty results: an empty batch, an adaptive output of size 0.
max_pool('max_empty_batch.f32', 'f32', 'dyadic', [0, 3, 5, 5], [2, 2])
adaptive('adaptive_empty.f32', 'f32', 'dyadic', [1, 2, 5, 5], [0, 3])

# Backward: overlapping windows (several outputs add to one element, in torch's output scan
# order, 16-bit sums rounded after each addition), ties (dyadic inputs: the first maximum's
# position takes the gradient), windows of only -inf, dilation, ceil_mode, the divisor rules.
for dt in ('f32', 'f64', 'bf16', 'f16'):
    max_backward(f'max_bw_resnet.{dt}', dt, 'dyadic', 'positive', [2, 3, 13, 11], [3, 3], [2, 2],
                 [1, 1])
    max_backward(f'max_bw_overlap.{dt}', dt, 'dyadic', 'coarse', [2, 2, 7, 8], [3, 3], [1, 1],
                 [1, 1])
    max_backward(f'max_bw_dilated_ceil.{dt}', dt, 'dyadic', 'dyadic', [1, 2, 9, 8], [3, 2],
                 [2, 1], [1, 1], [2, 3], True)
    max_backward(f'max_bw_neginf.{dt}', dt, 'neginf', 'positive', [1, 3, 8, 9], [3, 3], [1, 1],
                 [1, 1])
    max_backward(f'max_bw_3d.{dt}', dt, 'dyadic', 'positive', [3, 10, 7], [2, 3], [2, 2],
                 [1, 1], [1, 1], True)
    avg_backward(f'avg_bw_resnet.{dt}', dt, 'positive', 'positive', [2, 3, 13, 11], [3, 3],
                 [2, 2], [1, 1])
    avg_backward(f'avg_bw_ceil_exclude_pad.{dt}', dt, 'positive', 'coarse', [2, 2, 9, 10],
                 [3, 2], [2, 3], [1, 1], True, False)
    avg_backward(f'avg_bw_ceil_include_pad.{dt}', dt, 'positive', 'positive', [1, 3, 8, 8],
                 [4, 4], [3, 3], [2, 2], True, True)
    avg_backward(f'avg_bw_divisor.{dt}', dt, 'dyadic', 'positive', [3, 7, 9], [2, 3], [1, 2],
                 [1, 1], True, True, -5)
    adaptive_backward(f'adaptive_bw_uneven.{dt}', dt, 'positive', 'positive', [2, 3, 7, 9],
                      [3, 4])
    adaptive_backward(f'adaptive_bw_global.{dt}', dt, 'positive', 'positive', [2, 5, 7, 7],
                      [1, 1])
    adaptive_backward(f'adaptive_bw_upsample.{dt}', dt, 'dyadic', 'positive', [3, 5, 3], [7, 5])
# Long windows (more offsets than the lowering adds one by one).
for dt in ('f32', 'bf16'):
    avg_backward(f'avg_bw_long.{dt}', dt, 'positive', 'positive', [1, 2, 30, 30], [15, 15],
                 [5, 5], [7, 7])
    max_backward(f'max_bw_long.{dt}', dt, 'dyadic', 'positive', [1, 2, 20, 20], [9, 9], [2, 2],
                 [4, 4])
adaptive_backward('adaptive_bw_long.f32', 'f32', 'positive', 'positive', [1, 2, 5, 4],
                  [41, 37])
# int64 avg_pool2d_backward: truncating quotients, wrapping sums, a negative divisor.
avg_backward('avg_bw_int.i64', 'i64', 'int', 'int', [2, 3, 9, 8], [3, 3], [2, 2], [1, 1], True,
             False)
avg_backward('avg_bw_wrap.i64', 'i64', 'int', 'wide', [1, 2, 6, 6], [2, 3], [2, 2], [1, 1],
             False, True, -3)
# Empty batches.
max_backward('max_bw_empty_batch.f32', 'f32', 'dyadic', 'positive', [0, 3, 5, 5], [2, 2],
             [2, 2])
adaptive_backward('adaptive_bw_empty_batch.f32', 'f32', 'dyadic', 'positive', [0, 2, 5, 5],
                  [2, 3])

print('// Generated by tests/eager/gen/gen_pooling_cases.py with torch', torch.__version__)
print('// from PyTorch CPU eager results; do not edit by hand.')
print('R"(')
for line in lines:
    print(line)
print(')"')
