"""A training loop through torch.compile: 5 steps of forward, cross-entropy loss.backward()
and an SGD-with-momentum step, whose parameters match an eager run of the same loop after
every step."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_comparison import assert_same, compile_counted


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 48)
        self.norm = nn.LayerNorm(48)
        self.fc2 = nn.Linear(48, 5)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


def batches(steps):
    generator = torch.Generator().manual_seed(7)
    return [
        (torch.randn(16, 20, generator=generator), torch.randint(0, 5, (16,), generator=generator))
        for _ in range(steps)
    ]


def train(model, forward, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    history = []
    for x, target in data:
        optimizer.zero_grad()
        loss = F.cross_entropy(forward(x), target)
        loss.backward()
        optimizer.step()
        history.append((loss.detach(), [param.detach().clone() for param in model.parameters()]))
    return history


def test_five_training_steps_match_eager(backend):
    eager_model = Classifier()
    compiled_model = copy.deepcopy(eager_model)
    compiled_forward, counter = compile_counted(compiled_model, backend)
    data = batches(5)

    expected = train(eager_model, eager_model, data)
    actual = train(compiled_model, compiled_forward, data)

    # One forward graph (and its backward), reused by every step: no recompilation.
    assert counter.graphs == 1
    for step, ((loss, params), (eager_loss, eager_params)) in enumerate(zip(actual, expected)):
        assert_same(loss, eager_loss, f"loss of step {step}")
        assert_same(params, eager_params, f"parameters after step {step}")
    # The loop trained: the loss went down.
    assert actual[-1][0] < actual[0][0]
