"""Packages from torch.compile's graphs (issue 34, point 1): stax.aot_compile(...,
capture="compile") captures with Dynamo and AOTAutograd, the front end torch.compile(backend=
"stax") uses, instead of torch.export. A transformers model packages with its weights (found
by identity among the module's parameters and buffers) and a dynamic dim, a tensor the
function closes over is kept as a weight, weights=False names the weight inputs after their
keys, and what a package cannot be (state it writes, a graph break, a number as input, an
input it never reads, an op Stax does not run) is refused naming it."""

import pytest
import torch

import stax
from aot_models import HIDDEN, ids, tiny_bert, tiny_gpt2, tolerance
from eager_comparison import assert_same, summation_tolerance


def test_bert_from_torch_compile_takes_every_length_its_dim_allows(tmp_path):
    model = tiny_bert()
    seq = torch.export.Dim("seq", min=2, max=64)
    path = stax.aot_compile(model, (ids(16),), tmp_path / "bert.staxpkg", capture="compile",
                            dynamic_shapes={"input_ids": {1: seq}})
    run = stax.load(path)
    assert run.input_names == ["input_ids"]  # the weights are in the package
    assert run.metadata["capture"] == "compile"
    for length in (16, 2, 37, 64):
        x = ids(length, length)
        hidden, pooled = run(x)
        with torch.no_grad():
            expected = model(x)
        assert hidden.shape == (2, length, HIDDEN)
        assert_same(hidden, expected.last_hidden_state, **tolerance(4.0))
        assert_same(pooled, expected.pooler_output, **tolerance(1.0))
    with pytest.raises(ValueError, match=r"breaks its facts"):
        run(ids(65))
    # The example input was not marked dynamic: the capture marked a copy of it.
    assert not getattr(ids(16), "_dynamo_dynamic_indices", None)


def test_gpt2_from_torch_compile_matches_eager(tmp_path):
    model = tiny_gpt2()
    x = ids(12)
    run = stax.load(stax.aot_compile(model, (x,), tmp_path / "gpt2.staxpkg", capture="compile"))
    with torch.no_grad():
        expected = model(x).last_hidden_state
    assert_same(run(x), expected, **tolerance(8.0))
    # A second capture of the same model (a new backend for Dynamo) compiles again.
    run2 = stax.load(stax.aot_compile(model, (x,), tmp_path / "gpt2b.staxpkg", capture="compile"))
    assert_same(run2(x), run(x), rtol=0, atol=0)


def test_a_tensor_the_function_closes_over_is_kept(tmp_path):
    torch.manual_seed(0)
    w, b = torch.randn(8, 16), torch.randn(16)

    def layer(x):
        return torch.tanh(x @ w + b)

    x = torch.randn(5, 8)
    run = stax.load(stax.aot_compile(layer, (x,), tmp_path / "layer.staxpkg", capture="compile"))
    assert run.input_names == ["x"]
    expected = layer(x)
    w.add_(1.0)  # the package holds the values it was captured with
    assert_same(run(x), expected, **summation_tolerance(torch.float32, 8, 1.0))


def test_weights_as_inputs_are_named_after_their_keys(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    model.eval()
    x = torch.randn(3, 8)
    run = stax.load(stax.aot_compile(model, (x,), tmp_path / "mlp.staxpkg", capture="compile",
                                     weights=False))
    state = {"w_" + k.replace(".", "_"): v for k, v in model.state_dict().items()}
    assert len(run.input_names) == 5 and set(run.input_names[1:]) == set(state)
    with torch.no_grad():
        assert_same(run(x, *[state[n] for n in run.input_names[1:]]), model(x),
                    **summation_tolerance(torch.float32, 16, 1.0))


def test_what_cannot_be_packaged_is_named(tmp_path):
    def writes_its_input(x):
        x.add_(1)
        return x * 2

    with pytest.raises(stax.PackageError, match="it writes one of its inputs"):
        stax.aot_compile(writes_its_input, (torch.randn(4),), tmp_path / "a.staxpkg",
                         capture="compile")

    def scaled(x, k):
        return x * k

    with pytest.raises(stax.PackageError, match="input k is a int; a package takes tensors"):
        stax.aot_compile(scaled, (torch.randn(4), 3), tmp_path / "b.staxpkg", capture="compile")

    def ignores(x, y):
        return x.exp()

    with pytest.raises(stax.PackageError, match=r"never reads input\(s\) y"):
        stax.aot_compile(ignores, (torch.randn(4), torch.randn(4)), tmp_path / "c.staxpkg",
                         capture="compile")

    def inverts(x):
        return torch.linalg.inv(x) + 1

    with pytest.raises(stax.PackageError, match=r"side effects \(effect tokens\)"):
        stax.aot_compile(inverts, (torch.eye(4) * 2,), tmp_path / "d.staxpkg", capture="compile")

    def sorts(x):
        return torch.sort(x).values * 2

    with pytest.raises(stax.PackageError, match="Stax does not run .*sort"):
        stax.aot_compile(sorts, (torch.randn(4, 8),), tmp_path / "g.staxpkg", capture="compile")

    def breaks(x):
        y = x + 1
        torch._dynamo.graph_break()  # two graphs: a package holds one
        return y * 2

    with pytest.raises(torch._dynamo.exc.Unsupported):
        stax.aot_compile(breaks, (torch.randn(4),), tmp_path / "e.staxpkg", capture="compile")
    with pytest.raises(ValueError, match="capture must be 'export' or 'compile'"):
        stax.aot_compile(inverts, (torch.eye(4),), tmp_path / "f.staxpkg", capture="jit")
    assert not any(tmp_path.iterdir())
