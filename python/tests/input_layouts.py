"""Test inputs of every dtype in the memory layouts a compiled graph must read correctly:
contiguous, transposed, sliced with a step and an offset, expanded (stride 0), 0-dim and
empty."""

import torch

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + (torch.bool,)

# Sizes with odd tails so that vectorized loops run their masked remainders.
ROWS, COLS = 6, 37

LAYOUTS = ("contiguous", "transposed", "step_sliced", "expanded", "zero_dim", "empty")


def dtype_id(dtype):
    return str(dtype).removeprefix("torch.")


def random_values(shape, dtype, low, high, random_sign=False):
    """Uniform values in [low, high] (integers for integer dtypes, clipped to the dtype's
    range; True/False for bool). random_sign negates about half of them (not for unsigned
    dtypes): with low > 0 that gives divisors that are never zero."""
    if dtype == torch.bool:
        return torch.rand(shape) < 0.5
    if dtype.is_floating_point:
        values = torch.rand(shape, dtype=torch.float64) * (high - low) + low
    else:
        info = torch.iinfo(dtype)
        low, high = max(int(low), info.min), min(int(high), info.max)
        # randint's bound is exclusive and must fit int64: int64's maximum itself is not drawn.
        values = torch.randint(low, min(high + 1, torch.iinfo(torch.int64).max), shape, dtype=torch.int64)
    if random_sign and dtype != torch.uint8:
        values = torch.where(torch.rand(shape) < 0.5, -values, values)
    return values.to(dtype)


def dtype_kind(dtype):
    if dtype == torch.bool:
        return "bool"
    return "float" if dtype.is_floating_point else "int"


def make_input(layout, dtype, low, high, random_sign=False, rows=ROWS, cols=COLS):
    """A (rows, cols) tensor in the given layout; `zero_dim` has shape () and `empty` (0, cols)."""

    def values(*shape):
        return random_values(shape, dtype, low, high, random_sign)

    if layout == "contiguous":
        return values(rows, cols)
    if layout == "transposed":
        return values(cols, rows).t()
    if layout == "step_sliced":
        # storage offset 2*cols + 2, strides (2*cols + 1, 2)
        return values(rows + 1, 2 * cols + 1)[1:, 1::2]
    if layout == "expanded":
        return values(1, cols).expand(rows, cols)
    if layout == "zero_dim":
        return values()
    if layout == "empty":
        return values(0, cols)
    raise ValueError(f"unknown layout {layout!r}")
