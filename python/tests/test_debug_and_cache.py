"""Stax-specific behaviour of the bridge (these tests always use the stax backend): the
debug log topics and the debug directory, registration through the package's entry point,
the compile cache across processes, and that a kernel names the ATen ops it came from."""

import os
import subprocess
import sys
import textwrap

import torch

import stax

PROGRAM = textwrap.dedent(
    """
    import sys, torch
    {imports}
    def f(x, y):
        return torch.softmax(x * 2.0 + y, dim=-1) - x.mean()
    x = torch.arange(12.0).reshape(3, 4) / 7
    y = torch.ones(4)
    out = torch.compile(f, backend="stax")(x, y)
    torch.testing.assert_close(out, f(x, y))
    {after}
    """
)


def run_program(env_extra, imports="", after=""):
    env = dict(os.environ)
    env.update(env_extra)
    code = PROGRAM.format(imports=imports, after=after)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)


def test_backend_is_found_without_importing_stax(tmp_path):
    # The torch_dynamo_backends entry point registers "stax"; the program never imports it
    # and checks afterwards that the package was loaded by torch, not by itself.
    r = run_program({"STAX_CACHE_DIR": str(tmp_path)},
                    after="assert 'stax.backend' in sys.modules; print('ran in stax')")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ran in stax" in r.stdout


def test_second_process_invokes_no_compiler(tmp_path):
    after = "import stax._C as C; print('compiler invocations', C.compiler_invocations())"
    env = {"STAX_CACHE_DIR": str(tmp_path / "cache")}
    first = run_program(env, after=after)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "compiler invocations 0" not in first.stdout  # a cold cache compiles
    second = run_program(env, after=after)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "compiler invocations 0" in second.stdout, second.stdout


def test_corrupt_cache_entry_is_a_miss(tmp_path):
    env = {"STAX_CACHE_DIR": str(tmp_path / "cache")}
    assert run_program(env).returncode == 0
    libraries = [p for p in (tmp_path / "cache").iterdir() if p.suffix == ".so"]
    assert libraries
    for lib in libraries:
        lib.write_bytes(lib.read_bytes()[: 100])  # truncated
    after = "import stax._C as C; print('compiler invocations', C.compiler_invocations())"
    r = run_program(env, after=after)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "compiler invocations 0" not in r.stdout  # rebuilt, not loaded


def test_log_topics_print_to_stderr(tmp_path):
    r = run_program({"STAX_CACHE_DIR": str(tmp_path),
                     "STAX_LOGS": "fusion,schedule,ir,output_code"}, imports="import stax")
    assert r.returncode == 0, r.stderr[-3000:]
    err = r.stderr
    assert "stax: fusion of" in err and "fusing" in err
    assert "stax: schedule of" in err and "kernels (" in err
    assert "stax: kernel IR of" in err
    assert "stax: generated C++ of" in err and "stax_graph_run" in err
    # The generated kernel names the ATen ops it came from.
    assert "// ops of" in err and "exp" in err


def test_unknown_log_topic_is_an_error(tmp_path):
    r = run_program({"STAX_CACHE_DIR": str(tmp_path), "STAX_LOGS": "fusion,bogus"},
                    imports="import stax")
    assert r.returncode != 0
    assert "bogus" in r.stderr


def test_debug_dir_holds_a_runnable_repro(tmp_path):
    debug_dir = tmp_path / "debug"
    r = run_program({"STAX_CACHE_DIR": str(tmp_path / "cache"),
                     "STAX_DEBUG_DIR": str(debug_dir)}, imports="import stax")
    assert r.returncode == 0, r.stderr[-3000:]
    # One folder for this run (test_visibility.py checks its name), a folder per graph in it.
    (run,) = [p for p in debug_dir.iterdir() if p.is_dir()]
    assert f"debug files of this run in {run}" in r.stderr
    graphs = sorted(p for p in run.iterdir() if p.is_dir())
    assert graphs, "no per-graph directory"
    files = {p.name for p in graphs[0].iterdir()}
    assert "fx_graph.py" in files and "report.txt" in files
    stax_files = [f for f in files if f.endswith(".stax")]
    assert stax_files
    base = stax_files[0][: -len(".stax")]
    for suffix in (".explain.txt", ".kernel_ir.txt", ".cpp"):
        assert base + suffix in files
    text = (graphs[0] / stax_files[0]).read_text()
    assert text.startswith("def ")
    cpp = (graphs[0] / (base + ".cpp")).read_text()
    assert "// ops of" in cpp
    # The Stax graph text is a runnable repro: the extension compiles and explains it as is.
    compiled = stax._C.compile(text, stax_files[0], cache_dir=str(tmp_path / "cache"))
    assert compiled.source == cpp
    assert "fusion" in stax._C.explain(text)


def test_explain_lists_fallbacks_with_reasons():
    # sort still runs in PyTorch; the matrix product runs in Stax (issue 14).
    def f(a, b):
        return torch.relu(torch.sort(a, 1).values @ b) + 1.0

    a, b = torch.randn(8, 16), torch.randn(16, 4)
    report = stax.explain(f, a, b)
    assert report.fallback_ops.get("sort", 0) == 1, report.fallback_ops
    assert report.stax_ops.get("mm", 0) == 1, report.stax_ops
    assert report.stax_ops.get("relu", 0) == 1, report.stax_ops
    assert 0 < report.fallback_fraction < 1
    text = str(report)
    assert "PyTorch runs sort x1: no Stax op sort" in text


def test_threads_are_read_at_each_call():
    # The thread count of each call is torch.get_num_threads() at that call, not at compile
    # time: spy on what the region hands to the compiled graph's run.
    x = torch.randn(64, 256)
    with torch.no_grad():
        report = stax.explain(lambda t: (t * t).sum(-1), x)
    region = report.graphs[0].regions[0]
    seen = []
    real_run = region.primary.run

    def spy(inputs, outputs, threads):
        seen.append(threads)
        return real_run(inputs, outputs, threads)

    region.primary.run = spy
    call = region._straight_line_call()[0]
    old = torch.get_num_threads()
    try:
        for n in (1, 3, 2):
            torch.set_num_threads(n)
            torch.testing.assert_close(call(x)[0], (x * x).sum(-1))
    finally:
        torch.set_num_threads(old)
    assert seen == [1, 3, 2]


def test_verbose_explain_gives_each_refused_fusion_its_reason():
    # Example 7.2: exp over all 8192 elements cannot share a loop with the row reductions.
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                           "example_7_2.stax")) as f:
        text = f.read()
    compiled = stax._C.compile(text, "example_7_2.stax")
    assert "cannot fuse" not in compiled.explain() and "refused" in compiled.explain()
    assert "cannot fuse op0 with op1: iteration groups" in compiled.explain(verbose=True)
