"""stax.explain(fn, *args): compiles and runs `fn` once through the "stax" backend and
reports, over every graph it produced, which ATen ops ran in Stax and which PyTorch ran,
with counts and reasons."""

from __future__ import annotations

import collections
import collections.abc

from . import backend, debug


class ExplainResult:
    def __init__(self, graphs):
        self.graphs = graphs
        self.stax_ops = collections.Counter()
        self.fallback_ops = collections.Counter()
        self.fallback_reasons: dict[str, collections.Counter] = {}
        for g in graphs:
            self.stax_ops.update(g.report.stax_ops)
            self.fallback_ops.update(g.report.fallback_ops)
            for op, reasons in g.report.fallback_reasons.items():
                self.fallback_reasons.setdefault(op, collections.Counter()).update(reasons)

    @property
    def fallback_fraction(self) -> float:
        total = sum(self.stax_ops.values()) + sum(self.fallback_ops.values())
        return sum(self.fallback_ops.values()) / total if total else 0.0

    def __str__(self) -> str:
        lines = [f"stax.explain: {len(self.graphs)} graph(s); "
                 f"{sum(self.stax_ops.values())} op(s) in Stax, "
                 f"{sum(self.fallback_ops.values())} in PyTorch "
                 f"({100 * self.fallback_fraction:.1f}% fell back)"]
        lines += [debug.report_text(g) for g in self.graphs]
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *args, options: dict | None = None, backward: bool = False, **kwargs):
    """Compiles `fn` with the stax backend exactly as torch.compile(fn, backend="stax",
    options=options) does (the records are taken inside that path, in
    backend.compile_aten_graph, so what is explained is what runs), calls it on `args`, and
    with backward=True runs backward from the sum of its floating-point outputs that require
    grad (found in tuples, lists, dicts and dataclass-like model outputs), so the backward
    graph is explained too; without such an output there is no backward to explain."""
    import torch

    records: list = []
    with backend._recorder_lock:
        backend._recorders.append(records)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="stax", options=options)
        out = compiled(*args, **kwargs)
        if backward:
            grads = [t for t in _tensors(out) if t.requires_grad and t.is_floating_point()]
            if grads:
                torch.stack([t.float().sum() for t in grads]).sum().backward()
    finally:
        with backend._recorder_lock:
            backend._recorders.remove(records)
    return ExplainResult(records)


def _tensors(value):
    """The tensors in a (nested) output: tuples, lists, mappings (a Hugging Face ModelOutput
    is one) and dataclasses."""
    import dataclasses

    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, collections.abc.Mapping):
        for v in value.values():
            yield from _tensors(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _tensors(getattr(value, f.name))
