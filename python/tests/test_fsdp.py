"""FSDP2 (`fully_shard`) with the gloo backend, 2 processes on this machine (issue 34, point
5): each block of a small transformer-like model sharded and compiled with backend="stax",
trained 3 steps with SGD and momentum; the parameters, gathered, match an uncompiled FSDP2
run in both processes, and the blocks' forward and backward graphs ran in Stax regions."""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

from eager_comparison import assert_same
from test_ddp import free_port

WORLD_SIZE = 2
STEPS = 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(64, 128)
        self.down = nn.Linear(128, 64)
        self.norm = nn.LayerNorm(64)

    def forward(self, x):
        return self.norm(x + self.down(F.gelu(self.up(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(64, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make_model(backend):
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = Net()
    for block in model.blocks:
        fully_shard(block)
        if backend is not None:
            block.compile(backend=backend)
    fully_shard(model)
    return model


def train(model, rank):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        generator = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(8, 64, generator=generator), torch.randn(8, 4, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return [p.full_tensor().detach().clone() for p in model.parameters()]


def worker(rank, port, backend, result_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    stats = None
    if backend == "stax":
        import stax
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    try:
        expected = train(make_model(None), rank)
        actual = train(make_model(backend), rank)
        if backend == "stax":
            stats = stax.compile_stats()
        result = {"expected": expected, "actual": actual, "stats": stats}
        torch.save(result, os.path.join(result_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_fsdp2_compiled_matches_uncompiled(backend, is_stax, tmp_path):
    mp.spawn(worker, args=(free_port(), backend, str(tmp_path)), nprocs=WORLD_SIZE, join=True)
    results = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD_SIZE)]
    for rank, result in enumerate(results):
        assert_same(result["actual"], result["expected"], f"rank {rank} parameters")
        if is_stax:
            # A forward and a backward graph per block's frame, each with a Stax region.
            stats = result["stats"]
            assert stats["graphs"] >= 2 and stats["regions"] >= stats["graphs"], stats
    # FSDP keeps one set of parameters: both ranks gather the same.
    assert_same(results[1]["actual"], results[0]["actual"], "rank 1 vs rank 0")
