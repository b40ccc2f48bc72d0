"""View and data-movement ops through torch.compile vs eager: reshape, view, permute,
transpose, unsqueeze, squeeze, expand, slice, select, narrow, split, as_strided, cat, stack,
constant_pad_nd (F.pad), flip, roll, index_select, gather, embedding, advanced indexing, clone
and contiguous; on contiguous, permuted and step-sliced inputs; in every dtype.

A view of an input returned as is never reaches the backend (AOTAutograd regenerates it from
the input), so every view is also returned cloned: the clone is a kernel that reads through
the view's index arithmetic."""

import pytest
import torch
import torch.nn.functional as F

from eager_comparison import check_against_eager, check_explain
from input_layouts import ALL_DTYPES, dtype_id, random_values

SHAPE = (4, 6, 10)


def cube(layout, dtype):
    """A (4, 6, 10) tensor: contiguous, a permutation of a contiguous (10, 4, 6) tensor, or
    every other element of a larger tensor with a storage offset."""
    if layout == "contiguous":
        return random_values(SHAPE, dtype, -9, 9)
    if layout == "permuted":
        return random_values((10, 4, 6), dtype, -9, 9).permute(1, 2, 0)
    if layout == "step_sliced":
        return random_values((5, 13, 20), dtype, -9, 9)[1:, 1::2, ::2]
    raise ValueError(layout)


VIEWS = {
    "reshape": lambda x: x.reshape(24, 10),
    "reshape_flat": lambda x: x.reshape(-1),
    "view_split_dim": lambda x: x.view(4, 6, 2, 5),
    "permute": lambda x: x.permute(2, 0, 1),
    "transpose": lambda x: x.transpose(0, 2),
    "t": lambda x: x[1].t(),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze_dim": lambda x: x[:, :1].squeeze(1),
    "squeeze_all": lambda x: x[:1, 2:3].squeeze(),
    "expand": lambda x: x[:, :1].expand(4, 6, 10),
    "expand_new_dim": lambda x: x[None].expand(3, 4, 6, 10),
    "slice_step": lambda x: x[:, 1:5:2, ::3],
    "slice_negative": lambda x: x[..., -4:],
    "select": lambda x: x[:, 2],
    "select_negative": lambda x: x.select(2, -1),
    "narrow": lambda x: x.narrow(1, 1, 3),
    "split": lambda x: x.split(4, dim=2),
    "split_sizes": lambda x: x.split([1, 2, 3], dim=1),
    "unbind": lambda x: x.unbind(0),
    "as_strided_of_computed": lambda x: (x * x).as_strided((3, 4), (7, 2), 5),
}

COPIES = {
    "cat": lambda x: torch.cat([x, x.flip(0)], 1),
    "cat_uneven": lambda x: torch.cat([x[:, :2], x[:, 3:]], 1),
    "cat_with_empty": lambda x: torch.cat([x, x[:, :0]], 1),
    "stack": lambda x: torch.stack([x[0], x[1], x[3]], 1),
    "pad": lambda x: F.pad(x, (1, 2)),
    "pad_value": lambda x: F.pad(x, (0, 0, 2, 1), value=1),
    "pad_negative": lambda x: F.pad(x, (-1, -2, 1, 0)),
    "flip": lambda x: x.flip(0, 2),
    "roll": lambda x: x.roll(3, 2),
    "roll_dims": lambda x: x.roll((1, -2), (0, 1)),
    "roll_flat": lambda x: x.roll(5),
    "clone": lambda x: x.clone(),
    "contiguous": lambda x: x.contiguous(),
    "clone_contiguous_format": lambda x: x.clone(memory_format=torch.contiguous_format),
}


def indexing_ops(x, index, index32, gather_index, tokens):
    return {
        "index_select": x.index_select(1, index.remainder(4)),
        "index_select_int32": x.index_select(2, index32),
        "gather": x.gather(2, gather_index),
        "embedding": F.embedding(tokens, x[0]),
        "embedding_padding_idx": F.embedding(tokens, x[1], padding_idx=2),
        "index_first": x[index],
        "index_middle": x[:, index],
        "index_last": x[..., index],
        "index_two_tensors": x[index[:3], :, torch.tensor([9, 0, -1])],
        "index_broadcast": x[index[:, None], index[None, :]],
    }


def movement(x, index, index32, gather_index, tokens):
    out = {}
    for name, op in VIEWS.items():
        out[name] = op(x)
        view = op(x)
        out[f"{name}/clone"] = tuple(v.clone() for v in view) if isinstance(view, tuple) else view.clone()
    out.update({name: op(x) for name, op in COPIES.items()})
    out.update(indexing_ops(x, index, index32, gather_index, tokens))
    return out


def indices():
    # Negative entries count from the end in advanced indexing (index_select refuses them).
    index = torch.tensor([3, 0, 0, -1])
    index32 = torch.tensor([9, 1, 4], dtype=torch.int32)
    gather_index = torch.randint(0, SHAPE[2], (4, 6, 3))
    tokens = torch.tensor([[0, 5, 2], [2, 2, 1]])
    return index, index32, gather_index, tokens


# float32 in every layout; each other dtype in one layout, rotating, so each element size
# (1, 2, 4, 8 bytes and bool) meets a non-contiguous input.
CASES = [(torch.float32, layout) for layout in ("contiguous", "permuted", "step_sliced")] + [
    (dtype, ("permuted", "step_sliced", "contiguous")[i % 3]) for i, dtype in enumerate(ALL_DTYPES[1:])
]


@pytest.mark.parametrize("dtype,layout", CASES, ids=[f"{dtype_id(d)}-{layout}" for d, layout in CASES])
def test_movement_ops(backend, dtype, layout):
    check_against_eager(movement, (cube(layout, dtype), *indices()), backend)


def as_strided_input(x):
    # as_strided of an input addresses the input's storage, not its logical elements.
    return x.as_strided((3, 4), (5, 2), 3).clone(), x.as_strided((2, 2), (1, 4)) * 2


def test_as_strided_of_an_input(backend):
    x = random_values((8, 9), torch.float32, -1, 1)[1:, 1:]
    check_against_eager(as_strided_input, (x,), backend)


def out_of_range_index(x, index):
    return x.index_select(0, index) * 2


def test_out_of_range_index_raises(backend, is_stax):
    x = torch.randn(4, 3)
    index = torch.tensor([0, 4])
    with pytest.raises(IndexError, match="out of range"):
        out_of_range_index(x, index)
    # Only Stax promises an error from compiled code for a bad index (other backends read out
    # of bounds or assert).
    if is_stax:
        compiled = torch.compile(out_of_range_index, backend=backend)
        with pytest.raises(Exception, match="out of range|index"):
            compiled(x, index)


def scatters(x, row, column, wide):
    return {
        "slice_scatter_step": torch.slice_scatter(x, column.expand(4, 6, 5), 2, 1, None, 2),
        "slice_scatter_negative_start": torch.slice_scatter(x, row[None].expand(1, 6, 10), 0, -1),
        "slice_scatter_of_computed": torch.slice_scatter(x.exp(), (row * 2).expand(4, 2, 10), 1, 2, 4),
        "slice_scatter_converts_src": torch.slice_scatter(x, wide, 2, 0, 3),
        "select_scatter": torch.select_scatter(x, row.expand(4, 10), 1, -2),
    }


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=dtype_id)
@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
def test_slice_and_select_scatter(backend, is_stax, dtype, layout):
    """The functional forms of slice and select assignment (what functionalization makes of
    x[a:b] = y, and the backward of a slice) run in Stax; src of another dtype is converted
    as eager's copy_ converts it."""
    x = cube(layout, dtype)
    row = random_values((10,), dtype, -3, 3)
    column = random_values((4, 1, 5), dtype, -3, 3)
    wide = random_values((4, 6, 3), torch.float64, -3, 3)
    fn = scatters if dtype.is_floating_point else (lambda *a: {k: v for k, v in scatters(*a).items() if "computed" not in k})
    check_against_eager(fn, (x, row, column, wide), backend)
    if is_stax:
        check_explain(f"slice_scatter {dtype_id(dtype)} {layout}", fn, x, row, column, wide,
                      must_run_in_stax=("slice_scatter", "select_scatter"))


def test_slice_and_select_gradients_run_in_stax(backend, is_stax):
    # The backward of a slice and of a select scatters the gradient into zeros.
    x = random_values((6, 10), torch.float32, -1, 1).requires_grad_(True)

    def fn(x):
        return (x[:, 1:8:3].exp().sum() + x[2].square().sum()) * 2

    compiled_x = x.detach().clone().requires_grad_(True)
    fn(x).backward()
    torch.compile(fn, backend=backend, fullgraph=True)(compiled_x).backward()
    torch.testing.assert_close(compiled_x.grad, x.grad)
    if is_stax:
        import stax

        report = stax.explain(fn, x.detach().clone().requires_grad_(True), backward=True)
        in_stax = " ".join(str(op) for op in report.stax_ops)
        assert "slice_scatter" in in_stax and "select_scatter" in in_stax, report
        assert not report.fallback_ops, report
