"""Region outputs that PyTorch gives as views with a layout no dense tensor has: expand,
broadcast_to, as_strided with zero or overlapping strides, diagonal, unfold, step slices and
selects (and, for completeness, permute, transpose and contiguous slices, which are dense in
some order). Each view is an output of a Stax region that the region also reads, so it is a
region output whatever the partition, and it is checked in inference (values and eager's
strides) and in training (gradients through it).

Then a BERT-style encoder in plain torch (word, position and token-type embeddings, an
expanded padding mask `mask[:, None, None, :].expand(...)` as Hugging Face's extended attention
mask, attention, a GELU MLP, LayerNorm) trained for 3 steps against eager, and stax.explain
on it, on a model with fallbacks and on outputs it has to search for tensors.
"""

import copy
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from eager_comparison import assert_same, compile_counted, summation_tolerance


def computed(t):
    # A value Stax computes: the views below are views of a region's own result.
    return t * 2 + 1


# name -> (input shape, fn(t) -> view). Every view of `computed(t)` is a view of a value the
# region computes; the as_strided views read the input itself (as_strided of a computed value
# runs in PyTorch by design: its result depends on a storage layout Stax need not share).
VIEWS = {
    "expand": ((1, 3), lambda t: computed(t).expand(4, 3)),
    "expand_new_dims": ((3, 1), lambda t: computed(t).expand(2, 3, 5)),
    "broadcast_to": ((1, 4), lambda t: torch.broadcast_to(computed(t), (3, 2, 4))),
    "as_strided_zero_stride": ((3, 4), lambda t: t.as_strided((5, 4), (0, 1))),
    "as_strided_overlapping": ((3, 4), lambda t: t.as_strided((4, 3), (2, 1), 1)),
    "diagonal": ((4, 4), lambda t: computed(t).diagonal()),
    "diagonal_offset": ((3, 5), lambda t: computed(t).diagonal(1)),
    "unfold_overlapping": ((9, 2), lambda t: computed(t).unfold(0, 4, 2)),
    "unfold_gaps": ((9, 2), lambda t: computed(t).unfold(0, 2, 3)),
    "step_slice": ((4, 6), lambda t: computed(t)[:, ::2]),
    "select": ((4, 6), lambda t: computed(t)[:, 1]),
    "expand_of_select": ((4, 6), lambda t: computed(t)[:, 1:2].expand(4, 3)),
    # Through an item: of a multi-result view (split) or of a multi-result computation, whose
    # item is the dense root.
    "step_slice_of_split": ((3, 6), lambda t: torch.split(computed(t), 3, dim=1)[1][:, ::2]),
    "expand_of_var_mean": ((3, 6), lambda t: torch.var_mean(computed(t), 1, keepdim=True)[1]
                           .expand(3, 4)),
    "permute": ((2, 3, 4), lambda t: computed(t).permute(2, 0, 1)),
    "transpose": ((3, 5), lambda t: computed(t).transpose(0, 1)),
    "slice": ((4, 6), lambda t: computed(t)[1:3]),
}


def all_views(inputs):
    """Every view, each returned and also read by a computation in the same region."""
    outs = []
    for (shape, view), t in zip(VIEWS.values(), inputs):
        v = view(t)
        outs += [v, v * 3]
    return outs


def make_inputs(requires_grad=False):
    # float64: Stax's sums and eager's then agree to assert_close's float64 default, so the
    # comparison checks which elements were summed, not the order.
    g = torch.Generator().manual_seed(1)
    return [torch.randn(shape, generator=g, dtype=torch.float64).requires_grad_(requires_grad)
            for shape, _ in VIEWS.values()]


def test_the_issue_example(backend):
    fn = lambda t: (t + 1).expand(4, 3)  # noqa: E731
    t = torch.randn(1, 3)
    compiled, counter = compile_counted(fn, backend)
    out = compiled(t)
    assert counter.graphs == 1
    assert_same(out, fn(t))
    assert out.stride() == (0, 1)


def test_view_outputs_inference(backend):
    inputs = make_inputs()
    expected = all_views(inputs)
    compiled, counter = compile_counted(all_views, backend, fullgraph=True)
    actual = compiled(inputs)
    assert counter.graphs == 1
    for name, k in zip(VIEWS, range(0, len(expected), 2)):
        assert_same(actual[k], expected[k], name)
        assert_same(actual[k + 1], expected[k + 1], name + " * 3")
        # Eager's layout: the view's strides, which PyTorch code after it may depend on.
        assert actual[k].stride() == expected[k].stride(), name


def test_view_outputs_training(backend):
    """Backward through every view: the views are saved or consumed across the forward and
    backward graphs, and the gradient of an expand or unfold sums over the elements that
    share an address."""
    def views(inputs):
        return [view(t) for (_, view), t in zip(VIEWS.values(), inputs)]

    weights = [torch.randn(o.shape, generator=torch.Generator().manual_seed(k),
                           dtype=torch.float64)
               for k, o in enumerate(views(make_inputs()))]

    def loss_of(inputs):
        # Each view is read in Stax (times w) and by a matrix product, which PyTorch runs:
        # the view crosses the region boundary into PyTorch code.
        total = 0
        for o, w in zip(views(inputs), weights):
            flat = o.reshape(-1, o.shape[-1]) if o.dim() > 1 else o.reshape(1, -1)
            total = total + (o * w).sum() + (flat @ flat.transpose(0, 1)).sum() * 1e-2
        return total

    eager_inputs, compiled_inputs = make_inputs(True), make_inputs(True)
    expected = loss_of(eager_inputs)
    expected.backward()
    compiled, counter = compile_counted(loss_of, backend, fullgraph=True)
    actual = compiled(compiled_inputs)
    actual.backward()
    assert counter.graphs == 1
    assert_same(actual, expected, "loss")
    for name, a, e in zip(VIEWS, compiled_inputs, eager_inputs):
        assert_same(a.grad, e.grad, f"grad of {name}")


# --- A BERT-style encoder in plain torch ---------------------------------------------------

class Layer(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up = nn.Linear(hidden, 4 * hidden)
        self.down = nn.Linear(4 * hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, keep):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        scores = torch.where(keep, scores, torch.finfo(x.dtype).min)
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class TinyBert(nn.Module):
    def __init__(self, vocab=40, hidden=32, heads=4, layers=2, max_len=16, classes=3):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_len, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_len)[None], persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(1, max_len, dtype=torch.int64),
                             persistent=False)
        self.layers = nn.ModuleList(Layer(hidden, heads) for _ in range(layers))
        self.pool = nn.Linear(hidden, hidden)
        self.classify = nn.Linear(hidden, classes)

    def forward(self, ids, mask):
        b, s = ids.shape
        # As Hugging Face's BertEmbeddings: token types from a buffer, gathered at the
        # positions and expanded to the batch (an expanded value the embedding's backward
        # saves).
        positions = self.position_ids[:, :s]
        token_types = torch.gather(self.token_type_ids.expand(1, -1), 1, positions).expand(b, s)
        x = self.word(ids) + self.position(positions) + self.token_type(token_types)
        x = self.norm(x)
        # As Hugging Face's extended attention mask: the padding mask expanded to
        # (batch, 1, queries, keys), read by every layer's attention (so it leaves the region
        # that computes it) and saved for backward.
        keep = (mask[:, None, None, :] != 0).expand(b, 1, s, s)
        for layer in self.layers:
            x = layer(x, keep)
        return self.classify(torch.tanh(self.pool(x[:, 0])))


def bert_batch(seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 40, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0  # the second sequence is padded
    labels = torch.randint(0, 3, (2,), generator=g)
    return ids, mask, labels


def test_bert_style_encoder_trains_like_eager(backend):
    eager_model = TinyBert()
    compiled_model = copy.deepcopy(eager_model)
    compiled_forward, counter = compile_counted(compiled_model, backend)
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.1)
    compiled_opt = torch.optim.SGD(compiled_model.parameters(), lr=0.1)
    for step in range(3):
        ids, mask, labels = bert_batch(step)
        losses = []
        for model, forward, opt in ((eager_model, eager_model, eager_opt),
                                    (compiled_model, compiled_forward, compiled_opt)):
            opt.zero_grad()
            loss = F.cross_entropy(forward(ids, mask), labels)
            loss.backward()
            losses.append(loss.detach())
        # Stax's reductions (LayerNorm over 32 features, softmax over 8 keys, bias gradients
        # over 16 tokens, the 128-wide MLP's bias gradient) sum in another order than eager's:
        # the tolerance of a 128-term sum of terms up to the largest gradient, after each step
        # of which the parameters (and so the next step) differ by lr times that.
        assert_same(losses[1], losses[0], f"loss of step {step}",
                    **summation_tolerance(torch.float32, 128, 1.0))
        for (name, pe), pc in zip(eager_model.named_parameters(), compiled_model.parameters()):
            magnitude = max(float(pe.grad.abs().max()), 1e-3)
            assert_same(pc.grad, pe.grad, f"step {step}: grad of {name}",
                        **summation_tolerance(torch.float32, 128, magnitude * (step + 1)))
        eager_opt.step()
        compiled_opt.step()
    assert counter.graphs >= 1


def test_bert_style_encoder_inference(backend):
    model = TinyBert().eval()
    ids, mask, _ = bert_batch(0)
    with torch.no_grad():
        expected = model(ids, mask)
        compiled, counter = compile_counted(model, backend)
        actual = compiled(ids, mask)
    assert counter.graphs >= 1
    assert_same(actual, expected, **summation_tolerance(torch.float32, 128, 1.0))


# --- stax.explain ---------------------------------------------------------------------------

def test_explain_on_the_bert_style_encoder(is_stax):
    if not is_stax:
        return
    import stax

    model = TinyBert()
    ids, mask, _ = bert_batch(0)
    # Without autograd (an inference graph), and with it (a forward graph that saves the
    # expanded values, and the backward graph).
    with torch.no_grad():
        report = stax.explain(model, ids, mask)
    assert [g.kind for g in report.graphs] == ["inference"]
    assert sum(report.stax_ops.values()) > 0
    report = stax.explain(model, ids, mask, backward=True)
    assert {g.kind for g in report.graphs} == {"forward", "backward"}
    # The whole training step runs in Stax (matrix products, and since the scatters came into
    # Stax, the embedding gradient's index_put too), and the report says so.
    assert not report.fallback_ops, report.fallback_ops
    assert "0 in PyTorch (0.0% fell back)" in str(report), str(report)


class ModelOutputLike(dict):
    """A mapping output, as a Hugging Face ModelOutput is."""


def test_explain_finds_outputs_and_explains_what_has_no_backward(is_stax):
    if not is_stax:
        return
    import stax

    w = torch.randn(4, 3, requires_grad=True)

    def mapping_output(x):
        return ModelOutputLike(logits=(x @ w).relu(), count=x.shape[0], index=x.argmax(-1))

    report = stax.explain(mapping_output, torch.randn(5, 4), backward=True)
    assert {g.kind for g in report.graphs} == {"forward", "backward"}
    assert w.grad is not None

    # No output requires grad: there is nothing to run backward from, and nothing raises.
    report = stax.explain(lambda x: (x.sin(), x.argmax()), torch.randn(5), backward=True)
    assert [g.kind for g in report.graphs] == ["inference"]


def test_explain_on_a_model_that_falls_back(is_stax):
    """Ops Stax refuses (complex values: the graph runs in PyTorch whole), a graph break, and
    a region output that is a view, in one function."""
    if not is_stax:
        return
    import stax

    def fn(x):
        spectrum = torch.fft.rfft(x).abs()
        y = (spectrum + 1).expand(3, -1)
        torch._dynamo.graph_break()
        return y * 2, (x.cos() + 1)[:, ::2]

    x = torch.randn(1, 8)
    compiled = torch.compile(fn, backend="stax")
    assert_same(compiled(x), fn(x))
    report = stax.explain(fn, x)
    assert len(report.graphs) == 2
    assert report.fallback_ops
    assert "complex" in str(report)
