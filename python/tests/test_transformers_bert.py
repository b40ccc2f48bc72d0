"""A real Hugging Face BertModel (built from a tiny BertConfig: 2 layers, hidden 64, random
weights, nothing downloaded) through torch.compile(backend="stax"): inference and 3 training
steps against eager, and stax.explain on it.

Its embeddings expand a gathered token-type buffer to the batch and its attention expands the
padding mask to (batch, 1, queries, keys); both are views whose layout no dense tensor has,
and they leave the Stax regions that compute them (saved for backward, read by the next
layer), which is what test_view_outputs.py checks on plain torch code.
"""

import copy
import os

import torch
import torch.nn.functional as F

from eager_comparison import assert_same, compile_counted, summation_tolerance

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: nothing to fetch

from transformers import BertConfig, BertModel  # noqa: E402

HIDDEN = 64
INTERMEDIATE = 128


def tiny_bert():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=HIDDEN, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=INTERMEDIATE,
                        max_position_embeddings=32, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return BertModel(config)


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 100, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 6:] = 0
    return ids, mask


# The largest reduction Stax computes in another order than eager is the MLP's bias gradient
# and LayerNorm over the 128 intermediate / 64 hidden features, of terms up to the value's
# magnitude: summation_tolerance's bound for 128 float32 terms.
def tolerance(magnitude):
    return summation_tolerance(torch.float32, INTERMEDIATE, magnitude)


def test_bert_model_inference(backend):
    model = tiny_bert().eval()
    ids, mask = batch(0)
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask)
        compiled, counter = compile_counted(model, backend)
        actual = compiled(input_ids=ids, attention_mask=mask)
    assert counter.graphs >= 1
    assert_same(actual.last_hidden_state, expected.last_hidden_state, **tolerance(4.0))
    assert_same(actual.pooler_output, expected.pooler_output, **tolerance(1.0))


def test_bert_model_trains_like_eager(backend):
    eager_model = tiny_bert()
    compiled_model = copy.deepcopy(eager_model)
    compiled_forward, counter = compile_counted(compiled_model, backend)
    head = torch.randn(HIDDEN, 3, generator=torch.Generator().manual_seed(5))
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05)
                  for m in (eager_model, compiled_model)]
    for step in range(3):
        ids, mask = batch(step)
        labels = torch.tensor([step % 3, (step + 1) % 3])
        losses = []
        for forward, opt in zip((eager_model, compiled_forward), optimizers):
            opt.zero_grad()
            pooled = forward(input_ids=ids, attention_mask=mask).pooler_output
            loss = F.cross_entropy(pooled @ head, labels)
            loss.backward()
            losses.append(loss.detach())
        assert_same(losses[1], losses[0], f"loss of step {step}", **tolerance(1.0))
        for (name, pe), pc in zip(eager_model.named_parameters(), compiled_model.parameters()):
            if pe.grad is None:
                assert pc.grad is None, name
                continue
            # Each step's parameters differ by lr times the last gradients' difference, so
            # the bound grows with the step.
            magnitude = max(float(pe.grad.abs().max()), 1e-3) * (step + 1)
            assert_same(pc.grad, pe.grad, f"step {step}: grad of {name}", **tolerance(magnitude))
        for opt in optimizers:
            opt.step()
    assert counter.graphs >= 1


def test_explain_on_bert_model(is_stax):
    if not is_stax:
        return
    import stax

    model = tiny_bert()
    ids, mask = batch(0)
    report = stax.explain(model, ids, attention_mask=mask, backward=True)
    assert {g.kind for g in report.graphs} == {"forward", "backward"}
    assert sum(report.stax_ops.values()) > 0


def test_bert_trains_with_dynamic_sizes_at_several_lengths(is_stax):
    """dynamic=True: Dynamo hands graphs over the batch and the length, and regions that take
    sizes it specialized to constants as arguments besides their tensors (a static region of a
    symbolic graph); a training step at three lengths matches eager's loss and gradients."""
    if not is_stax:
        return
    eager_model = tiny_bert()
    compiled_model = copy.deepcopy(eager_model)
    head = torch.randn(HIDDEN, 3, generator=torch.Generator().manual_seed(5))
    torch._dynamo.reset()
    compiled_forward = torch.compile(compiled_model, backend="stax", dynamic=True)
    for length in (8, 13, 5):
        g = torch.Generator().manual_seed(length)
        ids = torch.randint(0, 100, (2, length), generator=g)
        mask = torch.ones(2, length, dtype=torch.int64)
        mask[1, length - 2:] = 0
        labels = torch.tensor([length % 3, (length + 1) % 3])
        grads, losses = [], []
        for forward, model in ((eager_model, eager_model), (compiled_forward, compiled_model)):
            model.zero_grad()
            pooled = forward(input_ids=ids, attention_mask=mask).pooler_output
            loss = F.cross_entropy(pooled @ head, labels)
            loss.backward()
            losses.append(loss.detach())
            grads.append({k: p.grad.clone() for k, p in model.named_parameters()})
        assert_same(losses[1], losses[0], f"loss at length {length}", **tolerance(1.0))
        assert_same(grads[1], grads[0], f"gradients at length {length}", **tolerance(4.0))
    torch._dynamo.reset()
