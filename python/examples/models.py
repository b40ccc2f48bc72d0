"""Small models shared by the demo, the benchmarks and the tests."""

import torch
import torch.nn.functional as F


class DecoderBlock(torch.nn.Module):
    """A GPT-style decoder block: pre-LayerNorm causal self-attention written out with
    matmuls and a mask built in the graph, then a GELU MLP."""

    def __init__(self, dim: int = 128, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.fc = torch.nn.Linear(dim, 4 * dim)
        self.out = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, h, c // h).transpose(1, 2)
        k = k.view(b, t, h, c // h).transpose(1, 2)
        v = v.view(b, t, h, c // h).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (c // h) ** -0.5
        causal = torch.arange(t)[:, None] >= torch.arange(t)[None, :]
        scores = scores.masked_fill(~causal, float("-inf"))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))
