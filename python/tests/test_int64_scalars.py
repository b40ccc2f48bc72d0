"""Python int scalars are exact through the bridge, the text format, lowering, the kernel and the
printed C++: every pointwise op that takes a scalar, at the int64 extremes (±2^53±1,
INT64_MIN/MAX) and with the wrap of large scalars into narrow integer dtypes, compared with
eager exactly (assert_close is exact for integer and bool results). A scalar rounded through
double (2^53 + 1 -> 2^53, INT64_MAX -> 2^63) fails here. Many ops share one compiled function
to keep the compile count (about 1 s of C++ each) low.
"""

import pytest
import torch

from eager_comparison import check_against_eager

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
P53 = 2**53

# Scalars at which a double loses the value (or overflows int64 when cast back).
EXTREMES = [P53 - 1, P53 + 1, -P53 - 1, P53 + 3, I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1]


def int64_tensor():
    return torch.tensor(
        [0, 1, -1, 7, P53, P53 + 1, -P53 - 1, I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, 12345],
        dtype=torch.int64,
    )


def mask_like(t):
    return torch.arange(t.numel()) % 3 == 0


def arithmetic_and_bitwise(t):
    out = {}
    for k, s in enumerate(EXTREMES):
        out[f"add/{k}"] = t + s
        out[f"radd/{k}"] = s + t
        out[f"sub/{k}"] = t - s
        out[f"rsub/{k}"] = s - t
        out[f"mul/{k}"] = t * s
        out[f"alpha/{k}"] = torch.add(t, t, alpha=s)
        out[f"sub_alpha/{k}"] = torch.sub(t, 1, alpha=s)
        out[f"floor_divide/{k}"] = torch.floor_divide(t, s)
        out[f"remainder/{k}"] = torch.remainder(t, s)
        out[f"fmod/{k}"] = torch.fmod(t, s)
        out[f"and/{k}"] = t & s
        out[f"or/{k}"] = t | s
        out[f"xor/{k}"] = t ^ s
    return out


def comparisons_and_selection(t, m):
    out = {}
    for k, s in enumerate(EXTREMES):
        out[f"eq/{k}"] = t == s
        out[f"ne/{k}"] = t != s
        out[f"lt/{k}"] = t < s
        out[f"le/{k}"] = t <= s
        out[f"gt/{k}"] = t > s
        out[f"ge/{k}"] = t >= s
        out[f"clamp_min/{k}"] = torch.clamp(t, min=s)
        out[f"clamp_max/{k}"] = torch.clamp(t, max=s)
        out[f"clamp_min_op/{k}"] = torch.clamp_min(t, s)
        out[f"where_other/{k}"] = torch.where(m, t, s)
        out[f"where_self/{k}"] = torch.where(m, s, t)
        out[f"masked_fill/{k}"] = t.masked_fill(m, s)
        out[f"full_like/{k}"] = torch.full_like(t, s)
        out[f"fill/{k}"] = torch.zeros_like(t).fill_(s)
        out[f"full/{k}"] = torch.full((3,), s)
        out[f"scalar_tensor/{k}"] = torch.scalar_tensor(s, dtype=torch.int64) + t
    out["clamp_both"] = torch.clamp(t, P53 + 1, I64_MAX - 1)
    out["where_both"] = torch.where(m, I64_MAX, I64_MIN)
    for shift in (0, 1, 3, 62, 63):
        out[f"shl/{shift}"] = t << shift
        out[f"shr/{shift}"] = t >> shift
    return out


def narrow_wrap(i8, u8, i16, i32, b, m):
    # A scalar is converted to the op's computation dtype by wrapping (i8 + 300 adds 44) for
    # arithmetic, bitwise ops and comparisons; fills take uint8 values down to -255.
    out = {}
    for k, s in enumerate([300, -129, 257, 2**40 + 5, I64_MAX, I64_MIN, P53 + 1, -(2**31) - 1]):
        out[f"i8_add/{k}"] = i8 + s
        out[f"u8_add/{k}"] = u8 + s
        out[f"i16_mul/{k}"] = i16 * s
        out[f"i32_sub/{k}"] = i32 - s
        out[f"i8_eq/{k}"] = i8 == s
        out[f"u8_lt/{k}"] = u8 < s
        out[f"i16_ge/{k}"] = i16 >= s
        out[f"i8_and/{k}"] = i8 & s
        out[f"u8_or/{k}"] = u8 | s
        out[f"i32_xor/{k}"] = i32 ^ s
        out[f"bool_add/{k}"] = b + s
    for k, s in enumerate([-1, -255, 255, 0]):
        out[f"u8_full_like/{k}"] = torch.full_like(u8, s)
        out[f"u8_masked_fill/{k}"] = u8.masked_fill(m, s)
        out[f"u8_where/{k}"] = torch.where(m, u8, s)
        out[f"u8_clamp_min/{k}"] = torch.clamp(u8, min=s)
    out["i8_full_like_min"] = torch.full_like(i8, -128)
    out["i32_fill_max"] = torch.zeros_like(i32).fill_(2**31 - 1)
    out["u8_shl"] = u8 << 7
    out["i8_shr"] = i8 >> 7
    return out


def float_interplay(t, f32, f64, bf16, f16):
    # An int scalar on a float tensor rounds once to the float dtype (int64 straight to float,
    # not through double: 2^60 + 2^36 + 1 is float 2^60 + 2^37); a float scalar on an int
    # tensor promotes the tensor to float32.
    odd = 2**60 + 2**36 + 1
    out = {}
    for k, s in enumerate([odd, P53 + 1, I64_MAX, I64_MIN, -odd]):
        out[f"f32_add/{k}"] = f32 + s
        out[f"f32_eq/{k}"] = f32 == s
        out[f"f32_mul/{k}"] = f32 * s
        out[f"f64_add/{k}"] = f64 + s
        out[f"f64_eq/{k}"] = f64 == s
        out[f"bf16_add/{k}"] = bf16 + s
        out[f"f16_add/{k}"] = f16 + s
        out[f"f32_full_like/{k}"] = torch.full_like(f32, s)
        out[f"f64_full_like/{k}"] = torch.full_like(f64, s)
        out[f"f32_clamp/{k}"] = torch.clamp(f32, max=s)
        out[f"f64_where/{k}"] = torch.where(f64 > 0, f64, s)
        out[f"div/{k}"] = t / s
    out["i64_add_half"] = t + 0.5
    out["i64_mul_float"] = t * 1.5
    out["i64_eq_float"] = t == float(P53 + 1)
    out["i64_clamp_float"] = torch.clamp(t, max=2.5)
    return out


def ranges(x):
    return {
        "top": torch.arange(I64_MAX - 3, I64_MAX),
        "bottom": torch.arange(I64_MIN, I64_MIN + 3),
        "p53": torch.arange(P53, P53 + 4),
        "p53_step": torch.arange(-P53 - 1, P53 + 2, P53),
        "wide_step": torch.arange(I64_MIN, I64_MAX, 2**61),
        "overflowing_length": torch.arange(I64_MIN, I64_MAX, 2**62),
        "descending": torch.arange(I64_MAX, I64_MAX - 10, -3),
        "i32_wraps": torch.arange(2**40, 2**40 + 3, dtype=torch.int32),
        "i8_wraps": torch.arange(126, 130, dtype=torch.int8),
        "f64_rounds": torch.arange(P53 + 1, P53 + 5, dtype=torch.float64),
        "plus_x": torch.arange(P53, P53 + 4) + x,
    }


def test_int64_arithmetic_and_bitwise(backend):
    check_against_eager(arithmetic_and_bitwise, (int64_tensor(),), backend)


def test_int64_comparisons_selection_and_fills(backend):
    t = int64_tensor()
    check_against_eager(comparisons_and_selection, (t, mask_like(t)), backend)


def test_large_scalars_wrap_into_narrow_integer_dtypes(backend):
    base = torch.tensor([0, 1, -1, 100, -100, 127, -128, 55, 3, -7, 64, -64])
    args = (
        base.to(torch.int8),
        base.to(torch.uint8),
        (base * 300).to(torch.int16),
        (base * 20000000).to(torch.int32),
        base > 0,
        mask_like(base),
    )
    check_against_eager(narrow_wrap, args, backend)


def test_int_scalars_on_float_tensors_round_once(backend):
    t = int64_tensor()
    values = torch.tensor([0.0, 1.0, -1.0, 2.0**60, -(2.0**60), 2.0**53, 1e18, -3.5, 9.3e18, 0.25])
    args = (t, values.float(), values.double(), values.bfloat16(), values.clamp(-1000, 1000).half())
    check_against_eager(float_interplay, args, backend)


def test_int64_arange_extremes(backend):
    check_against_eager(ranges, (torch.tensor([1, 2, 3, 4]),), backend)


def test_scalars_that_overflow_the_dtype_raise_as_in_eager(backend):
    # where, clamp, alpha and the fills convert their scalar with PyTorch's checked conversion;
    # eager raises, and so must the compiled function (never a silently wrapped value).
    i8 = torch.tensor([1, 2, -3], dtype=torch.int8)
    m = i8 > 1
    functions = [
        lambda t, m: torch.where(m, t, 300),
        lambda t, m: torch.clamp(t, min=-300),
        lambda t, m: torch.add(t, t, alpha=300),
        lambda t, m: torch.full_like(t, I64_MAX),
        lambda t, m: t.masked_fill(m, 2**40),
    ]
    for fn in functions:
        with pytest.raises(RuntimeError, match="without overflow"):
            fn(i8, m)
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.compile(fn, backend=backend)(i8, m)
