"""Large region outputs come from Stax's output pool (src/bindings/output_pool.h): ordinary
PyTorch tensors whose memory goes back to the pool when PyTorch frees them, so the next call
reuses it with its pages mapped. A tensor still alive is never handed out again, small
outputs keep PyTorch's allocator, and the pool refuses a request its block cannot hold."""

import gc

import pytest
import torch

import stax  # noqa: F401  (registers the backend)
from stax import _C
from stax.region import POOLED_OUTPUT_BYTES


def compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="stax")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64])
def test_a_freed_output_is_reused_and_a_live_one_never(dtype):
    n = POOLED_OUTPUT_BYTES // 2  # elements: at least 1 MiB in every dtype here
    double = compiled(lambda x: x * 2)
    x = torch.arange(n).to(dtype)
    first = double(x)
    address = first.data_ptr()
    assert first.dtype == dtype and torch.equal(first, x * 2)
    del first
    gc.collect()
    blocks, nbytes = _C.output_pool_cached()
    assert blocks >= 1 and nbytes >= n * x.element_size()
    y = torch.arange(n).flip(0).to(dtype)
    second = double(y)
    assert second.data_ptr() == address  # the freed block, pages mapped
    assert torch.equal(second, y * 2)
    third = double(x)  # `second` is alive: other memory
    assert third.data_ptr() != second.data_ptr()
    assert torch.equal(second, y * 2) and torch.equal(third, x * 2)


def test_small_and_boolean_outputs_keep_pytorchs_allocator():
    before = _C.output_pool_cached()
    small = compiled(lambda x: x + 1)(torch.ones(16))
    flags = compiled(lambda x: x > 0)(torch.ones(POOLED_OUTPUT_BYTES))
    del small, flags
    gc.collect()
    assert _C.output_pool_cached() == before


def test_pooled_outputs_carry_gradients():
    t = torch.randn(512, 1024, requires_grad=True)
    step = compiled(lambda t: (t * 3).exp().sum())
    for _ in range(3):  # later steps run on reused blocks
        t.grad = None
        step(t).backward()
        torch.testing.assert_close(t.grad, 3 * (t.detach() * 3).exp())


def test_a_request_the_block_cannot_hold_is_refused():
    with pytest.raises(ValueError, match="do not hold"):
        _C.pooled_output([1024], [1], "f32", 1024)
    with pytest.raises(ValueError, match="DLPack"):
        _C.pooled_output([8], [1], "bool", 64)
    capsule = _C.pooled_output([4, 4], [4, 1], "bf16", 64)
    t = torch.from_dlpack(capsule)
    assert t.shape == (4, 4) and t.dtype == torch.bfloat16
