"""Shared fixtures of the torch.compile tests: the backend under test, a clean dynamo state per
test, and the end-of-run table of stax.explain fallback fractions.

The backend is "stax" unless STAX_TEST_BACKEND names another torch.compile backend; the CI
always runs with "stax". Other backends (inductor, aot_eager) exist only to check the tests
themselves: under them every compiled-vs-eager comparison still runs, and the assertions about
stax.explain and Stax's options, which only Stax can satisfy, are guarded by `is_stax`.
"""

import os

import pytest
import torch

import eager_comparison

BACKEND = os.environ.get("STAX_TEST_BACKEND", "stax")

if BACKEND == "stax":
    import stax  # noqa: F401  (registers the backend)


@pytest.fixture
def backend():
    return BACKEND


@pytest.fixture
def is_stax():
    return BACKEND == "stax"


@pytest.fixture(autouse=True)
def fresh_dynamo_and_seed():
    # Each test compiles from scratch (no graphs or recompile counts left by another test) and
    # draws the same random inputs whatever ran before it.
    torch._dynamo.reset()
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
    torch._dynamo.reset()


def pytest_sessionfinish(session):
    # Under pytest-xdist each worker hands its fractions to the controller, which prints them.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fallback_fractions"] = {
            name: [fraction, dict(fallback)]
            for name, (fraction, fallback) in eager_comparison.FALLBACK_FRACTIONS.items()
        }


try:
    import xdist  # noqa: F401  (the hook below exists only with pytest-xdist)

    def pytest_testnodedown(node, error):
        worker_fractions = getattr(node, "workeroutput", {}).get("fallback_fractions", {})
        for name, (fraction, fallback) in worker_fractions.items():
            eager_comparison.FALLBACK_FRACTIONS[name] = (fraction, fallback)

except ImportError:
    pass


def pytest_terminal_summary(terminalreporter):
    if not eager_comparison.FALLBACK_FRACTIONS:
        return
    terminalreporter.section("stax.explain: fraction of ATen ops run by PyTorch")
    for name, (fraction, fallback) in sorted(eager_comparison.FALLBACK_FRACTIONS.items()):
        ops = ", ".join(f"{op} x{count}" for op, count in sorted(fallback.items())) or "none"
        terminalreporter.write_line(f"{name:52s} {fraction:6.3f}   fell back: {ops}")
