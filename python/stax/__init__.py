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


def trim_output_pool() -> int:
    """Frees the memory Stax keeps for the large outputs of the next calls (the output pool,
    which also empties itself when the system runs short of memory); returns the bytes freed."""
    return _C.output_pool_trim()


def output_pool_stats() -> dict:
    """The output pool's counters: cached_blocks, cached_bytes, hits, misses, huge_page_blocks
    (blocks advised as transparent huge pages) and trims."""
    return _C.output_pool_stats()



def unfreeze(module=None) -> int:
    """freeze_parameters=True: drops the packed weights of `module`'s parameters and buffers
    (an nn.Module, or one tensor; every compiled graph's when None), so that the next call
    packs them again from their current contents. Needed after writes that bump no version
    counter (through `p.data`, NumPy, DLPack), which the per-call check cannot see
    (docs/freeze_parameters.md). Returns how many packed weights were dropped."""
    from .frozen_weights import unfreeze as _unfreeze

    return _unfreeze(module)


def memory_stats() -> dict:
    """What Stax holds besides the tensors it returned, from the C++ side:

    * output_pool: the output pool's counters (as output_pool_stats());
    * arenas: held_bytes, the bytes the loaded programs' arenas of intermediates hold now
      (one block per concurrent call, kept for the next calls), and programs, one entry per
      loaded program (its library, planned arena_bytes, held_bytes and scratch_bytes);
    * scratch: program_bytes, the programs' other intermediates (cached and live), and
      library_workspace_bytes, the workspaces library calls (oneDNN matmuls, convolutions,
      attention) keep between calls."""
    return _C.memory_stats()

_register_backend()
