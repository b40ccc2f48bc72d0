"""What Stax needs at run time (issue 34, point 3; stax/requirements.py): a PyTorch outside
the supported releases, a private API a PyTorch lacks, a shared library the extension cannot
load and a machine without a C++ compiler are each reported naming the missing piece, and a
compile that fails for want of a compiler raises instead of running in PyTorch unseen."""

import importlib
import types

import pytest
import torch

import stax
from stax import requirements


def test_installed_torch_is_supported_and_has_every_private_api():
    requirements.check_torch(torch)
    assert requirements.missing_private_apis() == []


def test_other_torch_releases_are_refused_naming_the_supported_ones(monkeypatch):
    old = types.SimpleNamespace(__version__="2.9.1+cpu")
    monkeypatch.delenv("STAX_ALLOW_UNSUPPORTED_TORCH", raising=False)
    with pytest.raises(requirements.UnsupportedTorch, match=r"PyTorch 2\.9\.1\+cpu is not "
                       r"supported.*tested with PyTorch 2\.13\.x"):
        requirements.check_torch(old)
    monkeypatch.setenv("STAX_ALLOW_UNSUPPORTED_TORCH", "1")
    requirements.check_torch(old)  # at the user's risk


def test_a_missing_private_api_is_named(monkeypatch):
    monkeypatch.setattr(requirements, "PRIVATE_TORCH_APIS",
                        requirements.PRIVATE_TORCH_APIS + (("torch._dynamo", "no_such_api"),
                                                           ("torch._no_such_module", None)))
    with pytest.raises(requirements.UnsupportedTorch,
                       match=r"lacks .*torch\._dynamo\.no_such_api, torch\._no_such_module"):
        requirements.check_torch(torch)


def test_a_library_the_extension_cannot_load_is_named(monkeypatch):
    def fail(name):
        raise ImportError("libdnnl.so.2: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(importlib, "import_module", fail)
    with pytest.raises(ImportError, match=r"needs oneDNN \(Debian: apt install libdnnl2\)"):
        requirements.import_extension()


def test_compile_errors_that_name_a_missing_tool():
    assert "apt install g++" in requirements.environment_problem(
        "command: ...\ncannot run 'g++-99': No such file or directory")
    assert "libsleef-dev" in requirements.environment_problem(
        "x.cpp:3:10: fatal error: sleef.h: No such file or directory")
    assert "libsleef-dev" in requirements.environment_problem("/usr/bin/ld: cannot find -lsleef")
    assert requirements.environment_problem("error: 'foo' was not declared") is None


def test_no_compiler_raises_instead_of_falling_back(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    f = torch.compile(lambda x: (x * 3).cos(), backend="stax",
                      options={"cache_dir": str(tmp_path)})
    with pytest.raises(Exception, match=r"'/nonexistent/c\+\+' cannot be run: install one "
                                        r"\(Debian: apt install g\+\+\)"):
        f(torch.randn(7))
