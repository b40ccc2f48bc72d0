"""Visibility into compiles and runs (issue 34, point 4): where each graph's compile time
went (Dynamo, AOTAutograd, Stax's front end, the C++ compile, the library plans) and its
kernel-cache hits, on the "compile" topic and in Python's logging; the process's totals; a
progress line for a compile past a second; Stax's regions and library calls named in
torch.profiler traces, and with them each kernel function; and a debug folder of its own per run and rank."""

import logging
import os
import re
import subprocess
import sys

import torch

import stax
from stax import compile_log, debug


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))


def test_each_graph_says_where_its_compile_time_went(capfd, tmp_path):
    before = stax.compile_stats()
    model, x = mlp(), torch.randn(3, 16)
    f = torch.compile(model, backend="stax", options={"logs": "compile", "cache_dir": str(tmp_path)})
    f(x).sum().backward()
    err = capfd.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("stax: compiled ") and ":" in l[15:]]
    assert len(lines) == 2, err  # the forward and the backward graph
    forward = next(l for l in lines if "forward" in l)
    # Dynamo's time is known from the second frame after torch._dynamo.reset() (which drops
    # the callback that times it) on: the frame compiled first may say n/a.
    assert re.search(r"1 region\(s\), 0 from the kernel cache, 1 compiled; Dynamo (\d+ ms|n/a), "
                     r"AOTAutograd \d+ ms, Stax front end \d+ ms, C\+\+ compile \d+ ms, library "
                     r"plans \d+ ms; \d+ ms in the backend", forward), forward
    after = stax.compile_stats()
    assert after["graphs"] - before["graphs"] == 2
    assert after["cache_misses"] - before["cache_misses"] == 2
    assert after["cxx_compile_s"] > before["cxx_compile_s"]


SCRIPT = """
import torch, stax
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
f = torch.compile(model, backend="stax", options={"logs": "compile"})
f(torch.randn(3, 16)).sum().backward()
print(stax.compile_stats())
"""


def test_a_second_process_finds_the_kernels_in_the_cache(tmp_path):
    env = dict(os.environ, STAX_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                           env=env, timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stderr.count("0 from the kernel cache, 1 compiled") == 2, runs[0].stderr
    assert runs[1].stderr.count("1 from the kernel cache, 0 compiled") == 2, runs[1].stderr
    # Dynamo's time of the process's first frame is known (no reset dropped its callback).
    assert re.search(r"compiled forward_1: .* Dynamo \d+ ms, AOTAutograd \d+ ms",
                     runs[1].stderr), runs[1].stderr
    assert "'cache_hits': 2, 'cache_misses': 0" in runs[1].stdout, runs[1].stdout


def test_compile_lines_go_to_python_logging(caplog):
    with caplog.at_level(logging.INFO, logger="stax"):
        torch.compile(mlp(), backend="stax")(torch.randn(2, 16))
    assert any(r.name == "stax.compile" and "region(s)" in r.getMessage() for r in caplog.records)
    # TORCH_LOGS=stax: the logger is registered with PyTorch's logging, whose settings parser
    # takes the name (an unknown one raises).
    from torch._logging._internal import _parse_log_settings

    assert _parse_log_settings("stax").log_qname_to_level == {"stax": logging.INFO}


def test_a_long_compile_prints_progress(capfd, monkeypatch, tmp_path):
    monkeypatch.setattr(compile_log, "PROGRESS_AFTER_S", 0.0)
    with torch.no_grad():
        torch.compile(mlp(), backend="stax", options={"cache_dir": str(tmp_path)})(torch.randn(2, 16))
    err = capfd.readouterr().err
    assert re.search(r"stax: compiling inference_\d+ \(C\+\+ compiles running", err), err
    assert re.search(r"stax: compiled inference_\d+ in \d+\.\d s", err), err
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(mlp(), backend="stax",
                      options={"cache_dir": str(tmp_path), "progress": False})(torch.randn(2, 16))
    assert "compiling" not in capfd.readouterr().err


def test_regions_and_library_calls_are_named_in_profiler_traces():
    model, x = mlp(), torch.randn(3, 16)
    f = torch.compile(model, backend="stax")
    f(x)
    with torch.profiler.profile() as prof:
        f(x).sum().backward()
    names = [e.name for e in prof.events()]
    assert any(re.fullmatch(r"stax::forward_\d+_stax_region_0", n) for n in names), names
    assert any(re.fullmatch(r"stax::backward_\d+_stax_region_0", n) for n in names), names
    assert any(re.fullmatch(r"stax::addmm -> buf\d+", n) for n in names), names
    assert any(re.fullmatch(r"stax::mm -> buf\d+", n) for n in names), names
    # Each kernel function too, named after the fused nodes it runs, inside its region's range.
    events = prof.events()
    regions = [e for e in events if re.fullmatch(r"stax::(forward|backward)_\d+_stax_region_0", e.name)]
    kernels = [e for e in events if re.fullmatch(r"stax::kernel\d+ op\d+(_op\d+)*(, op\d+(_op\d+)*)*", e.name)]
    assert kernels, names
    for k in kernels:
        assert any(r.time_range.start <= k.time_range.start and k.time_range.end <= r.time_range.end
                   for r in regions), (k.name, k.time_range)
    # Outside the profiler no range is opened (the hook is off again).
    with torch.profiler.profile() as prof:
        pass
    assert not [e for e in prof.events() if e.name.startswith("stax::")]


def test_debug_files_go_to_a_folder_per_run_and_rank(tmp_path, monkeypatch):
    monkeypatch.setattr(debug, "_run_dirs", {})
    monkeypatch.setenv("RANK", "3")
    with torch.no_grad():
        torch.compile(mlp(), backend="stax", options={"debug_dir": str(tmp_path)})(torch.randn(2, 16))
    (run,) = os.listdir(tmp_path)
    assert re.fullmatch(rf"run-\d{{8}}-\d{{6}}-pid{os.getpid()}-rank3", run), run
    graphs = os.listdir(tmp_path / run)
    assert any(g.startswith("inference_") for g in graphs), graphs
