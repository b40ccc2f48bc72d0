"""The written-out attention runs as one blocked call (issue 15, point 1): transformers' eager
attention (matmul -> scale -> additive mask -> softmax -> matmul, which ATen decomposes into
two batched products around exp, amax, sum and div) becomes Stax's softmax_attention in
inference graphs where the cost model finds that the blocked form moves fewer bytes
(graph_passes/fuse_written_attention.h); the scores then never leave cache. A training
graph saves the probabilities for the backward, so its attention stays written out.

Tolerance: as test_attention's, both Stax and eager are compared with the same math in
float64, and Stax's largest error may be at most twice eager's plus one unit in the last place
of the largest reference value: the blocked form rounds in another order (and a 16-bit one
keeps its scores in float32), so neither is the other's bits.
"""

import copy

import pytest
import torch

import stax
from test_attention import assert_as_accurate_as_eager, tensor

REWRITTEN = "becomes softmax_attention"
KEPT = "stays written out"


def explain_lines(report):
    """The lowering log lines of every region that name a written-out attention."""
    lines = []
    for graph in report.graphs:
        for region in graph.regions:
            text = region.primary.compiled.explain()
            lines += [line for line in text.splitlines() if "written-out attention" in line]
    return lines


def written_out(q, k, v, mask, scale):
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s + mask
    return torch.matmul(torch.softmax(s, dim=-1), v)


def check(q, k, v, mask, scale, expect_rewrite=True):
    with torch.no_grad():
        report = stax.explain(written_out, q, k, v, mask, scale)
        lines = explain_lines(report)
        assert len(lines) == 1 and (REWRITTEN if expect_rewrite else KEPT) in lines[0], lines
        assert sum(report.fallback_ops.values()) == 0, report
        torch._dynamo.reset()
        actual = torch.compile(written_out, backend="stax")(q, k, v, mask, scale)
        expected = written_out(q, k, v, mask, scale)
        exact = written_out(q.double(), k.double(), v.double(),
                            None if mask is None else mask.double(), scale)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert_as_accurate_as_eager(actual, expected, exact, "output")
    return actual


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mask_shape", [None, (2, 1, 1, 128), (1, 1, 128, 128), (2, 4, 128, 128)])
def test_written_out_attention_is_one_blocked_call(dtype, mask_shape):
    # The [B, L, H, E] storage that models produce, seen as [B, H, L, E].
    q, k, v = (tensor(2, 128, 4, 32, dtype=dtype, seed=s).transpose(1, 2) for s in (1, 2, 3))
    mask = None
    if mask_shape is not None:
        mask = tensor(*mask_shape, dtype=dtype, seed=4)
        mask = mask.masked_fill(mask > 1.5, torch.finfo(dtype).min)  # models' masked keys
    check(q, k, v, mask, 32 ** -0.5)


def test_a_row_every_key_is_masked_from_gives_nan_as_softmax_does():
    q, k, v = (tensor(2, 4, 128, 32, seed=s) for s in (1, 2, 3))
    mask = torch.zeros(2, 1, 128, 128)
    mask[1, 0, 9] = -float("inf")
    with torch.no_grad():
        expected = written_out(q, k, v, mask, 0.2)
        actual = torch.compile(written_out, backend="stax")(q, k, v, mask, 0.2)
    assert torch.isnan(expected[1, :, 9]).all()
    assert torch.isnan(actual[1, :, 9]).all()
    assert not torch.isnan(actual[0]).any() and not torch.isnan(actual[1, :, 10:]).any()


def test_small_scores_stay_written_out():
    """One 16 x 16 block per head: the blocks' fixed costs outweigh the scores' traffic."""
    q, k, v = (tensor(1, 2, 16, 32, seed=s) for s in (1, 2, 3))
    check(q, k, v, None, 0.25, expect_rewrite=False)


def models():
    transformers = pytest.importorskip("transformers")
    common = dict(num_hidden_layers=2, attn_implementation="eager")
    return {
        "gpt2": lambda: transformers.GPT2Model(transformers.GPT2Config(
            n_embd=128, n_head=4, n_layer=2, vocab_size=100, attn_implementation="eager")),
        "bert": lambda: transformers.BertModel(transformers.BertConfig(
            hidden_size=128, num_attention_heads=4, intermediate_size=256, vocab_size=100,
            **common)),
        "llama": lambda: transformers.LlamaModel(transformers.LlamaConfig(
            hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=4,
            vocab_size=100, **common)),
        # repeat_kv's copies of 2 key/value heads for 4 query heads: read as grouped-query.
        "llama-gqa": lambda: transformers.LlamaModel(transformers.LlamaConfig(
            hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=100, **common)),
    }


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", ["gpt2", "bert", "llama", "llama-gqa"])
def test_models_eager_attention_in_inference(name, dtype):
    torch.manual_seed(0)
    model = models()[name]().eval()
    exact_model = copy.deepcopy(model).double()
    model = model.to(dtype)
    ids = torch.randint(0, 100, (2, 128))
    attention_mask = torch.ones(2, 128, dtype=torch.long)
    attention_mask[1, 100:] = 0

    def run(m):
        return m(input_ids=ids, attention_mask=attention_mask).last_hidden_state

    with torch.no_grad():
        report = stax.explain(lambda: run(model))
        lines = explain_lines(report)
        assert len(lines) == 2 and all(REWRITTEN in line for line in lines), lines
        assert sum(report.fallback_ops.values()) == 0, report
        torch._dynamo.reset()
        actual = torch.compile(run, backend="stax")(model)
        expected = run(model)
        exact = run(exact_model)
    assert_as_accurate_as_eager(actual, expected, exact, "hidden states")


def test_training_keeps_the_probabilities_for_the_backward():
    q, k, v = (tensor(2, 4, 128, 32, seed=s).requires_grad_(True) for s in (1, 2, 3))
    report = stax.explain(written_out, q, k, v, None, 0.2, backward=True)
    lines = explain_lines(report)
    assert lines == [], lines


def test_the_graph_passes_option_lowers_the_graph_as_written():
    q, k, v = (tensor(2, 4, 128, 32, seed=s) for s in (1, 2, 3))
    with torch.no_grad():
        report = stax.explain(written_out, q, k, v, None, 0.2, options={"graph_passes": False})
        assert explain_lines(report) == []
        torch._dynamo.reset()
        compiled = torch.compile(written_out, backend="stax", options={"graph_passes": False})
        actual = compiled(q, k, v, None, 0.2)
        expected = written_out(q, k, v, None, 0.2)
        exact = written_out(q.double(), k.double(), v.double(), None, 0.2)
    assert_as_accurate_as_eager(actual, expected, exact, "output")
    with pytest.raises(Exception, match="option 'graph_passes' must be a bool"):
        torch.compile(written_out, backend="stax", options={"graph_passes": 1})(q, k, v, None, 0.2)
