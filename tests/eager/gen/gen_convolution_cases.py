# Generates tests/eager/convolution_torch_cases.inc (a C++ raw string literal, parsed by
# convolution_torch_cases.h): eager convolution cases (issue 15) whose expected results come
# from PyTorch. Run with the torch venv from this directory:
#   python gen_convolution_cases.py > ../convolution_torch_cases.inc
# Every case is one torch.ops.aten.convolution.default call. Its operands are not stored: they
# are a function of (seed, element position) that convolution_torch_cases.h computes the same
# way (operand_values), so large cases stay small here; the expected values are torch's CPU
# eager results (every `every`-th element of the result in row-major order).
import math
import sys

import torch

C = torch.ops.aten.convolution.default
DT = {'f32': torch.float32, 'f64': torch.float64, 'f16': torch.float16, 'bf16': torch.bfloat16,
      'i64': torch.int64, 'i32': torch.int32, 'i16': torch.int16, 'i8': torch.int8,
      'u8': torch.uint8}
MASK = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def value(kind, seed, position):
    """Element `position` of an operand drawn with `seed` (convolution_torch_cases.h mirrors
    this): 'dyadic' multiples of 1/8 in [-2, 2] (every product and sum is exact in float32, so
    torch's result is exact in any order), 'positive' doubles in [0.25, 2) (no cancellation, so
    a relative tolerance applies), 'int' integers in [-16, 16], 'wide' any int64 (wrapped to
    the dtype: sums overflow)."""
    h = splitmix64(((seed * 0x9E3779B97F4A7C15) + position) & MASK)
    if kind == 'dyadic':
        return ((h >> 40) % 33 - 16) / 8.0
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


lines = []


def case(name, dtype, kind, x, w, b, stride, padding, dilation, transposed, output_padding,
         groups, every=1):
    seed = len(lines) * 3 + 1
    xt = operand(kind, dtype, seed, x)
    wt = operand(kind, dtype, seed + 1, w)
    bt = None if b is None else operand(kind, dtype, seed + 2, [b])
    r = C(xt, wt, bt, stride, padding, dilation, transposed, output_padding, groups)
    flat = r.flatten()[::every]
    if r.dtype.is_floating_point:
        # Exact when the sums are exact (dyadic values) and torch's result is the float64 result
        # rounded once, so any correct order of summation gives it; otherwise compared within
        # the tolerance.
        ref = C(xt.double(), wt.double(), None if bt is None else bt.double(), stride, padding,
                dilation, transposed, output_padding, groups).to(r.dtype)
        exact = kind == 'dyadic' and torch.equal(r, ref)
        values = [float(v) for v in flat.double().tolist()]
    else:
        exact = True
        values = [int(v) for v in flat.tolist()]
    if kind == 'dyadic' and not exact:
        print(f'{name}: a dyadic case is not exact in torch', file=sys.stderr)
    lines.append('|'.join([
        name, dtype, text_list(x), text_list(w), '-' if b is None else str(b), text_list(stride),
        text_list(padding), text_list(dilation), '1' if transposed else '0',
        text_list(output_padding), str(groups), kind, str(seed), str(every),
        'exact' if exact else 'approx', text_list(r.shape),
        ','.join(text_value(v) for v in values)]))


for dt in ('f32', 'f64'):
    d = 'dyadic'
    # 1-D: plain with a bias; strided, padded and dilated without.
    case(f'conv1d.{dt}', dt, d, [2, 3, 11], [4, 3, 3], 4, [1], [0], [1], False, [0], 1)
    case(f'conv1d_strided.{dt}', dt, d, [2, 3, 12], [4, 3, 3], None, [2], [1], [2], False, [0], 1)
    # 2-D: padded with a bias; per-dim stride, padding and dilation; a padding wider than the
    # kernel (outputs that see only padding get the bias); 1x1; single-value lists.
    case(f'conv2d.{dt}', dt, d, [2, 4, 7, 6], [6, 4, 3, 3], 6, [1, 1], [1, 1], [1, 1], False,
         [0, 0], 1)
    case(f'conv2d_per_dim.{dt}', dt, d, [2, 3, 9, 8], [5, 3, 3, 2], None, [2, 1], [0, 2], [1, 2],
         False, [0, 0], 1)
    case(f'conv2d_wide_padding.{dt}', dt, d, [1, 2, 3, 4], [3, 2, 2, 2], 3, [1, 2], [3, 2],
         [1, 1], False, [0, 0], 1)
    case(f'conv2d_1x1.{dt}', dt, d, [2, 8, 5, 5], [4, 8, 1, 1], 4, [1, 1], [0, 0], [1, 1], False,
         [0, 0], 1)
    case(f'conv2d_single_values.{dt}', dt, d, [1, 3, 9, 9], [4, 3, 3, 3], None, [2], [1], [2],
         False, [0], 1)
    # output_padding of a forward convolution is ignored.
    case(f'conv2d_output_padding_ignored.{dt}', dt, d, [1, 2, 5, 5], [2, 2, 3, 3], 2, [1, 1],
         [0, 0], [1, 1], False, [3, 1], 1)
    # Groups: 2 groups; depthwise; depthwise with a channel multiplier.
    case(f'conv2d_groups.{dt}', dt, d, [1, 4, 6, 6], [6, 2, 3, 2], 6, [1, 1], [0, 1], [1, 1],
         False, [0, 0], 2)
    case(f'conv2d_depthwise.{dt}', dt, d, [2, 5, 8, 8], [5, 1, 3, 3], 5, [1, 1], [1, 1], [1, 1],
         False, [0, 0], 5)
    case(f'conv2d_depthwise_multiplier.{dt}', dt, d, [1, 3, 6, 7], [6, 1, 3, 3], None, [2, 2],
         [1, 1], [1, 1], False, [0, 0], 3)
    # 3-D: per-dim parameters; grouped and dilated.
    case(f'conv3d.{dt}', dt, d, [1, 2, 5, 6, 4], [3, 2, 2, 3, 2], 3, [1, 2, 1], [1, 0, 1],
         [1, 1, 1], False, [0, 0, 0], 1)
    case(f'conv3d_groups_dilated.{dt}', dt, d, [2, 4, 6, 5, 5], [4, 2, 2, 2, 2], None, [1],
         [1], [2], False, [0], 2)
    # Transposed: 1-D with output_padding; 2-D per dim; grouped and dilated; depthwise; 3-D;
    # output_padding not below the dilation (only below the stride) and the other way round.
    case(f'conv_transpose1d.{dt}', dt, d, [2, 4, 5], [4, 2, 3], 4, [2], [1], [1], True, [1], 2)
    case(f'conv_transpose2d.{dt}', dt, d, [2, 4, 4, 5], [4, 3, 3, 3], 3, [2, 3], [1, 0], [1, 1],
         True, [1, 2], 1)
    case(f'conv_transpose2d_groups_dilated.{dt}', dt, d, [1, 4, 5, 5], [4, 3, 3, 3], None,
         [2, 2], [1, 2], [2, 2], True, [1, 1], 2)
    case(f'conv_transpose2d_depthwise.{dt}', dt, d, [1, 3, 4, 4], [3, 1, 3, 3], 3, [2, 2],
         [1, 1], [1, 1], True, [1, 1], 3)
    case(f'conv_transpose3d.{dt}', dt, d, [1, 2, 3, 3, 2], [2, 3, 2, 2, 2], 3, [2, 1, 2],
         [0, 1, 0], [1, 1, 1], True, [1, 0, 1], 1)
    case(f'conv_transpose2d_output_padding_vs_stride.{dt}', dt, d, [1, 2, 3, 3], [2, 2, 2, 2],
         None, [3, 1], [0, 0], [1, 3], True, [2, 2], 1)
    # Empty inputs: a batch of 0 (forward and transposed) and no input channels, whose result
    # PyTorch gives no channels either.
    case(f'conv2d_empty_batch.{dt}', dt, d, [0, 4, 5, 5], [6, 4, 3, 3], 6, [1, 1], [0, 0],
         [1, 1], False, [0, 0], 1)
    case(f'conv_transpose2d_empty_batch.{dt}', dt, d, [0, 4, 5, 5], [4, 3, 3, 3], 3, [2, 2],
         [0, 0], [1, 1], True, [1, 1], 1)
    case(f'conv2d_no_channels.{dt}', dt, d, [2, 0, 5, 5], [6, 0, 3, 3], 6, [1, 1], [0, 0],
         [1, 1], False, [0, 0], 1)
    # Values with rounding: positive, so the tolerance is relative to the result; a long
    # reduction (4 * 64 * 9 products).
    p = 'positive'
    case(f'conv2d_rounding.{dt}', dt, p, [1, 64, 6, 6], [8, 64, 3, 3], 8, [1, 1], [1, 1], [1, 1],
         False, [0, 0], 1)
    case(f'conv_transpose2d_rounding.{dt}', dt, p, [1, 32, 4, 4], [32, 8, 3, 3], 8, [2, 2],
         [1, 1], [1, 1], True, [1, 1], 1)
    # About 1e7 multiply-adds (every 61st element of the result is checked).
    case(f'conv2d_large.{dt}', dt, d, [2, 16, 32, 32], [32, 16, 3, 3], 32, [1, 1], [1, 1],
         [1, 1], False, [0, 0], 1, every=61)

# The 16-bit floats: torch accumulates in float32 and rounds once, exact for dyadic values.
for dt in ('f16', 'bf16'):
    case(f'conv2d.{dt}', dt, 'dyadic', [2, 4, 7, 6], [6, 4, 3, 3], 6, [1, 1], [1, 1], [1, 1],
         False, [0, 0], 1)
    case(f'conv_transpose2d.{dt}', dt, 'dyadic', [2, 4, 4, 5], [4, 3, 3, 3], 3, [2, 3], [1, 0],
         [1, 1], True, [1, 2], 1)
# Integers: int64 everywhere (a transposed dilated case too), the narrower ones forward and
# undilated; 'wide' values overflow every sum, which wraps.
case('conv2d_groups.i64', 'i64', 'int', [1, 4, 6, 6], [6, 2, 3, 2], 6, [2, 1], [1, 0], [1, 1],
     False, [0, 0], 2)
case('conv_transpose2d_dilated.i64', 'i64', 'int', [1, 4, 5, 5], [4, 3, 3, 3], 6, [2, 2],
     [1, 2], [2, 2], True, [1, 1], 2)
case('conv2d_wrap.i64', 'i64', 'wide', [2, 3, 5, 5], [4, 3, 3, 3], 4, [1, 1], [1, 1], [1, 1],
     False, [0, 0], 1)
case('conv1d_wrap.i8', 'i8', 'wide', [2, 4, 9], [6, 2, 3], 6, [2], [1], [1], False, [0], 2)
case('conv3d_wrap.i32', 'i32', 'wide', [1, 2, 4, 4, 3], [3, 2, 2, 2, 2], 3, [1], [0], [1],
     False, [0], 1)
case('conv2d_wrap.u8', 'u8', 'wide', [1, 3, 5, 5], [3, 1, 3, 3], 3, [1, 1], [1, 1], [1, 1],
     False, [0, 0], 3)
case('conv2d_wrap.i16', 'i16', 'wide', [1, 2, 4, 4], [2, 2, 2, 2], None, [1, 1], [0, 0],
     [1, 1], False, [0, 0], 1)

print('// Generated by tests/eager/gen/gen_convolution_cases.py with torch', torch.__version__)
print('// from PyTorch CPU eager results; do not edit by hand.')
print('R"(')
for line in lines:
    print(line)
print(')"')
