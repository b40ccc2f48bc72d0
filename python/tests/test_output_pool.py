"""Large region outputs come from Stax's output pool (src/bindings/output_pool.h): ordinary
PyTorch tensors whose memory goes back to the pool when PyTorch frees them, so the next call
reuses it with its pages mapped, outputs that view one buffer included. A tensor still alive
is never handed out again, small outputs keep PyTorch's allocator, and the pool refuses a
request its block cannot hold."""

import gc

import pytest
import torch

import stax
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
    assert first.dtype == dtype and torch.equal(first, x * 2)
    del first
    gc.collect()
    blocks, nbytes = _C.output_pool_cached()
    assert blocks >= 1 and nbytes >= n * x.element_size()
    y = torch.arange(n).flip(0).to(dtype)
    before = stax.output_pool_stats()
    second = double(y)
    after = stax.output_pool_stats()
    # The freed memory, its pages mapped: a hit, no fresh memory (the block may have merged
    # with a cached neighbour, and the output then starts where the merged block does).
    assert after["hits"] > before["hits"] and after["misses"] == before["misses"]
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert torch.equal(second, y * 2)
    third = double(x)  # `second` is alive: other memory
    assert third.data_ptr() != second.data_ptr()
    assert torch.equal(second, y * 2) and torch.equal(third, x * 2)


def test_outputs_that_view_one_slot_come_from_the_pool():
    """A buffer several outputs view (chunks of one product, a slice at an offset) is raw
    bytes of the pool, as a whole output is: the next call reuses it, no fresh memory."""
    def whole_and_tail(x):
        y = x * 2
        return y, y[1:]

    fn = compiled(whole_and_tail)
    x = torch.arange(1 << 18, dtype=torch.float32)  # 1 MiB
    for _ in range(2):  # the second call meets the first call's freed block
        before = stax.output_pool_stats()
        a, b = fn(x)
        after = stax.output_pool_stats()
        assert after["hits"] + after["misses"] > before["hits"] + before["misses"]
        assert torch.equal(a, x * 2) and torch.equal(b, x[1:] * 2)
        assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        del a, b
        gc.collect()
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert after["hits"] > before["hits"]


def test_small_and_boolean_outputs_keep_pytorchs_allocator():
    before = _C.output_pool_cached()
    small = compiled(lambda x: x + 1)(torch.ones(POOLED_OUTPUT_BYTES // 4 - 1))
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


def test_outputs_a_few_percent_apart_share_a_block():
    # Size buckets (runtime/block_pool.h): a last batch a little smaller than the others takes
    # the block the others free. (An empty cache first: a cached neighbour would merge with
    # the freed block, which a piece of would then serve the request.)
    stax.trim_output_pool()
    double = compiled(lambda x: x * 2)
    first = double(torch.ones(1 << 20))
    del first
    gc.collect()
    smaller = torch.ones((1 << 20) - 3000)
    before = stax.output_pool_stats()
    second = compiled(lambda x: x * 2)(smaller)
    after = stax.output_pool_stats()
    # The freed block of the same bucket, not a piece of a larger one nor fresh memory.
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]
    assert after["splits"] == before["splits"]
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert torch.equal(second, smaller * 2)


def huge_page_mode():
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        line = f.read()
    return line[line.index("[") + 1:line.index("]")]


def test_large_outputs_are_advised_huge_pages_and_trim_frees_the_cache():
    stax.trim_output_pool()
    before = stax.output_pool_stats()
    out = compiled(lambda x: x + 1)(torch.ones(3 << 20))  # 12 MiB
    stats = stax.output_pool_stats()
    assert stats["misses"] == before["misses"] + 1
    if huge_page_mode() != "never":
        assert stats["huge_page_blocks"] == before["huge_page_blocks"] + 1
    assert out.data_ptr() % (2 << 20) == 0
    del out
    gc.collect()
    assert stax.output_pool_stats()["cached_bytes"] >= 12 << 20
    assert stax.trim_output_pool() >= 12 << 20
    assert stax.output_pool_stats()["cached_bytes"] == 0


def test_the_pool_can_be_turned_off():
    before = stax.output_pool_stats()
    fn = torch.compile(lambda x: x * 3, backend="stax", options={"output_pool": False})
    torch._dynamo.reset()
    out = fn(torch.ones(1 << 20))
    assert torch.equal(out, torch.full((1 << 20,), 3.0))
    after = stax.output_pool_stats()
    assert (after["hits"], after["misses"]) == (before["hits"], before["misses"])


@pytest.mark.parametrize("streaming", [True, False])
def test_streaming_stores_into_pooled_outputs(streaming, capfd):
    # A kernel moving more than the last-level cache writes its pooled output with streaming
    # stores, the default, or ordinary ones; either way every call, on fresh and on reused
    # blocks, gives eager's result. The size comes from the last level Stax detects here (32
    # MiB on one CPU, 480 MiB reported on another): the kernel reads and writes one float per
    # element, so llc/4 elements move twice the last level.
    llc = stax._C.cache_sizes()["llc_bytes"]
    x = torch.randn(max(8 << 20, llc // 4 + (1 << 20)))
    fn = torch.compile(lambda x: x * 2 + 1, backend="stax",
                       options={"streaming_stores": streaming, "logs": ("output_code",)})
    torch._dynamo.reset()
    for _ in range(3):
        assert torch.equal(fn(x), x * 2 + 1)
    assert ("store_stream" in capfd.readouterr().err) == streaming
