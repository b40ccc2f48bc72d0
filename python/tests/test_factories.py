"""Factory ops inside compiled graphs (full, zeros, ones, arange, scalar_tensor, *_like,
new_*) vs eager in every dtype, masks built from arange as attention code builds them, and —
under Stax — that these stay Stax ops rather than falling back to PyTorch."""

import torch

from eager_comparison import check_against_eager, check_explain
from input_layouts import ALL_DTYPES, dtype_id, random_values


def factories_of_every_dtype(x):
    out = {}
    for dtype in ALL_DTYPES:
        name = dtype_id(dtype)
        out[f"zeros/{name}"] = torch.zeros(3, 5, dtype=dtype)
        out[f"ones/{name}"] = torch.ones(7, dtype=dtype)
        out[f"full/{name}"] = torch.full((2, 3), True if dtype == torch.bool else 5, dtype=dtype)
        out[f"zeros_like/{name}"] = torch.zeros_like(x, dtype=dtype)
        out[f"ones_like/{name}"] = torch.ones_like(x, dtype=dtype)
        out[f"full_like/{name}"] = torch.full_like(x, 1, dtype=dtype)
        if dtype != torch.bool:
            out[f"arange/{name}"] = torch.arange(0, 7, dtype=dtype)
            out[f"arange_step/{name}"] = torch.arange(1, 20, 3, dtype=dtype)
    return out


def test_factories_of_every_dtype(backend):
    check_against_eager(factories_of_every_dtype, (torch.randn(4, 6).t(),), backend)


def arange_and_full_variants(x):
    return {
        "arange_end": torch.arange(10),
        "arange_negative_step": torch.arange(5, -6, -2),
        "arange_float_step": torch.arange(0, 1, 0.125),
        "arange_float_inexact_step": torch.arange(-1, 1, 0.1),
        "arange_float64": torch.arange(0.5, 3, 0.25, dtype=torch.float64),
        "full_float": torch.full((2, 5), -2.5),
        "full_bfloat16": torch.full((4,), 1.1, dtype=torch.bfloat16),
        "scalar_tensor": torch.scalar_tensor(3.5),
        "new_zeros": x.new_zeros(2, 3),
        "new_ones": x.new_ones(3),
        "new_full": x.new_full((2,), 4.0),
        "zeros_plus_input": torch.zeros(x.shape[1]) + x,
        "arange_plus_input": x * torch.arange(x.shape[1]),
        "ones_like_int": torch.ones_like(x, dtype=torch.int32) + 1,
    }


def test_arange_and_full_variants(backend):
    check_against_eager(arange_and_full_variants, (random_values((3, 8), torch.float32, -1, 1),), backend)


def masked_scores(scores):
    """Causal and padding masks built from arange, applied with masked_fill and where, then a
    softmax, as attention implementations do."""
    n = scores.shape[-1]
    causal = torch.arange(n)[:, None] >= torch.arange(n)[None, :]
    lengths = n - 3 * torch.arange(scores.shape[0])  # sequence lengths n, n - 3
    padding = torch.arange(n)[None, :] < lengths[:, None]
    mask = causal[None] & padding[:, None, :]
    probs = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    return probs, torch.where(causal, scores, torch.zeros((), dtype=scores.dtype)), torch.tril(scores)


def test_masks_built_in_the_graph(backend, is_stax):
    scores = random_values((2, 9, 9), torch.float32, -2, 2)
    check_against_eager(masked_scores, (scores,), backend)
    if is_stax:
        check_explain(
            "factories: causal/padding mask",
            masked_scores,
            scores,
            may_fall_back=(),
            must_run_in_stax=("arange", "where"),
        )
