"""Ahead-of-time packages from Python (issue 34, point 1): stax.aot_compile exports a
transformers model (random weights from a config, nothing downloaded) into one Stax program
with its weights, and stax.load runs it without compiling, matching eager; with dynamic
shapes one package takes every length its Dim allows. What cannot be packaged, and bad
inputs to a loaded package, are refused with errors naming what is wrong. The package is
also loaded by the `stax` command-line tool, a process without Python."""

import os
import subprocess

import pytest
import torch

import stax
from aot_models import HIDDEN, ids, tiny_bert, tiny_gpt2, tolerance
from eager_comparison import assert_same, summation_tolerance


def test_bert_package_matches_eager(tmp_path):
    model = tiny_bert()
    path = stax.aot_compile(model, (ids(16),), tmp_path / "bert.staxpkg")
    run = stax.load(path)
    assert run.input_names == ["input_ids"]  # the weights are in the package
    assert run.metadata["exporter"] == "stax.aot_compile"
    for seed in (1, 2):
        x = ids(16, seed)
        hidden, pooled = run(x)
        with torch.no_grad():
            expected = model(x)
        assert_same(hidden, expected.last_hidden_state, **tolerance(4.0))
        assert_same(pooled, expected.pooler_output, **tolerance(1.0))
    # The package holds its weights: changing the model after export changes nothing.
    with torch.no_grad():
        model.embeddings.word_embeddings.weight.add_(1.0)
    assert_same(run(ids(16, 1))[1], run(ids(16, 1))[1], rtol=0, atol=0)


def test_one_package_takes_every_length_its_dim_allows(tmp_path):
    model = tiny_bert()
    seq = torch.export.Dim("seq", min=2, max=64)
    path = stax.aot_compile(model, (ids(16),), tmp_path / "bert_dyn.staxpkg",
                            dynamic_shapes={"input_ids": {1: seq}})
    run = stax.load(path)
    for length in (16, 2, 37, 64):
        x = ids(length, length)
        hidden, _ = run(x)
        with torch.no_grad():
            expected = model(x).last_hidden_state
        assert hidden.shape == (2, length, HIDDEN)
        assert_same(hidden, expected, **tolerance(4.0))
    with pytest.raises(ValueError, match=r"breaks its facts \(s\d+ in \[2, 64\]\)"):
        run(ids(65))


def test_weights_as_inputs(tmp_path):
    model = tiny_bert()
    path = stax.aot_compile(model, (ids(8),), tmp_path / "bert_noweights.staxpkg",
                            weights=False)
    run = stax.load(path)
    assert run.input_names[0] == "input_ids" and len(run.input_names) > 10
    ep = torch.export.export(model, (ids(8),))
    x = ids(8, 3)
    state = {**ep.state_dict, **ep.constants}
    params = [state[s.target] for s in ep.graph_signature.input_specs
              if s.kind != torch.export.graph_signature.InputKind.USER_INPUT]
    hidden, _ = run(x, *params)
    with torch.no_grad():
        assert_same(hidden, model(x).last_hidden_state, **tolerance(4.0))


def test_gpt2_package_matches_eager(tmp_path):
    model = tiny_gpt2()
    x = ids(12)
    run = stax.load(stax.aot_compile(model, (x,), tmp_path / "gpt2.staxpkg"))
    with torch.no_grad():
        expected = model(x).last_hidden_state
    assert_same(run(x), expected, **tolerance(8.0))  # one output: the tensor itself


def test_what_cannot_be_packaged_is_named(tmp_path):
    class Inverts(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.inv(x) + 1

    with pytest.raises(stax.PackageError, match="Stax does not run .*linalg"):
        stax.aot_compile(Inverts(), (torch.eye(4) * 2,), tmp_path / "inv.staxpkg")

    training_bn = torch.nn.BatchNorm1d(8).train()
    with pytest.raises(stax.PackageError, match="writes .*running_mean.*eval mode"):
        stax.aot_compile(training_bn, (torch.randn(4, 8),), tmp_path / "bn.staxpkg")
    assert not (tmp_path / "inv.staxpkg").exists()


def test_bad_inputs_and_bad_packages_are_refused(tmp_path):
    path = stax.aot_compile(lambda x, y: (x * y).sum(1), (torch.randn(3, 5), torch.randn(3, 5)),
                            tmp_path / "f.staxpkg")
    run = stax.load(path)
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    assert_same(run(x, y), (x * y).sum(1), **summation_tolerance(torch.float32, 5, 4.0))
    # Inputs of other layouts are laid out as the program reads them.
    assert_same(run(x.t().contiguous().t(), y), (x * y).sum(1),
                **summation_tolerance(torch.float32, 5, 4.0))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        run(x)
    with pytest.raises(ValueError, match="expected torch.float32, got torch.float64"):
        run(x.double(), y)
    with pytest.raises(ValueError, match="size"):
        run(torch.randn(4, 5), y)
    with pytest.raises(TypeError, match="expected a tensor"):
        run(x, 3.0)
    data = open(path, "rb").read()
    cut = tmp_path / "cut.staxpkg"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(stax.PackageError, match="truncated"):
        stax.load(cut)
    flipped = bytearray(data)
    flipped[len(data) - 100] ^= 0x40
    bad = tmp_path / "flipped.staxpkg"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(stax.PackageError, match="damaged"):
        stax.load(bad)
    assert isinstance(stax.PackageError("x"), RuntimeError)


def stax_cli():
    """The `stax` tool of the build tree (scripts/test.sh builds it before pytest)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "build", "src", "cli", "stax")
    return path if os.path.exists(path) else None


def test_command_line_tool_loads_a_python_package(tmp_path):
    cli = stax_cli()
    if cli is None:
        pytest.fail("build/src/cli/stax is missing: scripts/test.sh builds it before pytest")
    path = stax.aot_compile(lambda x: torch.softmax(x * 2, dim=-1), (torch.randn(6, 10),),
                            tmp_path / "softmax.staxpkg")
    out = subprocess.run([cli, "run", str(path), "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert '"match": true' in out.stdout


def test_an_input_named_like_a_builtin(tmp_path):
    # nn.Sequential's forward takes `input`, which FX renames in the partitioned graph (the
    # package's graph calls it input_1): matched by position, it is still the one input.
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU()).eval()
    x = torch.randn(3, 8)
    run = stax.load(stax.aot_compile(model, (x,), tmp_path / "seq.staxpkg"))
    assert len(run.input_names) == 1 and run.input_names[0].startswith("input")
    with torch.no_grad():
        assert_same(run(x), model(x), **summation_tolerance(torch.float32, 8, 4.0))
