"""Issue 14, point 4: a graph of ops Stax runs is one compiled Stax program. GPT-2 (eager
attention), a T5 encoder and a LLaMA-style decoder, built from tiny configs with random weights
(nothing downloaded), forward and backward: every forward graph is one Stax region, matrix
products included, and only the backward's scatters (embedding and slice gradients) run in
PyTorch. The compiled outputs and gradients match eager's.
"""

import os

import pytest
import torch

import stax
from eager_comparison import assert_same, summation_tolerance

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import transformers  # noqa: E402

HIDDEN = 64
INTERMEDIATE = 128
VOCAB = 100


def gpt2():
    config = transformers.GPT2Config(n_layer=2, n_embd=HIDDEN, n_head=4, vocab_size=VOCAB,
                                     n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, attn_implementation="eager")
    return transformers.GPT2LMHeadModel(config)


def t5_encoder():
    config = transformers.T5Config(num_layers=2, d_model=HIDDEN, d_ff=INTERMEDIATE, num_heads=4,
                                   d_kv=16, vocab_size=VOCAB, dropout_rate=0.0)
    return transformers.T5EncoderModel(config)


def llama():
    config = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=HIDDEN,
                                      intermediate_size=INTERMEDIATE, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=VOCAB,
                                      max_position_embeddings=32, attn_implementation="eager")
    return transformers.LlamaForCausalLM(config)


MODELS = {"gpt2": gpt2, "t5_encoder": t5_encoder, "llama": llama}


def first_tensor(out):
    if hasattr(out, "logits"):
        return out.logits
    return out.last_hidden_state


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_and_backward_are_one_stax_program_each(name):
    torch.manual_seed(0)
    model = MODELS[name]().train()
    ids = torch.randint(0, VOCAB, (2, 16), generator=torch.Generator().manual_seed(1))

    def loss(ids):
        return first_tensor(model(ids)).float().square().mean()

    report = stax.explain(loss, ids, backward=True)
    kinds = [g.kind for g in report.graphs]
    assert "forward" in kinds and "backward" in kinds, kinds
    # The backward's scatters (the embedding gradient's index_put, slice_scatter) run in
    # Stax too: each graph is one Stax program with nothing left to PyTorch.
    for g in report.graphs:
        assert len(g.regions) == 1, (name, g)
    matrix_products = sum(report.stax_ops.get(op, 0) for op in ("mm", "bmm", "addmm", "baddbmm"))
    assert matrix_products > 0, report.stax_ops
    for op in ("mm", "bmm", "addmm", "baddbmm"):
        assert report.fallback_ops.get(op, 0) == 0, report.fallback_ops
    assert not report.fallback_ops, report.fallback_ops

    # The compiled loss and gradients match eager's (explain ran them compiled).
    model.zero_grad()
    expected = loss(ids)
    expected.backward()
    expected_grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    compiled = torch.compile(loss, backend="stax")
    actual = compiled(ids)
    actual.backward()
    actual_grads = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    # Products over the 128 intermediate features summed in another order than eager's.
    tolerance = summation_tolerance(torch.float32, INTERMEDIATE, 4.0)
    assert_same(actual, expected, **tolerance)
    assert actual_grads.keys() == expected_grads.keys()
    assert_same(actual_grads, expected_grads, "grad", **tolerance)
