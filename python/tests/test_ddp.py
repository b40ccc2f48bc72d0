"""DistributedDataParallel with the gloo backend, 2 processes on this machine: a compiled DDP
model trains 3 steps and its parameters match an uncompiled DDP run, in both processes. A
model of about 3 MiB of parameters in 1 MiB buckets makes DDP's dynamo integration split the
graph at bucket boundaries, so the backend compiles several graphs."""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from eager_comparison import CountingBackend, assert_same

WORLD_SIZE = 2
STEPS = 3


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Net(nn.Module):
    # A module of the test's own: dynamo compiles the frame DDP runs under its forward, and
    # it skips frames of torch.nn's own modules (a bare nn.Sequential would not be compiled).
    def __init__(self):
        super().__init__()
        # Two 512x512 layers of 1 MiB each: dynamo's DDP support refuses buckets smaller
        # than DDP's first bucket (1 MiB).
        self.layers = nn.ModuleList([nn.Linear(16, 512), nn.Linear(512, 512), nn.Linear(512, 512), nn.Linear(512, 4)])

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = F.gelu(layer(x))
        return self.layers[-1](x)


def make_model():
    torch.manual_seed(0)
    return Net()


def train(module, forward, rank):
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        generator = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(8, 16, generator=generator), torch.randn(8, 4, generator=generator)
        optimizer.zero_grad()
        F.mse_loss(forward(x), y).backward()
        optimizer.step()
    return [param.detach().clone() for param in module.parameters()]


def worker(rank, port, backend, result_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if backend == "stax":
        import stax  # noqa: F401  (registers the backend in this process)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    try:
        bucket_mb = 1
        reference = DistributedDataParallel(make_model(), bucket_cap_mb=bucket_mb)
        compiled = DistributedDataParallel(make_model(), bucket_cap_mb=bucket_mb)
        counter = CountingBackend(backend)
        expected = train(reference, reference, rank)
        actual = train(compiled, torch.compile(compiled, backend=counter), rank)
        stats = None
        if backend == "stax":
            import stax

            stats = stax.compile_stats()
        result = {"expected": expected, "actual": actual, "graphs": counter.graphs,
                  "stats": stats}
        torch.save(result, os.path.join(result_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_ddp_compiled_matches_uncompiled(backend, is_stax, tmp_path):
    mp.spawn(worker, args=(free_port(), backend, str(tmp_path)), nprocs=WORLD_SIZE, join=True)
    results = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD_SIZE)]
    for rank, result in enumerate(results):
        assert result["graphs"] > 1, f"rank {rank}: the graph was not split at bucket boundaries"
        if is_stax:
            # Every graph DDP's split made, forward and backward, compiled Stax regions.
            stats = result["stats"]
            assert stats["graphs"] >= 2 * result["graphs"] and stats["regions"] >= stats["graphs"], stats
        assert_same(result["actual"], result["expected"], f"rank {rank} parameters")
    # DDP keeps the replicas identical.
    assert_same(results[1]["actual"], results[0]["actual"], "rank 1 vs rank 0")
