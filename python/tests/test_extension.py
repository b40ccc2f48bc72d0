"""The extension module stax._C on its own (no torch): compiling graph text, running it on
caller-allocated memory, the layout it reports, errors as Python exceptions, explain, the
SIMD levels, the kernel cache, and the kernel headers installed beside the module."""

import ctypes
import importlib.metadata
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from stax import _C

# A pointwise add with broadcasting, a row sum and a transposed view of an input.
GRAPH = """\
def small(x: f32[4, 8], y: f32[8]):
    s = add(x, y)
    t = sum(s, dim=[-1])
    v = transpose(x, 0, 1)
    return s, t, v
"""
ROWS, COLS = 4, 8


class AlignedBuffer:
    """`nbytes` of zeroed memory at a 64-byte aligned address (what run() requires of
    output slots), kept alive by this object."""

    def __init__(self, nbytes):
        self._raw = ctypes.create_string_buffer(nbytes + 64)
        base = ctypes.addressof(self._raw)
        self.address = (base + 63) // 64 * 64
        self.nbytes = nbytes

    def write_floats(self, values):
        data = struct.pack(f"{len(values)}f", *values)
        assert len(data) <= self.nbytes
        ctypes.memmove(self.address, data, len(data))

    def read_floats(self, count, offset=0):
        return list(struct.unpack(f"{count}f", ctypes.string_at(self.address + offset * 4, count * 4)))


def x_values():
    # Multiples of 0.25 below 64: every sum below is exact in float32, so results compare
    # exactly.
    return [0.25 * (i % 29) for i in range(ROWS * COLS)]


def y_values():
    return [1.5 * j - 3.0 for j in range(COLS)]


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


def expected_sums():
    xs, ys = x_values(), y_values()
    expected_s = [xs[i * COLS + j] + ys[j] for i in range(ROWS) for j in range(COLS)]
    expected_t = [sum(expected_s[i * COLS:(i + 1) * COLS]) for i in range(ROWS)]
    return expected_s, expected_t


def run_small(compiled, num_threads=1):
    x, y = AlignedBuffer(ROWS * COLS * 4), AlignedBuffer(COLS * 4)
    x.write_floats(x_values())
    y.write_floats(y_values())
    slots = [AlignedBuffer(n) for n in compiled.output_slot_bytes]
    compiled.run([x.address, y.address], [s.address for s in slots], num_threads)
    return x, slots


def test_compile_and_run_into_caller_buffers(cache):
    compiled = _C.compile(GRAPH, "small.stax", num_threads=2, cache_dir=cache)
    x, slots = run_small(compiled, num_threads=2)

    expected_s, expected_t = expected_sums()
    outputs = compiled.outputs
    assert len(outputs) == 3
    s_info, t_info, v_info = outputs
    assert s_info[0] is False and t_info[0] is False
    assert s_info[2:5] == ("f32", [ROWS, COLS], [COLS, 1])
    assert t_info[2:5] == ("f32", [ROWS], [1])
    s_slot, t_slot = slots[s_info[1]], slots[t_info[1]]
    assert s_slot.read_floats(ROWS * COLS, s_info[5]) == expected_s
    assert t_slot.read_floats(ROWS, t_info[5]) == expected_t
    # The transpose is a view of input 0, not a slot.
    assert v_info == (True, 0, "f32", [COLS, ROWS], [1, COLS], 0)


def test_layout_properties(cache):
    compiled = _C.compile(GRAPH, cache_dir=cache)
    assert compiled.inputs == [("x", "f32", [ROWS, COLS], [COLS, 1]), ("y", "f32", [COLS], [1])]
    # Two computed outputs, one slot each: [4, 8] and [4] floats.
    assert sorted(compiled.output_slot_bytes) == [ROWS * 4, ROWS * COLS * 4]
    assert "stax_kernel.h" in compiled.source
    assert os.path.isfile(compiled.library_path)
    assert compiled.library_path.startswith(os.path.abspath(cache))


def test_strided_input_layout_is_reported(cache):
    compiled = _C.compile(
        "def g(w: i64[3, 2] strides=[1, 3]):\n    n = neg(w)\n    return n\n", cache_dir=cache)
    assert compiled.inputs == [("w", "i64", [3, 2], [1, 3])]


def test_thread_count_is_per_call(cache):
    compiled = _C.compile(GRAPH, cache_dir=cache, num_threads=1)
    t_info = compiled.outputs[1]
    for threads in (0, 1, 3):
        _, slots = run_small(compiled, num_threads=threads)
        assert slots[t_info[1]].read_floats(ROWS) == expected_sums()[1], threads
    with pytest.raises(ValueError, match="num_threads"):
        run_small(compiled, num_threads=-1)


def test_cache_hit_runs_no_compiler(cache):
    first = _C.compile(GRAPH, cache_dir=cache)
    before = _C.compiler_invocations()
    second = _C.compile(GRAPH, cache_dir=cache)
    assert second.cache_hit
    assert _C.compiler_invocations() == before
    assert second.library_path == first.library_path


def test_parse_error_is_value_error_with_location():
    # The message is the parser's, unchanged: FILE:LINE:COLUMN first.
    with pytest.raises(ValueError, match=r"^bad\.stax:3:1: expected an argument value"):
        _C.compile("def g(x: f32[4]):\n    y = add(x,\n", "bad.stax")
    with pytest.raises(ValueError, match=r"^<graph>:1:"):
        _C.explain("def (")


def test_graph_error_is_value_error_naming_the_op():
    text = "def g(x: f32[4], y: f32[5]):\n    z = add(x, y)\n    return z\n"
    with pytest.raises(ValueError, match="add"):
        _C.compile(text, "shapes.stax")
    with pytest.raises(ValueError, match="add"):
        _C.explain(text, "shapes.stax")


def test_run_argument_errors(cache):
    compiled = _C.compile(GRAPH, cache_dir=cache)
    slots = [AlignedBuffer(n) for n in compiled.output_slot_bytes]
    x = AlignedBuffer(ROWS * COLS * 4)
    with pytest.raises(ValueError, match="input"):
        compiled.run([x.address], [s.address for s in slots], 1)
    with pytest.raises(TypeError, match="inputs must be a list"):
        compiled.run(x.address, [s.address for s in slots], 1)
    with pytest.raises(TypeError):
        compiled.run(["not an address", x.address], [s.address for s in slots], 1)


def test_compiler_failure_is_runtime_error_with_its_output(tmp_path, monkeypatch):
    # A "compiler" that prints a marker and fails; a fresh cache directory forces a compile.
    fake = tmp_path / "fake-cxx"
    fake.write_text("#!/bin/sh\necho 'fake compiler says no' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    with pytest.raises(RuntimeError) as info:
        _C.compile(GRAPH, cache_dir=str(tmp_path / "cache"))
    message = str(info.value)
    assert "kernel compilation failed (exit status 3)" in message
    assert "fake compiler says no" in message


def test_unknown_simd_level_is_value_error():
    with pytest.raises(ValueError, match="'avx9000'"):
        _C.compile(GRAPH, simd="avx9000")
    with pytest.raises(ValueError, match="'avx9000'"):
        _C.explain(GRAPH, simd="avx9000")


def test_negative_thread_count_is_value_error():
    with pytest.raises(ValueError, match="num_threads"):
        _C.compile(GRAPH, num_threads=-2)


def test_simd_levels():
    levels = _C.supported_simd_levels()
    assert levels[-1] == "scalar"
    assert levels[0] == _C.detect_simd()
    assert set(levels) <= {"avx512", "avx2", "scalar"}


@pytest.mark.parametrize("level", _C.supported_simd_levels())
def test_every_supported_level_runs(cache, level):
    compiled = _C.compile(GRAPH, simd=level, cache_dir=cache)
    _, slots = run_small(compiled)
    t_info = compiled.outputs[1]
    assert slots[t_info[1]].read_floats(ROWS) == expected_sums()[1]


def test_record_ir(cache):
    plain = _C.compile(GRAPH, cache_dir=cache)
    assert plain.ir_log == []
    recorded = _C.compile(GRAPH, cache_dir=cache, record_ir=True)
    assert len(recorded.ir_log) > 0
    assert all(isinstance(step, str) and step for step in recorded.ir_log)
    assert "after build" in recorded.ir_log[0]
    assert any("stax::op_add" in step for step in recorded.ir_log)


def test_explain(cache):
    text = _C.explain(GRAPH, "small.stax", num_threads=2)
    assert "fusing" in text or "fused" in text
    assert "kernel0" in text
    with_ir = _C.explain(GRAPH, "small.stax", num_threads=2, ir=True)
    assert len(with_ir) > len(text)
    recorded = _C.compile(GRAPH, num_threads=2, cache_dir=cache, record_ir=True)
    assert recorded.ir_log[0] in with_ir
    assert recorded.ir_log[0] not in text
    compiled = _C.compile(GRAPH, num_threads=2, cache_dir=cache)
    assert compiled.explain() == text
    document = json.loads(compiled.explain_json())
    assert isinstance(document, dict) and document


def test_keep_analysis_false_frees_what_only_explain_reads(cache):
    """torch.compile's bridge compiles with keep_analysis=False unless something will read
    the analysis (region.py): the program still runs, and explain or source say why not."""
    kept = _C.compile(GRAPH, num_threads=2, cache_dir=cache)
    slim = _C.compile(GRAPH, num_threads=2, cache_dir=cache, keep_analysis=False)
    assert slim.output_slot_bytes == kept.output_slot_bytes
    assert slim.inputs == kept.inputs and slim.outputs == kept.outputs
    for read in (lambda c: c.explain(), lambda c: c.source, lambda c: c.ir_log,
                 lambda c: c.weight_sites):
        with pytest.raises(Exception, match="without keeping its analysis"):
            read(slim)
        read(kept)
    def sums(c):
        _, slots = run_small(c)
        (_, s_slot, *_), (_, t_slot, *_), _ = c.outputs
        return slots[s_slot].read_floats(ROWS * COLS), slots[t_slot].read_floats(ROWS)

    assert sums(slim) == sums(kept) == expected_sums()


def test_op_schemas():
    schemas = dict(_C.op_schemas())
    assert {"add", "sum", "transpose", "neg"} <= schemas.keys()
    # ATen's add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1).
    assert schemas["add"] == [("self", False), ("other", False), ("alpha", True)]
    assert [name for name, _ in schemas["sum"]][:3] == ["self", "dim", "keepdim"]


def test_cache_dir_resolution(tmp_path, monkeypatch):
    assert _C.cache_dir(str(tmp_path)) == str(tmp_path)
    monkeypatch.setenv("STAX_CACHE_DIR", str(tmp_path / "from-env"))
    assert _C.cache_dir() == str(tmp_path / "from-env")


def test_version_is_the_package_version():
    assert _C.__version__ == importlib.metadata.version("stax-compiler")


def test_kernel_headers_are_installed_beside_the_module():
    headers = Path(_C.__file__).parent / "kernel_include"
    assert (headers / "stax_kernel.h").is_file()
    assert (headers / "stax_kernel_abi.h").is_file()


def test_kernel_include_dir_from_environment(tmp_path, monkeypatch):
    (tmp_path / "stax_kernel.h").write_text('#error "the header from STAX_KERNEL_INCLUDE_DIR"\n')
    monkeypatch.setenv("STAX_KERNEL_INCLUDE_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="the header from STAX_KERNEL_INCLUDE_DIR"):
        _C.compile(GRAPH, cache_dir=str(tmp_path / "cache"))


def test_relocated_module_uses_the_headers_beside_it(tmp_path):
    # A copy of the module in another package directory, beside a kernel_include/ whose
    # header fails loudly: kernels compiled through the copy must include that header, not
    # the source tree's (which still exists here).
    package = tmp_path / "stax"
    (package / "kernel_include").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(_C.__file__, package / Path(_C.__file__).name)
    (package / "kernel_include" / "stax_kernel.h").write_text(
        '#error "the header beside the relocated module"\n')
    script = (
        "import sys\n"
        "from stax import _C\n"
        f"assert _C.__file__.startswith({str(package)!r}), _C.__file__\n"
        "try:\n"
        f"    _C.compile({GRAPH!r}, cache_dir={str(tmp_path / 'cache')!r})\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "STAX_KERNEL_INCLUDE_DIR"}
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "the header beside the relocated module" in result.stdout
