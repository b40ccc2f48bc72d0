"""Modules through torch.compile vs eager, forward and (where they train) backward, comparing
outputs, parameter gradients, input gradients and buffers: an MLP with GELU, LayerNorm and
RMSNorm, softmax and log_softmax, cross-entropy, attention written out with matmuls and a
causal mask, nn.TransformerEncoderLayer in eval and train mode, a GPT-style decoder block, a
CNN with BatchNorm, and a compiled AdamW step (foreach=True).

Under Stax each test also runs stax.explain on the same step: the fraction of ATen ops that
fell back is recorded (printed at the end of the run) and only ops with no Stax counterpart
may fall back: matrix products (until the scheduler issue adds external calls), convolutions,
random ops and scatters.
"""

import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_comparison import assert_same, check_explain, compile_counted

# Matrix products fall back until the scheduler issue gives Stax external calls.
MATMUL = {"mm", "bmm", "addmm", "baddbmm"}
# Random ops run in PyTorch in this issue (dropout in train mode draws a mask).
RANDOM = {"native_dropout", "bernoulli", "rand", "rand_like", "randn", "inductor_random"}
# Stax has no convolution.
CONVOLUTION = {"convolution", "convolution_backward"}
# Writes to computed positions: Stax has gathers but no scatters.
SCATTER = {"scatter", "scatter_add", "index_put", "nll_loss_backward"}


def weighted_sum(output):
    """A loss whose gradient differs per element (a plain sum would send ones backwards),
    from a generator of its own so it does not disturb the global seed."""
    generator = torch.Generator().manual_seed(1)
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    total = 0
    for out in outputs:
        total = total + (out * torch.randn(out.shape, generator=generator, dtype=out.dtype)).sum()
    return total


def clone_inputs(inputs):
    return [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]


def run_step(module, inputs, train):
    output = module(*inputs)
    if train:
        weighted_sum(output).backward()
    return output


def check_module(name, module, inputs, backend, is_stax, train=True, may_fall_back=MATMUL, must_run_in_stax=()):
    """Runs module eagerly and compiled (a deep copy) on copies of inputs; compares outputs
    and, when train, the gradients of parameters and inputs after backward of a weighted sum;
    compares buffers (BatchNorm statistics) afterwards. Under Stax, checks stax.explain."""
    eager_module = module
    compiled_module = copy.deepcopy(module)
    explained_module = copy.deepcopy(module)
    eager_inputs, compiled_inputs, explained_inputs = clone_inputs(inputs), clone_inputs(inputs), clone_inputs(inputs)

    expected = run_step(eager_module, eager_inputs, train)
    compiled, counter = compile_counted(compiled_module, backend)
    actual = run_step(compiled, compiled_inputs, train)
    assert counter.graphs >= 1, f"{name}: {backend} never received a graph"

    assert_same(actual, expected, f"{name} output")
    if train:
        for (param_name, param), compiled_param in zip(eager_module.named_parameters(), compiled_module.parameters()):
            assert_same(compiled_param.grad, param.grad, f"{name} grad of {param_name}")
        for index, (x, compiled_x) in enumerate(zip(eager_inputs, compiled_inputs)):
            if x.requires_grad:
                assert_same(compiled_x.grad, x.grad, f"{name} grad of input {index}")
    for (buffer_name, buffer), compiled_buffer in zip(eager_module.named_buffers(), compiled_module.buffers()):
        assert_same(compiled_buffer, buffer, f"{name} buffer {buffer_name}")

    if is_stax:
        check_explain(
            name,
            lambda *xs: run_step(explained_module, xs, train),
            *explained_inputs,
            may_fall_back=may_fall_back,
            must_run_in_stax=must_run_in_stax,
        )
    return actual


def randn(*shape, requires_grad=False):
    return torch.randn(*shape).requires_grad_(requires_grad)


class MLP(nn.Module):
    def __init__(self, width=32, hidden=64, out=16, approximate="none"):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, out)
        self.approximate = approximate

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.approximate))


@pytest.mark.parametrize("approximate", ("none", "tanh"))
def test_mlp_with_gelu(backend, is_stax, approximate):
    check_module(
        f"MLP (GELU {approximate})",
        MLP(approximate=approximate),
        [randn(8, 32, requires_grad=True)],
        backend,
        is_stax,
        must_run_in_stax=("gelu",),
    )


class HandwrittenRMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(width) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def with_random_affine(norm):
    # Affine parameters away from their 1/0 initialisation, so that their use is tested.
    with torch.no_grad():
        for param in norm.parameters():
            param.copy_(torch.rand(param.shape) + 0.5)
    return norm


@pytest.mark.parametrize(
    "norm",
    ("layer_norm", "rms_norm", "handwritten_rms_norm"),
)
def test_normalization(backend, is_stax, norm):
    module = {
        "layer_norm": lambda: with_random_affine(nn.LayerNorm(64)),
        "rms_norm": lambda: with_random_affine(nn.RMSNorm(64)),
        "handwritten_rms_norm": lambda: HandwrittenRMSNorm(64),
    }[norm]()
    x = randn(4, 10, 64, requires_grad=True) * 3 + 1
    check_module(norm, module, [x.detach().requires_grad_()], backend, is_stax, may_fall_back=())


class Softmaxes(nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1), torch.log_softmax(x, 1), torch.softmax(x * 4, 0)


def test_softmax_and_log_softmax(backend, is_stax):
    x = randn(4, 10, 33, requires_grad=True)
    check_module("softmax/log_softmax", Softmaxes(), [x], backend, is_stax, may_fall_back=())


class CrossEntropy(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, **self.kwargs)


@pytest.mark.parametrize(
    "kwargs",
    ({}, {"label_smoothing": 0.1, "ignore_index": 3}, {"reduction": "sum"}),
    ids=("mean", "label_smoothing_ignore_index", "sum"),
)
def test_cross_entropy(backend, is_stax, kwargs):
    logits = randn(16, 10, requires_grad=True)
    targets = torch.randint(0, 10, (16,))
    targets[:4] = 3
    name = f"cross-entropy ({','.join(kwargs) or 'mean'})"
    check_module(name, CrossEntropy(**kwargs), [logits, targets], backend, is_stax, may_fall_back=SCATTER)


def causal_attention(q, k, v):
    """Scaled dot-product attention written out: scores from a matmul, a causal mask from
    arange, a softmax, a second matmul."""
    n = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    future = torch.arange(n)[None, :] > torch.arange(n)[:, None]
    return torch.softmax(scores.masked_fill(future, float("-inf")), -1) @ v


class CausalAttention(nn.Module):
    def forward(self, q, k, v):
        return causal_attention(q, k, v)


def test_attention_with_causal_mask(backend, is_stax):
    q, k, v = (randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
    name = "attention (matmul + causal mask)"
    out = check_module(name, CausalAttention(), [q, k, v], backend, is_stax, must_run_in_stax=("where",))
    # The written-out form is PyTorch's own attention.
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True))


class ScaledByConstants(nn.Module):
    """Tensors made in forward from Python numbers (GPT-2's attention scale and LLaMA's
    rotary tables do this): the traced graph holds them as constants, read by
    lift_fresh_copy."""

    def forward(self, x):
        weights = torch.tensor([1.0, -2.0, 3.0, 0.5])
        return (x * weights).relu() + torch.tensor(0.25)


def test_tensor_constants_run_in_stax(backend, is_stax):
    check_module("tensor constants", ScaledByConstants(), [randn(5, 4, requires_grad=True)],
                 backend, is_stax, may_fall_back=set(), must_run_in_stax=("lift_fresh_copy",))


def encoder_layer():
    # dropout=0: in train mode the layer still draws dropout masks (random ops, which fall
    # back to PyTorch), but with p=0 every element is kept whatever was drawn, so compiled and
    # eager agree exactly. With p>0 and the same seed they would agree only if the compiled
    # graph drew its random numbers in eager's order, which AOTAutograd does not promise.
    return nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)


def test_transformer_encoder_layer_train(backend, is_stax):
    layer = encoder_layer().train()
    check_module(
        "TransformerEncoderLayer train",
        layer,
        [randn(2, 12, 32, requires_grad=True)],
        backend,
        is_stax,
        may_fall_back=MATMUL | RANDOM,
    )


@pytest.fixture
def mha_fastpath():
    """Sets whether eval-mode transformer layers under no_grad take PyTorch's fused fast
    path (one _transformer_encoder_layer_fwd op), restoring the setting afterwards."""
    before = torch.backends.mha.get_fastpath_enabled()
    yield torch.backends.mha.set_fastpath_enabled
    torch.backends.mha.set_fastpath_enabled(before)


def test_transformer_encoder_layer_eval_inference(backend, is_stax, mha_fastpath):
    # Without the fast path the layer is the ordinary composition of ATen ops, in eager and
    # in the traced graph, and everything but the matrix products (attention included) must
    # run in Stax.
    mha_fastpath(False)
    with torch.no_grad():
        out = check_module(
            "TransformerEncoderLayer eval (no_grad)",
            encoder_layer().eval(),
            [randn(2, 12, 32)],
            backend,
            is_stax,
            train=False,
            may_fall_back=MATMUL,
        )
    assert not out.requires_grad


def test_transformer_encoder_layer_eval_fastpath(backend, is_stax, mha_fastpath):
    # With the fast path, dynamo records the fused native op, which Stax does not implement:
    # it falls back and the result is still eager's.
    mha_fastpath(True)
    with torch.no_grad():
        check_module(
            "TransformerEncoderLayer eval (no_grad, fast path)",
            encoder_layer().eval(),
            [randn(2, 12, 32)],
            backend,
            is_stax,
            train=False,
            may_fall_back=MATMUL | {"_transformer_encoder_layer_fwd"},
        )


def test_transformer_encoder_layer_eval_with_grad(backend, is_stax):
    check_module(
        "TransformerEncoderLayer eval",
        encoder_layer().eval(),
        [randn(2, 12, 32, requires_grad=True)],
        backend,
        is_stax,
        may_fall_back=MATMUL,
    )


class DecoderBlock(nn.Module):
    """A GPT-2 style block: pre-LayerNorm causal self-attention and a GELU (tanh) MLP, each
    with a residual connection."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = causal_attention(q, k, v).transpose(1, 2).reshape(batch, length, width)
        x = x + self.proj(attended)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def test_gpt_decoder_block(backend, is_stax):
    check_module(
        "GPT decoder block",
        DecoderBlock(),
        [randn(2, 16, 32, requires_grad=True)],
        backend,
        is_stax,
        must_run_in_stax=("gelu",),
    )


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean((2, 3)))


@pytest.mark.parametrize("mode", ("train", "eval"))
def test_cnn_with_batch_norm(backend, is_stax, mode):
    # In train mode BatchNorm normalizes with batch statistics and updates its running
    # statistics in place (compared as buffers); in eval mode it uses them.
    model = SmallCNN()
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    model.train(mode == "train")
    check_module(
        f"CNN with BatchNorm ({mode})",
        model,
        [randn(4, 3, 12, 12, requires_grad=True)],
        backend,
        is_stax,
        may_fall_back=MATMUL | CONVOLUTION,
    )


def adamw_setup():
    torch.manual_seed(0)
    model = MLP()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, foreach=True)
    return model, optimizer


def set_grads(model, step):
    generator = torch.Generator().manual_seed(100 + step)
    for param in model.parameters():
        param.grad = torch.randn(param.shape, generator=generator)


def test_adamw_step_foreach(backend, is_stax):
    eager_model, eager_optimizer = adamw_setup()
    compiled_model, compiled_optimizer = adamw_setup()
    storage = [param.data_ptr() for param in compiled_model.parameters()]

    compiled_step, counter = compile_counted(compiled_optimizer.step, backend)
    for step in range(3):
        set_grads(eager_model, step)
        set_grads(compiled_model, step)
        eager_optimizer.step()
        compiled_step()
        for (name, param), compiled_param in zip(eager_model.named_parameters(), compiled_model.parameters()):
            assert_same(compiled_param, param, f"step {step}: {name}")
    assert counter.graphs >= 1
    # The step updates the parameters in place, as eager does.
    assert [param.data_ptr() for param in compiled_model.parameters()] == storage
    for eager_param, compiled_param in zip(eager_model.parameters(), compiled_model.parameters()):
        assert_same(compiled_optimizer.state[compiled_param], eager_optimizer.state[eager_param], "optimizer state")

    if is_stax:
        explained_model, explained_optimizer = adamw_setup()
        set_grads(explained_model, 0)
        check_explain("AdamW step (foreach)", lambda: explained_optimizer.step(), may_fall_back=())
