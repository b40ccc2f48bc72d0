"""Stax: a CPU tensor compiler.

`import stax` registers the torch.compile backend "stax" (installing the package registers
it too, through the `torch_dynamo_backends` entry point):

    model = torch.compile(model, backend="stax")
"""

import os as _os
import sys as _sys

from .requirements import import_extension as _import_extension

_C = _import_extension()

__version__ = _C.__version__


def _point_at_blas() -> None:
    """Where the C++ side looks for the BLAS first (after STAX_BLAS_LIBRARY): the MKL inside
    PyTorch's libtorch_cpu when torch was built with it (eager's own float32 torch.mm, already
    in memory), else MKL's libmkl_rt where PyPI's `mkl` put it in this environment. Float32
    products whose B has contiguous columns measure it against oneDNN
    (src/external/blas_library.h)."""
    try:
        import torch
    except ImportError:  # PyTorch is optional for the C++ API's bindings
        torch = None
    if torch is not None and torch.backends.mkl.is_available():
        path = _os.path.join(_os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        if _os.path.exists(path):
            _C.set_blas_library_path(path)
            return
    for name in ("libmkl_rt.so.3", "libmkl_rt.so.2"):
        path = _os.path.join(_sys.prefix, "lib", name)
        if _os.path.exists(path):
            _C.set_blas_library_path(path)
            return


_point_at_blas()


def blas_library() -> tuple:
    """(description, why): the BLAS float32 products may be handed to ("oneMKL 2026 Update 2
    (path, GNU OpenMP layer)"), loaded on first use; description empty, and why saying why,
    when there is none."""
    return _C.blas_library()


def _register_backend() -> None:
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:  # PyTorch is optional for the C++ API's bindings
        return
    import torch

    from .requirements import check_torch

    check_torch(torch)
    from .backend import stax_backend
    from .compile_log import install_dynamo_hook

    install_dynamo_hook()
    try:  # TORCH_LOGS=stax turns on the `stax` logger (a private API, used where it exists)
        from torch._logging._internal import register_log

        register_log("stax", "stax")
    except (ImportError, AttributeError, ValueError):
        pass

    if "stax" not in list_backends(exclude_tags=()):
        register_backend(name="stax")(stax_backend)


def explain(fn, *args, **kwargs):
    """Which ops of `fn` run in Stax and which in PyTorch (see explain_report.py)."""
    from .explain_report import explain as _explain

    return _explain(fn, *args, **kwargs)


def trim_output_pool() -> int:
    """Frees the memory Stax keeps for the next calls: the cached blocks of its one pool, which
    serves large outputs, the programs' arenas and their large scratch blocks (the pool also
    empties itself when the system runs short of memory); returns the bytes freed."""
    return _C.output_pool_trim()


def output_pool_stats() -> dict:
    """The pool's counters: cached_blocks, cached_bytes, hits, misses, huge_page_blocks
    (blocks advised as transparent huge pages), trims, live_bytes (handed out now: outputs
    alive, arenas and scratch of running calls), peak_live_bytes (the most handed out at once
    since the last trim, which bounds live plus cached bytes), evictions (cached blocks, or
    the ends of them, freed to keep that bound), splits (requests served by a piece of a
    larger cached block) and allocated_bytes (fresh memory the misses took, whose pages the
    first use faults in)."""
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

    * output_pool: the counters of the process's pool (as output_pool_stats()), which holds
      the large outputs, the arenas and the large scratch blocks;
    * arenas: held_bytes, the bytes the loaded programs' arenas of intermediates hold now
      (one block per running call, taken from the pool and given back after it), and
      programs, one entry per loaded program (its library, planned arena_bytes, held_bytes
      and scratch_bytes);
    * scratch: program_bytes, the programs' other intermediates (live; small blocks cached
      by the C library), and
      library_workspace_bytes, the workspaces of library calls (oneDNN matmuls,
      convolutions, attention) running now. Between calls all of these are back in the pool,
      whose cached bytes count them."""
    return _C.memory_stats()


PackageError = _C.PackageError


def aot_compile(model_or_fn, example_inputs, path, **kwargs) -> str:
    """Exports and compiles a model into an ahead-of-time package at `path` (aot.py)."""
    from .aot import aot_compile as _aot_compile

    return _aot_compile(model_or_fn, example_inputs, path, **kwargs)


def compile_stats() -> dict:
    """What compiling has cost this process, summed over graphs (compile_log.py): graphs,
    regions, kernel-cache hits and misses, and seconds in Dynamo, AOTAutograd, Stax's front
    end, the C++ compiler, the library plans, and in all of the backend."""
    from .compile_log import compile_stats as _compile_stats

    return _compile_stats()


def load(path, **kwargs):
    """Loads an ahead-of-time package without compiling (aot.py's LoadedPackage)."""
    from .aot import load as _load

    return _load(path, **kwargs)


_register_backend()
