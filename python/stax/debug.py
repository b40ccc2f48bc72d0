"""Debug output as PyTorch users expect it.

STAX_LOGS=fusion,schedule,ir,output_code (or options={"logs": ...}) prints those to stderr;
"graph" prints each ATen graph, "fallback" the ops left to PyTorch with their reasons and
"recompiles" each compile of a region with symbolic sizes for new sizes (symbolic_region.py),
"compile" where each graph's compile time went (compile_log.py). Every line also goes to
Python's logging, to the logger `stax.<topic>` at INFO (TORCH_LOGS=stax shows them through
PyTorch's logging).
STAX_DEBUG_DIR=path (or options={"debug_dir": path}) writes, per graph, into
path/<run>/<graph>/, <run> being this process's own folder (its start time, process id and
distributed rank: runs and ranks never overwrite each other's files): the FX graph
(fx_graph.py), per region the Stax graph text (<region>.stax, runnable with `stax run`), its
fusion and schedule log (<region>.explain.txt), its kernel IR after every pass
(<region>.kernel_ir.txt) and the generated C++ (<region>.cpp), and report.txt.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time


def log(options, topic: str, text: str) -> None:
    if topic in options.logs:
        print(text, file=sys.stderr)
    logging.getLogger("stax." + topic).info(text)


_run_dirs: dict = {}
_run_dirs_lock = threading.Lock()
_process_start = time.strftime("%Y%m%d-%H%M%S")


def _rank() -> str:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return str(dist.get_rank())
    except ImportError:
        pass
    return os.environ.get("RANK", "")


def run_dir(options) -> str:
    """This process's folder under the debug directory, made (and said on stderr) once."""
    with _run_dirs_lock:
        d = _run_dirs.get(options.debug_dir)
        if d is None:
            rank = _rank()
            name = f"run-{_process_start}-pid{os.getpid()}" + (f"-rank{rank}" if rank else "")
            d = os.path.join(options.debug_dir, name)
            os.makedirs(d, exist_ok=True)
            _run_dirs[options.debug_dir] = d
            print(f"stax: debug files of this run in {d}", file=sys.stderr)
        return d


def write_fx_graph(options, name: str, gm) -> None:
    if "graph" in options.logs:
        print(f"stax: ATen graph {name}:\n{gm.code}", file=sys.stderr)
    if options.debug_dir:
        d = _graph_dir(options, name)
        with open(os.path.join(d, "fx_graph.py"), "w") as f:
            f.write(gm.code)


def _graph_dir(options, name: str) -> str:
    d = os.path.join(run_dir(options), name)
    os.makedirs(d, exist_ok=True)
    return d


def _split_explain(text: str) -> tuple[str, str]:
    """The fusion part of `stax explain` (lowering, nodes, fusion rounds) and the schedule
    part (kernels, buffers)."""
    marker = text.find("\nfinal nodes")
    if marker < 0:
        return text, text
    return text[:marker + 1], text[marker + 1:]


def report_graph(options, record, fused) -> None:
    report = record.report
    summary = report_text(record)
    log(options, "fallback", summary)
    # The C++ explanation of a region is text made on request: only when it is printed.
    wanted = options.debug_dir or {"fusion", "schedule"} & set(options.logs)
    for region in record.regions if wanted or {"ir", "output_code"} & set(options.logs) else ():
        variant = region.primary
        if variant is None:
            continue  # a region with symbolic sizes that compiles at its first call
        # The fusion log and the debug files list every refused pair with its reason.
        explain = variant.compiled.explain(verbose=True) if wanted else ""
        fusion, schedule = _split_explain(explain)
        log(options, "fusion", f"stax: fusion of {region.name}:\n{fusion}")
        log(options, "schedule", f"stax: schedule of {region.name}:\n{schedule}")
        if "ir" in options.logs:
            log(options, "ir", f"stax: kernel IR of {region.name}:\n" + "\n".join(variant.compiled.ir_log))
        log(options, "output_code", f"stax: generated C++ of {region.name}:\n{variant.compiled.source}")
        if options.debug_dir:
            d = _graph_dir(options, record.name)
            files = {
                f"{region.name}.stax": region.text,
                f"{region.name}.explain.txt": explain,
                f"{region.name}.kernel_ir.txt": "\n".join(variant.compiled.ir_log),
                f"{region.name}.cpp": variant.compiled.source,
            }
            for fname, content in files.items():
                with open(os.path.join(d, fname), "w") as f:
                    f.write(content)
    if options.debug_dir:
        d = _graph_dir(options, record.name)
        with open(os.path.join(d, "report.txt"), "w") as f:
            f.write(summary + "\n\nGraph with Stax regions:\n" + fused.code)


def report_text(record) -> str:
    r = record.report
    n_stax, n_fb = sum(r.stax_ops.values()), sum(r.fallback_ops.values())
    lines = [f"stax: {record.kind} graph {record.name}: {len(record.regions)} Stax region(s), "
             f"{n_stax} op(s) in Stax, {n_fb} in PyTorch"]
    for op, count in sorted(r.fallback_ops.items(), key=lambda kv: (-kv[1], kv[0])):
        reasons = "; ".join(f"{why} (x{c})" for why, c in r.fallback_reasons[op].most_common())
        lines.append(f"  PyTorch runs {op} x{count}: {reasons}")
    # freeze_parameters: which convolution weights are packed once, and why not where not.
    for region in record.regions:
        lines += region.sizes_report()
        lines += region.frozen_report()
    return "\n".join(lines)
