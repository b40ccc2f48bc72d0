# Generates tests/eager/scatter_torch_cases.inc (a C++ raw string literal, parsed by
# scatter_torch_cases.h): eager cases of the scatters (index_put, index_add, scatter.src,
# scatter.value, scatter_add, scatter_reduce) whose expected results come from PyTorch. Run
# with the torch venv from this directory:
#   python gen_scatter_cases.py > ../scatter_torch_cases.inc
# Every case is one torch.ops.aten call on CPU. Its operands are either drawn, a function of
# (kind, seed, element position) that scatter_torch_cases.h computes the same way (the kinds
# of gen_pooling_cases.py's value(), plus 'bits': 0 or 1), or given (index tensors, values
# chosen to round). A strided operand holds the same logical values with other strides (a
# transposed layout). The expected values are torch's result, all of them, compared exactly.
import math
import sys

import torch

MASK = (1 << 64) - 1

# The draws of gen_pooling_cases.py's value() (which runs its cases when imported), which
# pooling_torch_cases.h's pooling_value() mirrors; scatter_torch_cases.h adds 'bits'.
DT = {'f32': torch.float32, 'f64': torch.float64, 'f16': torch.float16, 'bf16': torch.bfloat16,
      'i64': torch.int64, 'i32': torch.int32, 'i16': torch.int16, 'i8': torch.int8,
      'u8': torch.uint8, 'bool': torch.bool}
COARSE = [-1.0, -0.5, 0.0, 0.5, 1.0, math.nan, -math.inf, math.inf]


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def text_value(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return 'nan'
    if math.isinf(v):
        return 'inf' if v > 0 else '-inf'
    return repr(v)


A = torch.ops.aten
INT_KINDS = ('int', 'wide', 'bits')


def value(kind, seed, position):
    """Element `position` of an operand drawn with `seed` (scatter_value() in
    scatter_torch_cases.h): 'dyadic' multiples of 1/8 in [-2, 2], 'coarse' one of -1, -0.5, 0,
    0.5, 1, NaN, -inf, inf, 'positive' doubles in [0.25, 2) (sums that round), 'int' integers
    in [-16, 16], 'wide' any int64 (wrapped to the dtype: sums overflow), 'bits' 0 or 1."""
    h = splitmix64(((seed * 0x9E3779B97F4A7C15) + position) & MASK)
    if kind == 'dyadic':
        return ((h >> 40) % 33 - 16) / 8.0
    if kind == 'coarse':
        return COARSE[(h >> 40) % 8]
    if kind == 'positive':
        return 0.25 + (h >> 11) * 2.0 ** -53 * 1.75
    if kind == 'int':
        return int((h >> 40) % 33) - 16
    if kind == 'wide':
        return h - (1 << 64) if h >= 1 << 63 else h
    if kind == 'bits':
        return int((h >> 40) % 2)
    raise ValueError(kind)


class Operand:
    def __init__(self, name, dtype, sizes, kind=None, values=None, strides=None):
        self.name, self.dtype, self.sizes = name, dtype, list(sizes)
        self.kind, self.values, self.strides = kind, values, strides
        self.seed = 0

    def tensor(self):
        n = math.prod(self.sizes)
        if self.values is not None:
            vals = list(self.values)
            assert len(vals) == n, (self.name, vals, self.sizes)
        else:
            vals = [value(self.kind, self.seed, p) for p in range(n)]
        is_int = self.values is None and self.kind in INT_KINDS
        is_int = is_int or (self.values is not None and all(isinstance(v, int) for v in vals))
        base = torch.tensor(vals, dtype=torch.int64 if is_int else torch.float64)
        t = base.to(DT[self.dtype]).reshape(self.sizes)
        if self.strides is not None:
            s = torch.empty_strided(self.sizes, self.strides, dtype=t.dtype)
            s.copy_(t)
            assert s.stride() == tuple(self.strides)
            t = s
        return t

    def text(self):
        sizes = '[' + ','.join(str(s) for s in self.sizes) + ']'
        strides = '-' if self.strides is None else '[' + ','.join(
            str(s) for s in self.strides) + ']'
        if self.values is not None:
            source = '=' + ','.join(text_value(v) for v in self.values)
        else:
            source = f'{self.kind}:{self.seed}'
        return ' '.join([self.name, self.dtype, sizes, strides, source])


def x(dtype, sizes, kind=None, values=None, strides=None):
    return Operand('x', dtype, sizes, kind, values, strides)


def idx(values, sizes=None, dtype='i64', name='i'):
    sizes = [len(values)] if sizes is None else sizes
    return Operand(name, dtype, sizes, values=list(values))


def v(dtype, sizes, kind=None, values=None, strides=None):
    return Operand('v', dtype, sizes, kind, values, strides)


lines = []
names = set()


def case(name, operands, body, call):
    """body: the Stax statement(s) computing y (';' between statements); call: torch's same
    call, given the operands' tensors by name."""
    assert name not in names, name
    names.add(name)
    seed = len(lines) * 4 + 1
    for k, o in enumerate(operands):
        o.seed = seed + k
    tensors = {o.name: o.tensor() for o in operands}
    r = call(tensors)
    assert r.dtype == tensors['x'].dtype
    flat = r.flatten()
    if r.dtype.is_floating_point:
        expected = ','.join(text_value(float(e)) for e in flat.double().tolist())
    else:
        expected = ','.join(str(int(e)) for e in flat.tolist())
    fields = [name, ';'.join(o.text() for o in operands), body,
              ','.join(str(s) for s in r.shape), expected]
    lines.append('|'.join(fields))


def text_scalar(s):
    if isinstance(s, bool):
        return 'True' if s else 'False'
    return text_value(s)


def index_put(name, xo, positions, io, vo, accumulate=None):
    """positions: the indices list, each index tensor's place marked by its operand's name
    and None elsewhere; io: the index operand, or a list of them (several tensor indices)."""
    ios = io if isinstance(io, list) else [io]
    listed = '[' + ', '.join('None' if p is None else p for p in positions) + ']'
    args = f'x, {listed}, v' + ('' if accumulate is None else f', {accumulate}')

    def call(t):
        indices = [None if p is None else t[p] for p in positions]
        return A.index_put.default(t['x'], indices, t['v'], bool(accumulate))
    case(name, [xo, *ios, vo], f'y = index_put({args})', call)


def index_add(name, xo, dim, io, vo, alpha=None):
    extra = '' if alpha is None else f', alpha={text_scalar(alpha)}'

    def call(t):
        if alpha is None:
            return A.index_add.default(t['x'], dim, t['i'], t['v'])
        return A.index_add.default(t['x'], dim, t['i'], t['v'], alpha=alpha)
    case(name, [xo, io, vo], f'y = index_add(x, {dim}, i, v{extra})', call)


def scatter(name, xo, dim, io, vo):
    case(name, [xo, io, vo], f'y = scatter(x, {dim}, i, v)',
         lambda t: A.scatter.src(t['x'], dim, t['i'], t['v']))


def scatter_value(name, xo, dim, io, s):
    case(name, [xo, io], f'y = scatter(x, {dim}, i, {text_scalar(s)})',
         lambda t: A.scatter.value(t['x'], dim, t['i'], s))


def scatter_add(name, xo, dim, io, vo):
    case(name, [xo, io, vo], f'y = scatter_add(x, {dim}, i, v)',
         lambda t: A.scatter_add.default(t['x'], dim, t['i'], t['v']))


def scatter_reduce(name, xo, dim, io, vo, reduce, include_self=True):
    extra = '' if include_self else ', include_self=False'
    case(name, [xo, io, vo], f"y = scatter_reduce(x, {dim}, i, v, '{reduce}'{extra})",
         lambda t: A.scatter_reduce.two(t['x'], dim, t['i'], t['v'], reduce,
                                        include_self=include_self))


FLOATS = ('f32', 'f64', 'f16', 'bf16')
INTS = ('i64', 'i32', 'i16', 'i8', 'u8')
ALL = FLOATS + INTS + ('bool',)


def kind_of(dt, wide=False):
    if dt == 'bool':
        return 'bits'
    if dt in INTS:
        return 'wide' if wide else 'int'
    return 'dyadic'


# Every dtype: duplicate and negative indices (index_put wraps -1 to 4), last write wins or
# sums in position order; the integer sums wrap ('wide' values), bool sums are ORs.
for dt in ALL:
    k, w = kind_of(dt), kind_of(dt, wide=True)
    for acc in (False, True):
        index_put(f'index_put_dups.{dt}.{acc}', x(dt, [4, 5], k), [None, 'i'],
                  idx([3, -1, 0, 3, 4, -2]), v(dt, [4, 6], w), acc)
    index_add(f'index_add_dim0.{dt}', x(dt, [5, 3], k), 0, idx([4, 0, 4, 2, 4]),
              v(dt, [5, 3], w))
    index_add(f'index_add_last_i32.{dt}', x(dt, [3, 4], k), 1,
              idx([1, 1, 3, 0, 1], dtype='i32'), v(dt, [3, 5], w))
    index_add(f'index_add_middle.{dt}', x(dt, [2, 4, 3], k), 1, idx([3, 0, 3]),
              v(dt, [2, 3, 3], w))
    index_add(f'index_add_1d.{dt}', x(dt, [5], k), 0, idx([2, 2, 0, 4, 2, 2]),
              v(dt, [6], w))
    # The index smaller than self in dim 0 and than src in dim 1.
    scatter(f'scatter_src.{dt}', x(dt, [4, 5], k), 1,
            idx([0, 4, 0, 0, 1, 1, 3, 1, 2, 2, 2, 2], [3, 4]), v(dt, [4, 6], w))
    scatter_add(f'scatter_add.{dt}', x(dt, [4, 5], k), 1,
                idx([0, 4, 0, 0, 1, 1, 3, 1, 2, 2, 2, 2], [3, 4]), v(dt, [4, 6], w))
    scatter_add(f'scatter_add_dim0.{dt}', x(dt, [3, 4], k), -2,
                idx([2, 0, 2, 2, 2, 1, 2, 0, 0, 0, 2, 1, 2, 2, 0, 0, 1, 1], [6, 3]),
                v(dt, [6, 4], w))

# 16-bit sums: 256 + 1 + 1 + 1 is 256 rounded after each addition and 260 summed in float
# (259 rounds to even); 2048 + 1 + 1 + 1 likewise in float16.
for dt, big in (('bf16', 256.0), ('f16', 2048.0)):
    ones = [1.0] * 3
    index_put(f'index_put_round.{dt}', x(dt, [3], values=[big, 0.0, 1.0]), ['i'],
              idx([0, 0, 0, 2]), v(dt, [4], values=ones + [0.5]), True)
    index_add(f'index_add_round_1d.{dt}', x(dt, [3], values=[big, 0.0, 1.0]), 0,
              idx([0, 0, 0]), v(dt, [3], values=ones))
    index_add(f'index_add_round_dim0.{dt}', x(dt, [2, 2], values=[big, big, 0.0, 1.0]), 0,
              idx([0, 0, 0, 1]), v(dt, [4, 2], values=[1.0] * 8))
    index_add(f'index_add_round_last.{dt}', x(dt, [2, 2], values=[big, 1.0, big, 0.0]), -1,
              idx([0, 0, 0]), v(dt, [2, 3], values=[1.0] * 6))
    index_add(f'index_add_round_middle.{dt}', x(dt, [1, 2, 2], values=[big, 1.0, big, 0.0]),
              1, idx([0, 0, 0]), v(dt, [1, 3, 2], values=[1.0] * 6))
    index_add(f'index_add_round_i32.{dt}', x(dt, [2, 2], values=[big, big, 0.0, 1.0]), 0,
              idx([0, 0, 0, 1], dtype='i32'), v(dt, [4, 2], values=[1.0] * 8))
    index_add(f'index_add_round_alpha_true.{dt}', x(dt, [2, 1], values=[big, 0.0]), 0,
              idx([0, 0, 0]), v(dt, [3, 1], values=ones), alpha=True)
    scatter_add(f'scatter_add_round.{dt}', x(dt, [2, 2], values=[big, big, 0.0, 1.0]), 1,
                idx([0, 0, 0, 1, 0, 0], [2, 3]), v(dt, [2, 3], values=[1.0] * 6))
    scatter_add(f'scatter_add_round_1d.{dt}', x(dt, [2], values=[big, 0.0]), 0,
                idx([0, 1, 0, 0]), v(dt, [4], values=[1.0] * 4))
# Long sums of values that round ('positive'), in every float dtype and every index_add path.
for dt in FLOATS:
    index_put(f'index_put_long_sum.{dt}', x(dt, [3, 4], 'positive'), ['i', None],
              idx([k % 3 for k in range(40)]), v(dt, [40, 4], 'positive'), True)
    index_add(f'index_add_long_sum_dim0.{dt}', x(dt, [3, 4], 'positive'), 0,
              idx([k % 3 for k in range(40)]), v(dt, [40, 4], 'positive'))
    index_add(f'index_add_long_sum_middle.{dt}', x(dt, [2, 3, 4], 'positive'), 1,
              idx([(k * 7) % 3 for k in range(30)]), v(dt, [2, 30, 4], 'positive'))
    index_add(f'index_add_long_sum_1d.{dt}', x(dt, [3], 'positive'), 0,
              idx([(k * 5) % 3 for k in range(40)]), v(dt, [40], 'positive'))
    scatter_add(f'scatter_add_long_sum.{dt}', x(dt, [3, 4], 'positive'), 0,
                idx([(k * 5) % 3 for k in range(160)], [40, 4]), v(dt, [40, 4], 'positive'))
    # NaN and infinities propagate (a NaN last write, inf - inf).
    index_put(f'index_put_nan.{dt}', x(dt, [3, 4], 'coarse'), [None, 'i'],
              idx([1, 1, 3, 1]), v(dt, [3, 4], 'coarse'), True)
    scatter_add(f'scatter_add_nan.{dt}', x(dt, [3, 4], 'coarse'), 1,
                idx([0, 0, 1, 1, 2, 2, 0, 0, 3, 3, 3, 3], [3, 4]), v(dt, [3, 4], 'coarse'))

# index_add's alpha: float alphas for float dtypes (in every path: the 1-D loop multiplies in
# the dtype, the slice loop fuses the multiply-add), float alphas converted to integer dtypes
# (truncated: 0.5 is 0, -1.5 is -1, 2.7 is 2), bool alphas.
for dt in FLOATS:
    for alpha in (0.5, 1 / 3, -2.5, 0.1, 3):
        a = text_value(alpha).replace('.', 'p').replace('-', 'm')
        index_add(f'index_add_alpha_{a}_dim0.{dt}', x(dt, [3, 9], 'positive'), 0,
                  idx([2, 0, 2, 1, 2]), v(dt, [5, 9], 'positive'), alpha)
        index_add(f'index_add_alpha_{a}_1d.{dt}', x(dt, [4], 'positive'), 0,
                  idx([3, 0, 3, 1, 3, 2, 0]), v(dt, [7], 'positive'), alpha)
for dt, alpha in (('i8', 0.5), ('i8', -1.5), ('i32', 2.7), ('i64', -3), ('u8', -1),
                  ('i16', 1000), ('u8', 2.9)):
    a = text_value(alpha).replace('.', 'p').replace('-', 'm')
    index_add(f'index_add_alpha_{a}.{dt}', x(dt, [3, 4], 'int'), 1, idx([3, 0, 3]),
              v(dt, [3, 3], 'wide'), alpha)
    index_add(f'index_add_alpha_{a}_1d.{dt}', x(dt, [4], 'int'), 0, idx([3, 0, 3]),
              v(dt, [3], 'wide'), alpha)
for alpha in (True, False):
    index_add(f'index_add_alpha_{alpha}.bool', x('bool', [3, 4], 'bits'), 0, idx([2, 0, 2]),
              v('bool', [3, 4], 'bits'), alpha)
    index_add(f'index_add_alpha_{alpha}_1d.bool', x('bool', [4], 'bits'), 0, idx([2, 0, 2]),
              v('bool', [3], 'bits'), alpha)

# index_put's indices: None before and after the index tensor, a rank-2 index, a 0-dim index,
# int32, values broadcast (size-1 dims, fewer dims, a 0-dim value).
for acc in (False, True):
    index_put(f'index_put_rank2_index.{acc}', x('f32', [5, 3], 'dyadic'), ['i'],
              idx([0, 2, 2, -5], [2, 2]), v('f32', [2, 2, 3], 'dyadic'), acc)
    index_put(f'index_put_none_after.{acc}', x('f32', [4, 3, 2], 'dyadic'), ['i', None],
              idx([1, 1, -1]), v('f32', [3, 1], 'dyadic'), acc)
    index_put(f'index_put_middle_rank2.{acc}', x('f32', [2, 5, 3], 'dyadic'), [None, 'i'],
              idx([4, -1, 0, 4], [2, 2]), v('f32', [2, 1, 3], 'dyadic'), acc)
    index_put(f'index_put_between_nones.{acc}', x('f64', [2, 4, 3], 'dyadic'),
              [None, 'i', None], idx([3, 3, -4]), v('f64', [1, 3, 1], 'dyadic'), acc)
    index_put(f'index_put_last_dim.{acc}', x('i32', [2, 3, 4], 'int'), [None, None, 'i'],
              idx([0, 3, 0], dtype='i32'), v('i32', [3], 'wide'), acc)
    index_put(f'index_put_0dim_values.{acc}', x('bf16', [3, 4], 'dyadic'), [None, 'i'],
              idx([2, 2, 0]), v('bf16', [], values=[0.75]), acc)
    index_put(f'index_put_0dim_index.{acc}', x('f16', [4, 3], 'dyadic'), ['i'],
              idx([2], []), v('f16', [3], 'dyadic'), acc)
    index_put(f'index_put_leading_broadcast.{acc}', x('u8', [3, 4], 'int'), ['i'],
              idx([2, 0, 2, 2]), v('u8', [1, 4], 'wide'), acc)
    # Non-contiguous operands: a transposed self and values.
    index_put(f'index_put_transposed.{acc}', x('f32', [4, 5], 'dyadic', strides=[1, 4]),
              [None, 'i'], idx([1, 4, 1]), v('f32', [4, 3], 'dyadic', strides=[1, 4]), acc)
    # Empty: no index values (the values broadcast to [3, 0]), an empty self dim.
    index_put(f'index_put_empty_index.{acc}', x('f32', [3, 4], 'dyadic'), [None, 'i'],
              idx([]), v('f32', [1], values=[5.0]), acc)
    index_put(f'index_put_empty_self.{acc}', x('f32', [0, 4], 'dyadic'), [None, 'i'],
              idx([1, 3]), v('f32', [0, 2], values=[]), acc)
    index_put(f'index_put_empty_other_dim.{acc}', x('i64', [3, 0], 'int'), ['i'],
              idx([2, 5]), v('i64', [1], values=[7]), acc)

# index_add: a 0-dim index, transposed operands, empty index and self.
index_add('index_add_0dim_index', x('f32', [4], 'dyadic'), 0, idx([2], []),
          v('f32', [1], 'dyadic'))
index_add('index_add_transposed', x('f32', [3, 4], 'dyadic', strides=[1, 3]), 0,
          idx([2, 0, 2, 2]), v('f32', [4, 4], 'dyadic', strides=[1, 4]))
index_add('index_add_transposed_last.bf16', x('bf16', [3, 4], 'dyadic', strides=[1, 3]), 1,
          idx([3, 3, 0]), v('bf16', [3, 3], 'dyadic', strides=[1, 3]))
index_add('index_add_transposed_alpha.f64', x('f64', [3, 4], 'positive', strides=[1, 3]), 1,
          idx([3, 3, 0]), v('f64', [3, 3], 'positive', strides=[1, 3]), 0.3)
index_add('index_add_empty_index', x('f32', [3, 4], 'dyadic'), 1, idx([]),
          v('f32', [3, 0], values=[]))
index_add('index_add_empty_index_1d', x('i8', [3], 'int'), 0, idx([]),
          v('i8', [0], values=[]))
index_add('index_add_empty_self_other_dim', x('f32', [0, 4], 'dyadic'), 1, idx([1, 3]),
          v('f32', [0, 2], values=[]))
# self has no elements along dim: eager returns before reading the index (9 is not checked).
index_add('index_add_empty_self_dim', x('f32', [0, 4], 'dyadic'), 0, idx([9, 0]),
          v('f32', [2, 4], 'dyadic'))

# scatter and scatter.value: 3-D, int32 index, transposed operands, empty index and self,
# scalar values converted to the dtype (float into int truncates, into bool is nonzero, into
# bf16 rounds).
scatter('scatter_3d', x('f64', [2, 3, 4], 'dyadic'), 2,
        idx([3, 0, 3, 1, 1, 2, 0, 0, 3, 3, 3, 3], [2, 2, 3]), v('f64', [2, 3, 3], 'dyadic'))
scatter('scatter_i32_index', x('i8', [3, 4], 'int'), 0,
        idx([2, 2, 0, 1, 2, 0, 2, 2], [2, 4], dtype='i32'), v('i8', [3, 4], 'wide'))
scatter('scatter_transposed', x('bf16', [4, 3], 'dyadic', strides=[1, 4]), 1,
        idx([2, 2, 0, 1, 1, 1], [3, 2]), v('bf16', [4, 3], 'dyadic', strides=[1, 4]))
scatter('scatter_empty_index', x('f32', [3, 4], 'dyadic'), 1, idx([], [3, 0]),
        v('f32', [3, 2], 'dyadic'))
scatter('scatter_empty_self', x('f32', [0, 4], 'dyadic'), 1, idx([], [0, 2]),
        v('f32', [0, 2], values=[]))
scatter('scatter_0dim', x('f32', [], values=[1.5]), 0, idx([0], []), v('f32', [], values=[-2.0]))
for dt, s in (('i32', 2.7), ('i32', -2.7), ('u8', 200.9), ('i64', -7), ('bool', 2.5),
              ('bool', 0.0), ('f32', 2.5), ('f32', math.nan), ('f32', -math.inf),
              ('bf16', 1.00390625 + 2 ** -12), ('f16', 1 / 3), ('f64', 1 / 3), ('i8', True),
              ('f32', False)):
    name = text_scalar(s).replace('.', 'p').replace('-', 'm')
    scatter_value(f'scatter_value_{name}.{dt}', x(dt, [3, 4], kind_of(dt)), 1,
                  idx([3, 3, 0, 1, 0, 0], [2, 3]), s)
scatter_value('scatter_value_transposed', x('f32', [4, 3], 'dyadic', strides=[1, 4]), 0,
              idx([3, 0, 3, 2, 2, 2], [2, 3]), 9.0)
scatter_value('scatter_value_empty_index', x('i64', [3, 4], 'int'), 0, idx([], [0, 4]), 5)
scatter_add('scatter_add_3d', x('f32', [2, 3, 4], 'positive'), 1,
            idx([2, 2, 2, 2, 0, 2, 2, 1, 2, 2, 2, 2, 1, 1, 0, 0], [2, 2, 4]),
            v('f32', [2, 3, 4], 'positive'))
scatter_add('scatter_add_transposed', x('f16', [4, 3], 'dyadic', strides=[1, 4]), 0,
            idx([3, 3, 0, 3, 3, 3], [2, 3], dtype='i32'),
            v('f16', [2, 4], 'dyadic', strides=[1, 2]))
scatter_add('scatter_add_empty_index', x('bf16', [3, 4], 'dyadic'), 0, idx([], [0, 4]),
            v('bf16', [2, 4], 'dyadic'))
scatter_add('scatter_add_empty_self', x('f32', [3, 0], 'dyadic'), 0, idx([], [2, 0]),
            v('f32', [2, 0], values=[]))

# scatter_reduce: every reduction with and without self, every dtype torch takes (mean: not
# bool), repeated indices and an element no index reaches; 16-bit reductions kept in float
# and rounded once (a mean rounds its sum before dividing); NaNs win amax and amin; ties of
# -0 and 0 keep the element's; 'max' and 'min' are amax and amin.
for dt in ALL:
    k, w = kind_of(dt), kind_of(dt, wide=True)
    for reduce in ('sum', 'prod', 'mean', 'amax', 'amin'):
        if reduce == 'mean' and dt == 'bool':
            continue
        for inc in (True, False):
            scatter_reduce(f'scatter_reduce_{reduce}.{dt}.{inc}', x(dt, [4, 5], k), 1,
                           idx([0, 4, 0, 0, 1, 1, 3, 1, 2, 2, 2, 2], [3, 4]),
                           v(dt, [4, 6], k if reduce == 'prod' else w), reduce, inc)
for dt, big in (('bf16', 256.0), ('f16', 2048.0)):
    for reduce in ('sum', 'mean', 'prod'):
        scatter_reduce(f'scatter_reduce_round_{reduce}.{dt}', x(dt, [2], values=[big, 1.0]), 0,
                       idx([0, 0, 0, 1]), v(dt, [4], values=[1.0, 1.0, 1.0, 1.0078125]), reduce)
for reduce in ('amax', 'amin'):
    scatter_reduce(f'scatter_reduce_nan_{reduce}', x('f32', [3, 4], 'coarse'), 1,
                   idx([0, 0, 1, 1, 2, 2, 0, 0, 3, 3, 3, 3], [3, 4]), v('f32', [3, 4], 'coarse'),
                   reduce)
    scatter_reduce(f'scatter_reduce_signed_zero_{reduce}', x('f32', [2], values=[-0.0, 0.0]), 0,
                   idx([0, 1]), v('f32', [2], values=[0.0, -0.0]), reduce)
scatter_reduce('scatter_reduce_max_alias', x('f32', [2], values=[1.0, 2.0]), 0, idx([0, 0]),
               v('f32', [2], values=[5.0, -1.0]), 'max')
scatter_reduce('scatter_reduce_mean_long', x('f32', [3, 4], 'positive'), 0,
               idx([(k * 5) % 3 for k in range(160)], [40, 4]), v('f32', [40, 4], 'positive'),
               'mean', False)
scatter_reduce('scatter_reduce_mean_negative_int', x('i64', [2], values=[-7, 5]), 0,
               idx([0, 0, 1]), v('i64', [3], values=[-3, 1, -20]), 'mean')

# Several tensor indices (broadcast together): adjacent ones keep their place, separated ones
# put the broadcast dims first; repeated positions, negative values, int32 beside int64, a
# transposed index, and an index through an empty dim of an empty index shape.
for acc in (False, True):
    index_put(f'index_put_two_indices.{acc}', x('f32', [4, 5], 'dyadic'), ['i', 'j'],
              [idx([0, 3, 0, -1], name='i'), idx([1, 4, 1, 2], name='j')],
              v('f32', [4], 'dyadic'), acc)
    index_put(f'index_put_two_broadcast.{acc}', x('bf16', [3, 4, 2], 'dyadic'), ['i', 'j'],
              [idx([2, 0, 2], [3, 1], name='i'), idx([1, -1, 1, 0], name='j', dtype='i32')],
              v('bf16', [4, 2], 'dyadic'), acc)
    index_put(f'index_put_two_middle.{acc}', x('f64', [2, 3, 4, 2], 'dyadic'),
              [None, 'i', 'j'], [idx([0, 2, 2], name='i'), idx([3], name='j')],
              v('f64', [3, 2], 'dyadic'), acc)
    index_put(f'index_put_two_separated.{acc}', x('f32', [3, 2, 4], 'dyadic'),
              ['i', None, 'j'], [idx([1, 1, 0], name='i'), idx([3, 3, -4], name='j')],
              v('f32', [3, 2], 'dyadic'), acc)
    index_put(f'index_put_three_indices.{acc}', x('i32', [2, 3, 4], 'int'), ['i', 'j', 'k'],
              [idx([1, 0, 1, 1], [2, 2], name='i'), idx([2, 2], [1, 2], name='j'),
               idx([3, 0, 3, 3], [2, 2], name='k')], v('i32', [2, 2], 'wide'), acc)
    index_put(f'index_put_two_transposed.{acc}', x('f32', [4, 4], 'dyadic'), ['i', 'j'],
              [idx([0, 3, 3, 1, 2, 0], [2, 3], name='i'),
               Operand('j', 'i64', [2, 3], values=[1, 2, 3, 0, 0, 1], strides=[1, 2])],
              v('f32', [2, 3], 'dyadic', strides=[1, 2]), acc)
    index_put(f'index_put_two_empty.{acc}', x('f32', [3, 4], 'dyadic'), ['i', 'j'],
              [idx([], name='i'), idx([1], name='j')], v('f32', [1], values=[2.0]), acc)

print('// Generated by tests/eager/gen/gen_scatter_cases.py with torch', torch.__version__)
print('// from PyTorch CPU eager results; do not edit by hand.')
print('R"(')
for line in lines:
    print(line)
print(')"')
