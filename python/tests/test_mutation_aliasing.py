"""What a compiled function does to its inputs and how its outputs relate to them, as in
eager: inference under torch.no_grad(); in-place updates of inputs (x.add_(1), through a
transposed input, BatchNorm running statistics) land in the caller's tensors; an input
returned unchanged is the same tensor object; an output that is a view of an input shares its
storage (and sees later writes to it)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_comparison import assert_same, check_against_eager, compile_counted
from input_layouts import random_values


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 3)

    def forward(self, x):
        return self.fc2(F.silu(self.fc1(x)))


def test_no_grad_inference(backend):
    model = MLP()
    x = random_values((5, 12), torch.float32, -1, 1)
    compiled, counter = compile_counted(model, backend)
    with torch.no_grad():
        out = compiled(x)
        expected = model(x)
    assert counter.graphs == 1
    assert not out.requires_grad
    assert_same(out, expected)
    # The same module with grad enabled is another graph (with a backward), still right.
    out_with_grad = compiled(x)
    assert out_with_grad.requires_grad
    assert_same(out_with_grad, model(x))


def add_one_in_place(x, y):
    x.add_(1)
    return x * y


def test_input_mutation_lands_in_the_callers_tensor(backend):
    x = random_values((4, 9), torch.float32, -1, 1)
    y = random_values((4, 9), torch.float32, -1, 1)
    expected_x = x + 1
    compiled, _ = compile_counted(add_one_in_place, backend)
    row = x[1]  # a view taken before the call sees the update: it happened in x's storage
    storage = x.data_ptr()
    out = compiled(x, y)
    assert x.data_ptr() == storage
    assert_same(x, expected_x, "x after the call")
    assert_same(row, expected_x[1], "view of x")
    assert_same(out, expected_x * y)
    # check_against_eager also compares the inputs after the call with eager's.
    check_against_eager(add_one_in_place, (random_values((4, 9), torch.float32, -1, 1), y), backend)


def scale_in_place(x):
    x.mul_(2).sub_(0.5)
    return x.sum(0)


def test_mutation_of_a_transposed_input(backend):
    base = random_values((7, 5), torch.float32, -1, 1)
    expected_base = base * 2 - 0.5
    compiled, _ = compile_counted(scale_in_place, backend)
    out = compiled(base.t())
    assert_same(base, expected_base, "base of the mutated transposed input")
    assert_same(out, expected_base.t().sum(0))


def test_batch_norm_running_statistics_update_in_place(backend):
    eager = nn.BatchNorm1d(6).train()
    compiled_bn = nn.BatchNorm1d(6).train()
    buffers = {name: buffer for name, buffer in compiled_bn.named_buffers()}
    pointers = {name: buffer.data_ptr() for name, buffer in buffers.items()}
    compiled, _ = compile_counted(compiled_bn, backend)
    for step in range(2):
        x = random_values((10, 6), torch.float32, -1, 3)
        assert_same(compiled(x), eager(x), f"output of step {step}")
    for name, buffer in eager.named_buffers():
        # the same tensor objects and storage as before, holding eager's values
        assert compiled_bn.get_buffer(name) is buffers[name]
        assert buffers[name].data_ptr() == pointers[name]
        assert_same(buffers[name], buffer, name)
    assert int(buffers["num_batches_tracked"]) == 2


def pass_through(x, y):
    return x, y + 1, y


def test_input_returned_unchanged_is_the_same_tensor(backend):
    x, y = torch.randn(3, 4), torch.randn(4)
    eager = pass_through(x, y)
    assert eager[0] is x and eager[2] is y
    compiled, _ = compile_counted(pass_through, backend)
    out = compiled(x, y)
    assert out[0] is x
    assert out[2] is y
    assert_same(out[1], y + 1)


def views_of_input(x):
    return x.t(), x[1:], x.view(-1), x.unsqueeze(0)[:, ::2], x * 2


def test_output_view_of_an_input_shares_its_storage(backend):
    x = torch.randn(4, 6)
    compiled, _ = compile_counted(views_of_input, backend)
    outs = compiled(x)
    assert_same(outs, views_of_input(x))
    for index, view in enumerate(outs[:4]):
        assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr(), f"view {index}"
        assert view._base is x, f"view {index}"
    assert outs[4].untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    x[1, 0] = 42.0
    assert outs[0][0, 1] == 42.0 and outs[1][0, 0] == 42.0 and outs[2][6] == 42.0


def mutate_then_view(x):
    x.add_(1)
    return x.t(), x.sum()


def test_view_of_a_mutated_input(backend):
    x = torch.randn(3, 5)
    expected = x + 1
    compiled, _ = compile_counted(mutate_then_view, backend)
    view, total = compiled(x)
    assert_same(x, expected)
    assert view._base is x
    assert_same(view, expected.t())
    assert_same(total, expected.sum())
