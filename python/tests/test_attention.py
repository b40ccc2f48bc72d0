"""Attention runs in Stax (issue 15, point 1): torch.compile(backend="stax") of
F.scaled_dot_product_attention, which PyTorch lowers to _scaled_dot_product_flash_attention_for_cpu
and its backward, runs both in Stax's runtime attention (one call each, nothing in PyTorch):
causal, additive and boolean masks (PyTorch turns a boolean mask into an additive one before
the kernel), grouped-query heads (enable_gqa), an explicit scale, the [B, L, H, E] layouts that
models produce, float32 and bfloat16, one and two threads; a BERT model built with
attn_implementation="sdpa" trains as one Stax program per graph.

Tolerance: both Stax and eager's kernel are compared with attention computed in float64, and
Stax's largest error may be at most twice eager's plus one unit in the last place of the
largest reference value. The two kernels round in different orders (blocks of keys, exp
approximations, 16-bit probabilities), so neither is the other's bits; eager's own error is
the measure of what the dtype and the sums over the keys allow.
"""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

import stax
from eager_comparison import op_counts

aten = torch.ops.aten
FORWARD = "_scaled_dot_product_flash_attention_for_cpu"
BACKWARD = FORWARD + "_backward"


def tensor(*sizes, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(sizes, generator=g, dtype=torch.float64).to(dtype)


def reference(q, k, v, mask=None, causal=False, scale=None):
    """Attention in float64 with autograd, the same math eager's kernel approximates."""
    q, k, v = (t.detach().double().requires_grad_(True) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = (q @ kk.transpose(-1, -2)) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s + (mask.double() if mask.dtype != torch.bool
                 else torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, -math.inf))
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -math.inf)
    out = torch.softmax(s, -1) @ vv
    return out, (q, k, v)


def assert_as_accurate_as_eager(actual, eager, exact, what):
    exact = exact.detach()
    err_stax = (actual.detach().double() - exact).abs().max().item()
    err_eager = (eager.detach().double() - exact).abs().max().item()
    ulp = torch.finfo(actual.dtype).eps * exact.abs().max().item()
    assert err_stax <= 2 * err_eager + ulp, (
        f"{what}: Stax's error {err_stax:.3g}, eager's {err_eager:.3g} (ulp {ulp:.3g})")


def run_both(fn, inputs, grad_seed=7):
    """fn's output and the inputs' gradients, eagerly and compiled by Stax."""
    results = []
    for compiled in (False, True):
        leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
        f = torch.compile(fn, backend="stax", fullgraph=True) if compiled else fn
        out = f(*leaves)
        grad = tensor(*out.shape, dtype=out.dtype, seed=grad_seed)
        out.backward(grad)
        results.append((out, [t.grad for t in leaves if t.requires_grad], grad))
    return results


def check(fn, q, k, v, mask=None, causal=False, scale=None, extra=()):
    (out_e, grads_e, grad), (out_s, grads_s, _) = run_both(fn, [q, k, v, *extra])
    exact, leaves = reference(q, k, v, mask, causal, scale)
    exact.backward(grad.double())
    assert_as_accurate_as_eager(out_s, out_e, exact, "output")
    for name, g_s, g_e, leaf in zip("qkv", grads_s, grads_e, leaves):
        assert_as_accurate_as_eager(g_s, g_e, leaf.grad, f"grad of {name}")


def explain_counts(fn, *args):
    report = stax.explain(fn, *args, backward=True)
    return op_counts(report.stax_ops), op_counts(report.fallback_ops)


DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_and_backward_run_in_stax(dtype, causal):
    q, k, v = (tensor(2, 4, 77, 64, dtype=dtype, seed=s) for s in range(3))

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    check(fn, q, k, v, causal=causal)
    in_stax, in_torch = explain_counts(fn, q.requires_grad_(), k.requires_grad_(),
                                       v.requires_grad_())
    assert in_stax.get(FORWARD) == 1 and in_stax.get(BACKWARD) == 1, in_stax
    assert in_torch == {}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("mask_shape", [(77, 90), (2, 1, 77, 90), (1, 90)], ids=str)
def test_additive_masks_and_a_scale(dtype, mask_shape):
    q = tensor(2, 3, 77, 32, dtype=dtype, seed=1)
    k, v = (tensor(2, 3, 90, 32, dtype=dtype, seed=s) for s in (2, 3))
    mask = tensor(*mask_shape, dtype=dtype, seed=4)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)

    check(fn, q, k, v, mask=mask, scale=0.3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_boolean_mask_with_fully_masked_rows(dtype):
    q, k, v = (tensor(1, 2, 20, 16, dtype=dtype, seed=s) for s in range(3))
    mask = torch.rand(20, 20, generator=torch.Generator().manual_seed(5)) > 0.4
    mask[0] = False  # a row every key is masked from: eager's kernel gives 0, not NaN

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    (out_e, grads_e, _), (out_s, grads_s, _) = run_both(fn, [q, k, v])
    assert torch.equal(out_s[:, :, 0], torch.zeros_like(out_s[:, :, 0]))
    assert torch.equal(out_e[:, :, 0], out_s[:, :, 0])
    exact, _ = reference(q, k, v, mask)
    assert_as_accurate_as_eager(out_s[:, :, 1:], out_e[:, :, 1:], exact[:, :, 1:], "output")
    for g_s, g_e in zip(grads_s, grads_e):
        torch.testing.assert_close(g_s, g_e, rtol=0.05, atol=0.05 * g_e.abs().max().item())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_grouped_query_heads_from_model_layouts(dtype):
    """LLaMA-style: 8 query heads over 2 key/value heads, projections stored [B, L, H, E]."""
    q = tensor(2, 50, 8, 16, dtype=dtype, seed=1).transpose(1, 2)
    k = tensor(2, 50, 2, 16, dtype=dtype, seed=2).transpose(1, 2)
    v = tensor(2, 50, 2, 16, dtype=dtype, seed=3).transpose(1, 2)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    check(fn, q, k, v, causal=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_counts_give_the_same_bits(threads):
    q, k, v = (tensor(2, 12, 128, 64, seed=s) for s in range(3))

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    one = torch.compile(fn, backend="stax", options={"threads": 1})(q, k, v)
    other = torch.compile(fn, backend="stax", options={"threads": threads})(q, k, v)
    assert torch.equal(one, other)


def test_a_mask_of_the_wrong_shape_is_refused_as_eager_refuses_it():
    q = k = v = tensor(2, 4, 8, 16)
    mask = tensor(2, 4, 8, 7)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=mask)
    with pytest.raises(Exception, match="must match the existing size"):
        torch.compile(lambda q, k, v: aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, attn_mask=mask)[0], backend="stax")(q, k, v)


def test_bert_with_sdpa_trains_as_one_stax_program():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=64, num_attention_heads=4, intermediate_size=128,
                                     num_hidden_layers=2, vocab_size=100,
                                     attn_implementation="sdpa", hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    model = transformers.BertModel(config)
    ids = torch.randint(0, 100, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.long)
    attention_mask[1, 12:] = 0

    def step(ids, attention_mask):
        return model(input_ids=ids, attention_mask=attention_mask).last_hidden_state

    report = stax.explain(step, ids, attention_mask, backward=True)
    in_stax, in_torch = op_counts(report.stax_ops), op_counts(report.fallback_ops)
    assert in_stax.get(FORWARD) == 2 and in_stax.get(BACKWARD) == 2, in_stax
    # Nothing is left to PyTorch: the padding mask's x[batch_idx, kv_idx] (an index with two
    # tensor indices) runs in Stax too.
    assert in_torch == {}, in_torch
    # Eager in float32 and float64 (the measure of float32's error), then Stax.
    exact_model = copy.deepcopy(model).double()
    exact = exact_model(input_ids=ids, attention_mask=attention_mask).last_hidden_state
    exact.sum().backward()
    expected = step(ids, attention_mask)
    expected.sum().backward()
    grads_e = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    actual = torch.compile(step, backend="stax")(ids, attention_mask)
    actual.sum().backward()
    assert_as_accurate_as_eager(actual, expected, exact, "hidden states")
    for (name, p), g_e, p64 in zip(model.named_parameters(), grads_e, exact_model.parameters()):
        assert (p.grad is None) == (g_e is None), name  # the pooler is not used
        if g_e is not None:
            assert_as_accurate_as_eager(p.grad, g_e, p64.grad, f"gradient of {name}")


def test_llama_with_grouped_query_sdpa_trains_wholly_in_stax():
    """Rotary embeddings leave the query in eager's [B, L, H, E] layout and the attention's
    output follows it; the model then views the output's transpose, which PyTorch checked
    against eager's strides (the bridge translates it as a reshape)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=96,
                                      num_attention_heads=8, num_key_value_heads=2,
                                      num_hidden_layers=2, vocab_size=100,
                                      attn_implementation="sdpa")
    torch.manual_seed(0)
    model = transformers.LlamaModel(config)
    ids = torch.randint(0, 100, (2, 16))

    def step(ids):
        return model(input_ids=ids).last_hidden_state

    report = stax.explain(step, ids, backward=True)
    in_stax, in_torch = op_counts(report.stax_ops), op_counts(report.fallback_ops)
    assert in_stax.get(FORWARD) == 2 and in_stax.get(BACKWARD) == 2, in_stax
    assert in_torch == {}, in_torch
    exact_model = copy.deepcopy(model).double()
    exact = exact_model(input_ids=ids).last_hidden_state
    exact.sum().backward()
    expected = step(ids)
    expected.sum().backward()
    grads_e = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    actual = torch.compile(step, backend="stax")(ids)
    actual.sum().backward()
    assert_as_accurate_as_eager(actual, expected, exact, "hidden states")
    for (name, p), g_e, p64 in zip(model.named_parameters(), grads_e, exact_model.parameters()):
        assert_as_accurate_as_eager(p.grad, g_e, p64.grad, f"gradient of {name}")
