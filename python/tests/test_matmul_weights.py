"""How a library matrix product hands B to oneDNN (src/external/matmul_weights_form.h): where
B's columns are contiguous (GPT-2's Conv1D weight [in, out], the products of a backward
graph) the plan times B in place against B packed into the library's layout when it is built,
and, in float32, against the whole product by the BLAS (MKL's sgemm, src/external/
blas_library.h) where one is loaded, and keeps the fastest; `measure_matmul_weights=False`
keeps B in place. Either way the results are eager's within a summation's tolerance, and
stax.explain names the choice and its measurement."""

import os

import pytest
import torch

import stax
from eager_comparison import assert_same, summation_tolerance


class Conv1D(torch.nn.Module):
    """transformers' GPT-2 Conv1D: y = x @ W + b with W stored [in, out] (addmm, B row-major)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out) / n_in**0.5)
        self.bias = torch.nn.Parameter(torch.randn(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight)


def compiled_plans(module, x, **options):
    report = stax.explain(module, x, options=options)
    (graph,) = report.graphs
    (region,) = graph.regions
    return [line.strip() for line in region.primary.compiled.explain().splitlines()
            if line.strip().startswith("plan:")]


@pytest.mark.parametrize("measure", [True, False])
def test_row_major_weights_match_eager_and_explain_says_how(measure):
    torch.manual_seed(0)
    module, x = Conv1D(192, 576), torch.randn(2, 48, 192)
    (plan,) = compiled_plans(module, x, measure_matmul_weights=measure)
    if measure:
        assert "measured when planned" in plan, plan
        # The BLAS is one of the forms timed wherever the process has one.
        assert ("by the BLAS" in plan) == bool(stax.blas_library()[0]), plan
    else:
        assert "B read in place: asked for" in plan, plan
    compiled = torch.compile(module, backend="stax",
                             options={"measure_matmul_weights": measure})
    with torch.no_grad():
        magnitude = float(x.abs().max() * module.weight.abs().max())
        assert_same(compiled(x), module(x), **summation_tolerance(torch.float32, 192, magnitude))


def test_linear_weights_at_one_row_are_timed_against_the_blas():
    """A linear layer's weight (B's rows contiguous, nothing to pack) at a decoding step's one
    row: oneDNN 2.6 took 1.7-3.4x MKL's time there, so the plan times B in place against the
    BLAS wherever the process has one (bench/gemm/RESULTS.md, "A linear layer's weight")."""
    torch.manual_seed(3)
    module, x = torch.nn.Linear(192, 576), torch.randn(1, 192)
    (plan,) = compiled_plans(module, x)
    if stax.blas_library()[0]:
        assert "measured when planned" in plan and "by the BLAS" in plan, plan
        assert "packed" not in plan, plan
    else:
        assert "B's columns are not contiguous" in plan, plan
    (on_onednn,) = compiled_plans(module, x, matmul_blas=False)
    assert "B's columns are not contiguous" in on_onednn and "by the BLAS" not in on_onednn
    compiled = torch.compile(module, backend="stax")
    with torch.no_grad():
        magnitude = float(x.abs().max() * module.weight.abs().max())
        assert_same(compiled(x), module(x), **summation_tolerance(torch.float32, 192, magnitude))


def test_training_gradients_match_eager():
    """The backward graph's products read row-major B (dY^T X, dY W): measured forms, eager's
    gradients."""
    torch.manual_seed(1)
    module, x = Conv1D(160, 384), torch.randn(96, 160)
    reference = Conv1D(160, 384)
    reference.load_state_dict(module.state_dict())
    compiled = torch.compile(module, backend="stax")
    compiled(x).square().sum().backward()
    reference(x).square().sum().backward()
    for name, p in module.named_parameters():
        expected = dict(reference.named_parameters())[name].grad
        magnitude = float(expected.abs().max())
        assert_same(p.grad, expected, name, **summation_tolerance(torch.float32, 384, magnitude))


def test_matmul_blas_false_keeps_every_product_on_onednn():
    torch.manual_seed(2)
    module, x = Conv1D(192, 576), torch.randn(2, 48, 192)
    (plan,) = compiled_plans(module, x, matmul_blas=False)
    assert "measured when planned" in plan and "by the BLAS" not in plan, plan
    compiled = torch.compile(module, backend="stax", options={"matmul_blas": False})
    with torch.no_grad():
        magnitude = float(x.abs().max() * module.weight.abs().max())
        assert_same(compiled(x), module(x), **summation_tolerance(torch.float32, 192, magnitude))


def test_the_option_must_be_a_bool():
    # Dynamo wraps the backend's ValueError in BackendCompilerFailed.
    with pytest.raises(Exception, match="option 'measure_matmul_weights' must be a bool"):
        torch.compile(torch.nn.Linear(4, 4), backend="stax",
                      options={"measure_matmul_weights": "yes"})(torch.randn(2, 4))
    with pytest.raises(Exception, match="option 'matmul_blas' must be a bool"):
        torch.compile(torch.nn.Linear(4, 4), backend="stax",
                      options={"matmul_blas": 1})(torch.randn(2, 4))


def test_the_blas_is_the_mkl_eager_runs():
    """`import stax` points the C++ side at the MKL inside PyTorch (eager's float32 torch.mm,
    already in memory) where torch has one, else at the libmkl_rt of this environment; the test
    command says one must be found (STAX_EXPECT_BLAS=1)."""
    description, why = stax.blas_library()
    if os.environ.get("STAX_EXPECT_BLAS") == "1":
        assert "the process's libgomp" in description, why
        if torch.backends.mkl.is_available() and "STAX_BLAS_LIBRARY" not in os.environ:
            assert "libtorch_cpu" in description, description
    else:
        assert description or why
