"""Options of the "stax" torch.compile backend: `torch.compile(fn, backend="stax",
options={...})`. An unknown option, or a value of the wrong kind, is an error naming it."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from . import _C

SIMD_LEVELS = ("", "avx512", "avx2", "scalar")
# Topics this package prints; "ir" from the IR the C++ side records (Options.record_ir).
PYTHON_LOG_TOPICS = ("fusion", "schedule", "ir", "output_code", "graph", "fallback", "recompiles",
                     "compile")
# One configuration serves both sides: the C++ side prints its other topics ("graph_passes",
# "program") as this package's options name them (Options.cpp_logs), not from STAX_LOGS.
CPP_LOG_TOPICS = tuple(t for t in _C.log_topics() if t not in PYTHON_LOG_TOPICS)
LOG_TOPICS = PYTHON_LOG_TOPICS + CPP_LOG_TOPICS


@dataclass(frozen=True)
class Options:
    # Threads of every kernel; None: torch.get_num_threads() at each call.
    threads: int | None = None
    # SIMD level of the generated code; "" is the widest this CPU runs.
    simd: str = ""
    # Log topics printed to stderr (LOG_TOPICS; those STAX_LOGS names add to these), by this
    # package and by the C++ side.
    logs: tuple = ()
    # Directory for per-graph debug files (also STAX_DEBUG_DIR).
    debug_dir: str = ""
    # Kernel cache directory ("" : STAX_CACHE_DIR, else ~/.cache/stax).
    cache_dir: str = ""
    # Turns on every log topic.
    debug: bool = False
    # The graph passes before lowering (the written-out attention as one blocked call); False
    # lowers each graph as written (for before/after measurements).
    graph_passes: bool = True
    # Intermediates around convolutions stored channels last where the library runs them in
    # place on that layout (nothing reordered from one convolution to the next); False stores
    # every intermediate row-major (for before/after measurements).
    channels_last_intermediates: bool = True
    # Library matrix products whose B has contiguous columns (GPT-2's Conv1D weights, most
    # backward products) time B in place against B packed into the library's layout once per
    # shape and keep the faster; False keeps B in place (for before/after measurements).
    measure_matmul_weights: bool = True
    # Those products in float32 without post-ops also time the BLAS (MKL's sgemm: the MKL
    # inside PyTorch, src/external/blas_library.h) and take it where it is faster; False keeps
    # every product on oneDNN (for before/after measurements).
    matmul_blas: bool = True
    # Large outputs from Stax's output pool (kept across calls, their pages mapped); False
    # takes them from PyTorch's allocator (for before/after measurements).
    output_pool: bool = True
    # Non-temporal stores for kernels moving more than the last-level cache into memory that
    # is already mapped (pooled outputs, the arena); False keeps ordinary stores.
    streaming_stores: bool = True
    # Input mutations written by Stax's program into the inputs' memory (copy_ kept in the
    # graph); False lets AOTAutograd copy the returned values back (before/after measurements).
    mutations_in_place: bool = True
    # Convolution weights that are nn.Parameters or registered buffers packed once into the
    # library's format instead of reordered on every call (as the default backend's freezing;
    # docs/freeze_parameters.md says exactly what it assumes): before each call the weight's
    # identity, version counter (bumped by in-place ops, optimizer steps, load_state_dict),
    # data pointer and dtype are compared with the packed ones, and a weight that differs is
    # packed again. Writes that bump no version counter (through `p.data`, NumPy, DLPack) are
    # not seen: call stax.unfreeze() after them. Weights that require grad in training are
    # never packed.
    freeze_parameters: bool = False
    # A line on stderr when a graph's compile has taken a second, and one when it ends
    # (compile_log.py); STAX_PROGRESS=0 turns them off too.
    progress: bool = True

    @property
    def cpp_logs(self) -> list:
        """The topics the C++ side prints while compiling (_C.compile's logs)."""
        return [t for t in self.logs if t in CPP_LOG_TOPICS]

    @property
    def record_ir(self) -> bool:
        return "ir" in self.logs or bool(self.debug_dir)

    @staticmethod
    def parse(options: dict | None) -> "Options":
        options = dict(options or {})
        known = {f.name for f in fields(Options)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(
                f"stax: unknown option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(u) for u in unknown)} (known: {', '.join(sorted(known))})"
            )
        threads = options.get("threads")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise ValueError(f"stax: option 'threads' must be a positive int or None, got {threads!r}")
        simd = options.get("simd", "")
        if simd not in SIMD_LEVELS:
            raise ValueError(f"stax: option 'simd' must be one of {SIMD_LEVELS[1:]}, got {simd!r}")
        debug = options.get("debug", False)
        graph_passes = options.get("graph_passes", True)
        output_pool = options.get("output_pool", True)
        streaming_stores = options.get("streaming_stores", True)
        mutations_in_place = options.get("mutations_in_place", True)
        freeze_parameters = options.get("freeze_parameters", False)
        channels_last_intermediates = options.get("channels_last_intermediates", True)
        measure_matmul_weights = options.get("measure_matmul_weights", True)
        matmul_blas = options.get("matmul_blas", True)
        progress = options.get("progress", os.environ.get("STAX_PROGRESS", "1") != "0")
        for name, value in (("debug", debug), ("graph_passes", graph_passes), ("progress", progress),
                            ("channels_last_intermediates", channels_last_intermediates),
                            ("measure_matmul_weights", measure_matmul_weights),
                            ("matmul_blas", matmul_blas),
                            ("output_pool", output_pool), ("streaming_stores", streaming_stores),
                            ("mutations_in_place", mutations_in_place),
                            ("freeze_parameters", freeze_parameters)):
            if not isinstance(value, bool):
                raise ValueError(f"stax: option '{name}' must be a bool, got {value!r}")
        logs = options.get("logs", ())
        if isinstance(logs, str):
            logs = tuple(t for t in logs.split(",") if t)
        logs = tuple(logs) + tuple(t for t in os.environ.get("STAX_LOGS", "").split(",") if t)
        if debug:
            logs += LOG_TOPICS
        for t in logs:
            if t not in LOG_TOPICS:
                raise ValueError(f"stax: unknown log topic {t!r} (known: {', '.join(LOG_TOPICS)})")
        debug_dir = options.get("debug_dir") or os.environ.get("STAX_DEBUG_DIR", "")
        cache_dir = options.get("cache_dir", "")
        for name, value in (("debug_dir", debug_dir), ("cache_dir", cache_dir)):
            if not isinstance(value, str):
                raise ValueError(f"stax: option '{name}' must be a path string, got {value!r}")
        return Options(threads=threads, simd=simd, logs=tuple(dict.fromkeys(logs)),
                       debug_dir=debug_dir, cache_dir=cache_dir, debug=debug,
                       graph_passes=graph_passes,
                       channels_last_intermediates=channels_last_intermediates,
                       measure_matmul_weights=measure_matmul_weights,
                       matmul_blas=matmul_blas,
                       output_pool=output_pool,
                       streaming_stores=streaming_stores,
                       mutations_in_place=mutations_in_place,
                       freeze_parameters=freeze_parameters, progress=progress)
