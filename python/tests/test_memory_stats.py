"""stax.memory_stats() (issue 32, point 4.3): what Stax holds besides the tensors it returned,
from the C++ side. A program's arena of intermediates is taken on its first call and kept
(held_bytes grows by the program's arena_bytes, and not again on the next call); a freed
large output stays in the output pool until trim_output_pool() (cached bytes back to 0); a library
call's workspace counts while its program lives. Deltas only: other tests of the process may
hold memory too."""

import gc

import torch

import stax
from stax.region import POOLED_OUTPUT_BYTES


def _program(stats, library):
    return next((p for p in stats["arenas"]["programs"] if p["library"] == library), None)


def test_the_arena_total_grows_by_a_programs_arena_once():
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
    assert program["held_bytes"] == program["arena_bytes"]
    assert after["arenas"]["held_bytes"] == before["arenas"]["held_bytes"] + program["arena_bytes"]
    second = compiled(x)
    again = stax.memory_stats()
    assert again["arenas"]["held_bytes"] == after["arenas"]["held_bytes"]
    torch.testing.assert_close(second, first)
    torch.testing.assert_close(first, fn(x), rtol=1e-5, atol=1e-3)


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


def test_library_workspaces_are_counted_while_their_program_lives():
    """A convolution runs through the library with a workspace (its operands reordered, its
    scratchpad) that the program keeps for the next call, and gives back with the program."""
    x, w = torch.randn(2, 16, 31, 29), torch.randn(32, 16, 3, 3)
    torch._dynamo.reset()
    gc.collect()
    before = stax.memory_stats()["scratch"]["library_workspace_bytes"]
    compiled = torch.compile(lambda x, w: torch.nn.functional.conv2d(x, w), backend="stax")
    compiled(x, w)
    held = stax.memory_stats()["scratch"]["library_workspace_bytes"]
    assert held > before
    del compiled
    torch._dynamo.reset()
    gc.collect()
    assert stax.memory_stats()["scratch"]["library_workspace_bytes"] == before
    assert stax.memory_stats()["scratch"]["program_bytes"] >= 0
