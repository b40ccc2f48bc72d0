"""Backend options and threads: options={"threads": 1} compiles and runs right, an unknown
option is an error naming it, and a compiled function stays right after
torch.set_num_threads changes the thread count between calls (Stax reads it at every call);
options={"logs": ...} reach the C++ side's topics."""

import pytest
import torch

from eager_comparison import assert_same, summation_tolerance
from input_layouts import random_values


def fn(x):
    return torch.tanh(x) * x.sum(-1, keepdim=True) + x.amax(0)


def test_threads_option(backend, is_stax):
    # The "threads" option is Stax's; other backends are compiled without options.
    options = {"options": {"threads": 1}} if is_stax else {}
    compiled = torch.compile(fn, backend=backend, **options)
    x = random_values((64, 300), torch.float32, -1, 1)
    assert_same(compiled(x), fn(x))


def test_unknown_option_is_an_error_naming_it(backend, is_stax):
    x = random_values((4, 5), torch.float32, -1, 1)
    if not (is_stax or backend == "inductor"):
        # aot_eager and other backends ignore options; nothing to check there.
        return
    with pytest.raises(Exception, match="no_such_option"):
        compiled = torch.compile(fn, backend=backend, options={"no_such_option": 1})
        compiled(x)


def test_set_num_threads_between_calls(backend):
    compiled = torch.compile(fn, backend=backend)
    # Large enough that a kernel splits its rows across threads.
    shape = (512, 1024)
    x = random_values(shape, torch.float32, -1, 1)
    # Row sums of 1024 terms in [-1, 1], possibly in another order than eager's (split
    # across threads), scaled by tanh (at most 1 in size).
    tolerance = summation_tolerance(torch.float32, shape[1], 1.0)
    assert_same(compiled(x), fn(x), "default thread count", **tolerance)
    for threads in (1, 2, 1):
        torch.set_num_threads(threads)
        x = random_values(shape, torch.float32, -1, 1)
        assert_same(compiled(x), fn(x), f"{threads} threads", **tolerance)


def test_logs_option_reaches_the_cpp_side(is_stax, capfd, monkeypatch):
    """options={"logs": ...} is the one log configuration of both sides (issue 32, point
    4.2): the C++ side's topics print without STAX_LOGS, and only the topics named."""
    if not is_stax:
        return
    monkeypatch.delenv("STAX_LOGS", raising=False)
    x = random_values((8, 16), torch.float32, -1, 1)
    torch.compile(fn, backend="stax", options={"logs": ("program",)})(x)
    err = capfd.readouterr().err
    assert "stax: host program after place_buffers" in err, err[-2000:]
    assert "stax: graph after" not in err
    torch._dynamo.reset()
    torch.compile(fn, backend="stax", options={"logs": ("graph_passes",)})(x)
    err = capfd.readouterr().err
    assert "stax: graph after" in err and "host program" not in err, err[-2000:]


def test_unknown_log_topic_is_an_error_naming_it(is_stax):
    if not is_stax:
        return
    x = random_values((4, 5), torch.float32, -1, 1)
    with pytest.raises(Exception, match="unknown log topic 'no_such_topic'"):
        torch.compile(fn, backend="stax", options={"logs": ("program", "no_such_topic")})(x)
