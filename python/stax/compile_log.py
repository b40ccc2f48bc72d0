"""Where compile time goes, per graph (issue 34, point 4): Dynamo's tracing of the frame,
AOTAutograd (with the decompositions), then per region Stax's front end, the C++ compile (or
the JIT cache's lookup: a hit) and the library plans. One line per graph on the "compile"
topic (STAX_LOGS=compile, options={"logs": "compile"}, or the `stax.compile` logger, which
TORCH_LOGS=stax enables); stax.compile_stats() sums them for the process. A compile that
takes longer than a second prints a progress line to stderr when it starts taking long and
one when it ends (options={"progress": False} or STAX_PROGRESS=0 turns them off).
"""

from __future__ import annotations

import sys
import threading
import time

from . import debug

_lock = threading.Lock()
_totals = {"graphs": 0, "regions": 0, "cache_hits": 0, "cache_misses": 0, "dynamo_s": 0.0,
           "aot_autograd_s": 0.0, "front_end_s": 0.0, "cxx_compile_s": 0.0,
           "library_plans_s": 0.0, "total_s": 0.0}
_local = threading.local()

PROGRESS_AFTER_S = 1.0


def _on_frame_start(args=None) -> None:
    _local.frame_start = time.perf_counter()


def install_dynamo_hook() -> None:
    """Dynamo's compile-start callback (a private API, used where it exists): when a frame's
    compile starts, so that its tracing time is known when the backend is called. Installed
    again after torch._dynamo.reset(), which drops it (that first frame's time is n/a)."""
    try:
        from torch._dynamo.callback import callback_handler
    except ImportError:
        return
    starts = getattr(callback_handler, "start_callbacks", None)
    if starts is not None and _on_frame_start not in starts:
        callback_handler.register_start_callback(_on_frame_start)


def backend_entered() -> None:
    """stax_backend's first step: Dynamo's time ends, AOTAutograd's begins."""
    install_dynamo_hook()
    now = time.perf_counter()
    start = getattr(_local, "frame_start", None)
    _local.dynamo_s = None if start is None else now - start
    _local.backend_entry = now
    _local.frame_start = None


def compile_stats() -> dict:
    with _lock:
        return dict(_totals)


def reset_compile_stats() -> None:
    with _lock:
        for k in _totals:
            _totals[k] = 0 if isinstance(_totals[k], int) else 0.0


class GraphCompile:
    """Times one graph's compile (compile_aten_graph): `with GraphCompile(options, name) as c:
    ...; c.add_region(compiled)`. Its summary line is logged on exit."""

    def __init__(self, options, name: str):
        self.options = options
        self.name = name
        self.start = time.perf_counter()
        entry = getattr(_local, "backend_entry", None)
        # AOTAutograd ran from the backend's entry to here (the forward's or inference
        # graph's compile; a backward graph compiled later has none).
        self.aot_s = None if entry is None else self.start - entry
        self.dynamo_s = getattr(_local, "dynamo_s", None)
        _local.backend_entry = None
        _local.dynamo_s = None
        self.regions = 0
        self.hits = 0
        self.front_end_s = self.cxx_s = self.plans_s = 0.0
        self.progress_printed = False
        self._timer = None

    def __enter__(self):
        if self.options.progress:
            self._timer = threading.Timer(PROGRESS_AFTER_S, self._progress)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _progress(self) -> None:
        self.progress_printed = True
        print(f"stax: compiling {self.name} (C++ compiles running, "
              f"{time.perf_counter() - self.start:.1f} s so far)...", file=sys.stderr, flush=True)

    def add_region(self, compiled) -> None:
        """A region's compiled program (stax._C.Compiled)."""
        front, cxx, plans = compiled.compile_times
        self.regions += 1
        self.hits += bool(compiled.cache_hit)
        self.front_end_s += front
        self.cxx_s += cxx
        self.plans_s += plans

    def __exit__(self, kind, value, tb):
        if self._timer is not None:
            self._timer.cancel()
        total = time.perf_counter() - self.start
        with _lock:
            _totals["graphs"] += 1
            _totals["regions"] += self.regions
            _totals["cache_hits"] += self.hits
            _totals["cache_misses"] += self.regions - self.hits
            _totals["dynamo_s"] += self.dynamo_s or 0.0
            _totals["aot_autograd_s"] += self.aot_s or 0.0
            _totals["front_end_s"] += self.front_end_s
            _totals["cxx_compile_s"] += self.cxx_s
            _totals["library_plans_s"] += self.plans_s
            _totals["total_s"] += total
        if kind is None:
            debug.log(self.options, "compile", self.summary(total))
        if self.progress_printed:
            print(f"stax: compiled {self.name} in {total:.1f} s", file=sys.stderr, flush=True)
        return False

    def summary(self, total: float) -> str:
        def s(v):
            return "n/a" if v is None else f"{v * 1e3:.0f} ms"

        return (f"stax: compiled {self.name}: {self.regions} region(s), "
                f"{self.hits} from the kernel cache, {self.regions - self.hits} compiled; "
                f"Dynamo {s(self.dynamo_s)}, AOTAutograd {s(self.aot_s)}, Stax front end "
                f"{s(self.front_end_s)}, C++ compile {s(self.cxx_s)}, library plans "
                f"{s(self.plans_s)}; {s(total)} in the backend")
