"""stax.memory_stats() (issue 32, point 4.3): what Stax holds besides the tensors it returned,
from the C++ side. A program's arena of intermediates comes from the process's pool while a call
runs and goes back after it (the next call takes it again: a hit, not a new mapping); a freed
large output stays in the pool until trim_output_pool() (cached bytes back to 0); a library
call's workspace is held while the call runs and is back in the pool after it. Deltas only:
other tests of the process may hold memory too."""

import gc

import torch

import stax
from eager_comparison import assert_same, summation_tolerance
from stax.region import POOLED_OUTPUT_BYTES


def _program(stats, library):
    return next((p for p in stats["arenas"]["programs"] if p["library"] == library), None)


def test_a_programs_arena_comes_from_the_pool_and_goes_back_after_each_call():
    def fn(x):
        # exp(x) is read along both dims: an intermediate the program keeps in its arena.
        y = torch.exp(x)
        return y.sum(0) + y.sum(1).sum()

    x = torch.randn(509, 263)  # a shape no other test compiles: a program of its own
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="stax")
    before = stax.memory_stats()
    first = compiled(x)
    after = stax.memory_stats()
    new = [p for p in after["arenas"]["programs"] if _program(before, p["library"]) is None]
    assert len(new) == 1, after["arenas"]
    program = new[0]
    assert program["arena_bytes"] >= 509 * 263 * 4  # exp(x) in float32
    assert program["held_bytes"] == 0  # back in the pool after the call
    assert after["output_pool"]["live_bytes"] == before["output_pool"]["live_bytes"]
    assert after["output_pool"]["peak_live_bytes"] >= program["arena_bytes"]
    stax.trim_output_pool()
    compiled(x)  # takes a new block for the arena: nothing is cached
    taken = stax.memory_stats()["output_pool"]
    assert taken["cached_bytes"] >= program["arena_bytes"]
    second = compiled(x)  # takes it back
    again = stax.memory_stats()["output_pool"]
    assert again["misses"] == taken["misses"] and again["hits"] > taken["hits"]
    assert again["cached_bytes"] == taken["cached_bytes"]
    torch.testing.assert_close(second, first)
    # A sum of all 509 x 263 exponentials (and of a column's) in another order than eager's:
    # the tolerance of such a sum, whose partial sums are bounded by the sum of all terms
    # (length times their mean). A fixed rtol of 1e-5 failed on about one random input in ten.
    expected = fn(x)
    mean_term = float(torch.exp(x).mean())
    assert_same(first, expected, **summation_tolerance(torch.float32, 509 * 263, mean_term))


def test_trimming_the_pool_drops_its_cached_bytes_to_zero():
    n = POOLED_OUTPUT_BYTES // 4 + 4096  # float32 elements: past the pooled size
    torch._dynamo.reset()
    double = torch.compile(lambda x: x * 2, backend="stax")
    out = double(torch.ones(n))
    del out
    gc.collect()
    pool = stax.memory_stats()["output_pool"]
    assert pool["cached_blocks"] >= 1 and pool["cached_bytes"] >= n * 4
    assert pool == stax.output_pool_stats()
    freed = stax.trim_output_pool()
    assert freed == pool["cached_bytes"]
    pool = stax.memory_stats()["output_pool"]
    assert pool["cached_blocks"] == 0 and pool["cached_bytes"] == 0


def test_library_workspaces_go_back_to_the_pool_after_each_call():
    """A convolution runs through the library with a workspace (its operands reordered, its
    scratchpad): taken from the pool for the call and given back after it, so the next call
    takes it again and nothing is held between calls."""
    x, w = torch.randn(2, 16, 31, 29), torch.randn(32, 16, 3, 3)
    torch._dynamo.reset()
    gc.collect()
    compiled = torch.compile(lambda x, w: torch.nn.functional.conv2d(x, w), backend="stax")
    first = compiled(x, w).clone()  # the output's own block (pooled) back in the pool
    gc.collect()
    stats = stax.memory_stats()
    assert stats["scratch"]["library_workspace_bytes"] == 0
    assert stats["scratch"]["program_bytes"] >= 0
    second = compiled(x, w)
    again = stax.memory_stats()["output_pool"]
    assert again["misses"] == stats["output_pool"]["misses"]
    assert again["hits"] > stats["output_pool"]["hits"]
    torch.testing.assert_close(second, first)


def test_a_training_step_maps_no_fresh_memory_once_warm():
    """A training step takes blocks of one set of sizes in the forward (activations) and of
    others in the backward (gradients): the pool serves the later steps from pages it already
    has (pieces of cached blocks, merged ones, cached pages moved together), so no step after
    the first ones maps fresh memory, which its library calls would otherwise fault in."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(384, 1536), torch.nn.GELU(),
                                torch.nn.Linear(1536, 384), torch.nn.LayerNorm(384))
    x = torch.randn(4, 96, 384)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="stax")

    def step():
        compiled(x).square().mean().backward()
        model.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    warm = stax.memory_stats()["output_pool"]
    for _ in range(3):
        step()
    after = stax.memory_stats()["output_pool"]
    assert after["hits"] > warm["hits"]
    assert after["allocated_bytes"] == warm["allocated_bytes"], (warm, after)
    assert after["live_bytes"] + after["cached_bytes"] <= after["peak_live_bytes"]
