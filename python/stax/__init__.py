"""Stax: a CPU tensor compiler.

`import stax` registers the torch.compile backend "stax" (installing the package registers
it too, through the `torch_dynamo_backends` entry point):

    model = torch.compile(model, backend="stax")
"""

from . import _C

__version__ = _C.__version__


def _register_backend() -> None:
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:  # PyTorch is optional for the C++ API's bindings
        return
    from .backend import stax_backend

    if "stax" not in list_backends(exclude_tags=()):
        register_backend(name="stax")(stax_backend)


def explain(fn, *args, **kwargs):
    """Which ops of `fn` run in Stax and which in PyTorch (see explain_report.py)."""
    from .explain_report import explain as _explain

    return _explain(fn, *args, **kwargs)


_register_backend()
