"""The installable C++ library (issue 34, point 2) and the C++ example of point 1: the build
tree installed with `cmake --install`, examples/cpp_package built against it with
find_package(Stax) and run on a package of a transformers model written here, matching
eager's outputs with no Python in its process; the same source built with pkg-config; and a
parent project that add_subdirectory()s Stax configures with Stax's tests, benchmarks and
-Werror kept out of it.

The build tree is the repository's build/ (scripts/test.sh builds it before pytest)."""

import json
import os
import subprocess

import pytest
import torch

import stax
from eager_comparison import summation_tolerance

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import safetensors.torch  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")


def run(cmd, **kwargs):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kwargs)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))}:\n{out.stdout}\n{out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        pytest.fail("build/ is not configured: scripts/test.sh builds it before pytest")
    prefix = tmp_path_factory.mktemp("stax-install")
    run(["cmake", "--build", BUILD, "--target", "stax_library", "stax"])
    run(["cmake", "--install", BUILD, "--prefix", str(prefix)])
    return prefix


@pytest.fixture(scope="module")
def bert_case(tmp_path_factory):
    """A tiny BERT's package and a cases file: its inputs, eager's outputs, the tolerance."""
    d = tmp_path_factory.mktemp("bert-case")
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=128)).eval()
    ids = torch.randint(0, 100, (2, 16))
    pkg = stax.aot_compile(model, (ids,), d / "bert.staxpkg")
    with torch.no_grad():
        out = model(ids)
    tol = summation_tolerance(torch.float32, 128, 4.0)
    cases = d / "cases.safetensors"
    # Written by the safetensors package itself: the C++ reader takes the reference format.
    safetensors.torch.save_file({
        "input.0": ids,
        "expected.0": out.last_hidden_state.contiguous(),
        "expected.1": out.pooler_output.contiguous(),
        "tolerance": torch.tensor([tol["rtol"], tol["atol"]], dtype=torch.float64),
    }, str(cases))
    return pkg, cases, model


def test_installed_tree_has_the_library_headers_and_config(installed):
    assert os.path.exists(installed / "include" / "stax" / "stax.h")
    assert os.path.exists(installed / "lib" / "cmake" / "Stax" / "StaxConfig.cmake")
    assert os.path.exists(installed / "lib" / "pkgconfig" / "stax.pc")
    assert os.path.exists(installed / "share" / "stax" / "kernel_include" / "stax_kernel.h")
    assert os.path.exists(installed / "bin" / "stax")
    libs = os.listdir(installed / "lib")
    assert any(name.startswith("libstax.so") for name in libs), libs


def test_cpp_example_runs_a_bert_package_against_the_installed_library(installed, bert_case,
                                                                       tmp_path):
    pkg, cases, _ = bert_case
    build = tmp_path / "example"
    run(["cmake", "-S", os.path.join(ROOT, "examples", "cpp_package"), "-B", str(build),
         "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={installed}"])
    run(["cmake", "--build", str(build)])
    exe = build / "run_package"
    # A process with no Python and no libtorch: what the executable links.
    linked = run(["ldd", str(exe)])
    assert "libstax.so" in linked and "libtorch" not in linked and "python" not in linked
    out = run([str(exe), str(pkg), str(cases)])
    assert out.count(" ok") == 2 and "MISMATCH" not in out, out
    assert "weights bound" in out


def test_pkg_config_builds_the_same_example(installed, bert_case, tmp_path):
    pkg, cases, _ = bert_case
    env = dict(os.environ, PKG_CONFIG_PATH=str(installed / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "stax"], env=env).split()
    exe = tmp_path / "run_package"
    run(["c++", "-O1", os.path.join(ROOT, "examples", "cpp_package", "main.cpp"), "-o",
         str(exe), *flags])
    out = run([str(exe), str(pkg), str(cases)])
    assert out.count(" ok") == 2, out


def test_package_weights_are_safetensors_other_tools_read(bert_case):
    pkg, _, model = bert_case
    data = open(pkg, "rb").read()
    manifest_bytes = int.from_bytes(data[8:16], "little")
    manifest = json.loads(data[80:80 + manifest_bytes])
    (section,) = [s for s in manifest["sections"] if s["name"] == "weights.safetensors"]
    weights = safetensors.torch.load(data[section["offset"]:section["offset"] + section["bytes"]])
    state = model.state_dict()
    assert torch.equal(weights["embeddings.word_embeddings.weight"],
                       state["embeddings.word_embeddings.weight"])
    assert len(weights) == len(manifest["weights"])


def test_add_subdirectory_keeps_stax_to_itself(tmp_path):
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "main.cpp").write_text(
        "#include <stax/stax.h>\nint main() { return stax::Package::load(\"x\").input_names().size(); }\n")
    (parent / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(parent CXX)\n"
        f"add_subdirectory({ROOT} stax)\n"
        "add_executable(app main.cpp)\ntarget_link_libraries(app PRIVATE Stax::stax)\n")
    build = tmp_path / "build"
    run(["cmake", "-S", str(parent), "-B", str(build), "-G", "Ninja"])
    cache = (build / "CMakeCache.txt").read_text()
    assert "STAX_BUILD_TESTS:BOOL=OFF" in cache
    assert "STAX_WARNINGS_AS_ERRORS:BOOL=OFF" in cache
    commands = run(["ninja", "-C", str(build), "-t", "commands", "app"])
    app_compile = [c for c in commands.splitlines() if "main.cpp" in c]
    assert app_compile and "-Werror" not in app_compile[0], app_compile
    targets = run(["ninja", "-C", str(build), "-t", "targets", "all"])
    assert "test_driver" not in targets and "test_package" not in targets
