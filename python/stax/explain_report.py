"""stax.explain(fn, *args): compiles and runs `fn` once through the "stax" backend and
reports, over every graph it produced, which ATen ops ran in Stax and which PyTorch ran,
with counts and reasons."""

from __future__ import annotations

import collections

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
    """Compiles `fn` with the stax backend, calls it on `args`, and (with backward=True)
    runs backward from the sum of its floating-point outputs, so the backward graph is
    explained too."""
    import torch

    records: list = []
    with backend._recorder_lock:
        backend._recorders.append(records)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="stax", options=options)
        out = compiled(*args, **kwargs)
        if backward:
            outs = out if isinstance(out, (list, tuple)) else [out]
            total = sum(o.float().sum() for o in outs
                        if isinstance(o, torch.Tensor) and o.requires_grad)
            total.backward()
    finally:
        with backend._recorder_lock:
            backend._recorders.remove(records)
    return ExplainResult(records)
