"""What Stax needs at run time, checked where it is first needed, each missing piece named
with the way to install it (issue 34, point 3):

* the extension module's shared libraries: oneDNN (libdnnl.so.2, Debian's libdnnl2 or
  libdnnl-dev), SLEEF (libsleef.so.3: libsleef3) and GNU OpenMP (libgomp1), checked at
  `import stax`;
* a supported PyTorch (SUPPORTED_TORCH), checked when the torch.compile backend registers;
  STAX_ALLOW_UNSUPPORTED_TORCH=1 tries another at the user's risk;
* the private PyTorch APIs the bridge uses (PRIVATE_TORCH_APIS), each checked at the same
  time, so that a torch that moved one fails with its name, not deep inside a compile;
* for compiling kernels, a C++ compiler (g++, or $CXX) and SLEEF's header and library
  (libsleef-dev): a compile that fails for want of one raises naming it
  (environment_problem), instead of the region silently running in PyTorch.
"""

from __future__ import annotations

import importlib
import os
import re

# The PyTorch releases the bridge is tested with (major.minor).
SUPPORTED_TORCH = ("2.13",)

# (module, attribute or None): the private APIs python/stax uses, where it uses them.
PRIVATE_TORCH_APIS = (
    ("torch._dynamo", "list_backends"),  # __init__.py: registering the backend
    ("torch._dynamo", "register_backend"),
    ("torch._dynamo.backends.common", "aot_autograd"),  # backend.py: AOTAutograd
    ("torch._decomp", "core_aten_decompositions"),  # backend.py: the decomposition table
    ("torch._decomp", "get_decompositions"),
    ("torch._functorch._aot_autograd.schemas", "OutputType"),  # backend.py: plain graphs
    ("torch._functorch._aot_autograd.schemas", "PlainTensorMeta"),
    ("torch._guards", "TracingContext"),
    ("torch._ops", "OpOverload"),  # partition.py, aten_ops.py: ATen overloads
    ("torch._prims_common", "compute_elementwise_output_logical_to_physical_perm"),
    ("torch._subclasses.fake_tensor", "FakeTensorMode"),  # symbolic_region.py
    ("torch._dynamo.config", "recompile_limit"),
    ("torch.fx.node", "Node._rename"),  # aot.py: naming a torch.compile graph's inputs
)

# Shared libraries the extension links, and the Debian package that has each.
_LIBRARIES = {
    "libdnnl": "oneDNN (Debian: apt install libdnnl2)",
    "libsleef": "SLEEF (Debian: apt install libsleef3)",
    "libgomp": "GNU OpenMP (Debian: apt install libgomp1)",
}


class UnsupportedTorch(ImportError):
    pass


def import_extension():
    """stax._C, or an ImportError naming the shared library it could not load."""
    try:
        return importlib.import_module("stax._C")
    except ImportError as e:
        text = str(e)
        for prefix, what in _LIBRARIES.items():
            if prefix in text:
                raise ImportError(f"stax: the extension module needs {what}; the loader said: "
                                  f"{text}") from e
        raise


def check_torch(torch) -> None:
    """UnsupportedTorch for a PyTorch outside SUPPORTED_TORCH (unless
    STAX_ALLOW_UNSUPPORTED_TORCH=1), or whose private APIs the bridge uses are missing."""
    version = torch.__version__.split("+")[0]
    minor = ".".join(version.split(".")[:2])
    if minor not in SUPPORTED_TORCH and os.environ.get("STAX_ALLOW_UNSUPPORTED_TORCH") != "1":
        raise UnsupportedTorch(
            f"stax: PyTorch {torch.__version__} is not supported; Stax's torch.compile backend "
            f"is tested with PyTorch {', '.join(v + '.x' for v in SUPPORTED_TORCH)} "
            "(pip install 'torch==2.13.*'); STAX_ALLOW_UNSUPPORTED_TORCH=1 tries it anyway")
    missing = missing_private_apis()
    if missing:
        raise UnsupportedTorch(
            f"stax: PyTorch {torch.__version__} lacks what the backend uses: "
            + ", ".join(missing))


def missing_private_apis() -> list[str]:
    missing = []
    for module, attribute in PRIVATE_TORCH_APIS:
        try:
            m = importlib.import_module(module)
        except ImportError:
            missing.append(module)
            continue
        for part in (attribute or "").split(".") if attribute else ():
            if not hasattr(m, part):
                missing.append(f"{module}.{attribute}")
                break
            m = getattr(m, part)
    return missing


_PROBLEMS = (
    (re.compile(r"cannot run '([^']*)'"),
     "Stax compiles its kernels with a C++ compiler, and '{0}' cannot be run: install one "
     "(Debian: apt install g++) or name it in $CXX"),
    (re.compile(r"sleef\.h: No such file"),
     "Stax's kernels include SLEEF's header, which is missing (Debian: apt install "
     "libsleef-dev)"),
    (re.compile(r"cannot find -lsleef"),
     "Stax's kernels link SLEEF, which is missing (Debian: apt install libsleef-dev)"),
)


def environment_problem(error) -> str | None:
    """What is missing from this machine when `error` (a failed compile) says so, else None
    (the error is the graph's own)."""
    text = str(error)
    for pattern, advice in _PROBLEMS:
        m = pattern.search(text)
        if m:
            return advice.format(*m.groups())
    return None


class MissingRequirement(RuntimeError):
    """A compile failed because this machine lacks something Stax needs (named)."""
