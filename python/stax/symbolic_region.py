"""A region of a graph with symbolic sizes (issue 33): translated once, run at any size.

Dynamo hands a graph with symbolic sizes after a shape changed (automatic dynamic), or from
the start with `dynamic=True` / `mark_dynamic`. AOTAutograd traces it once and the bridge
translates each region once into a Stax graph with size symbols (symbolic_sizes.py), which
Stax compiles once: one program whose wrapper reads the symbols from the inputs' sizes
(SymbolicProgram). A new size costs a plan of its outputs' layouts (microseconds), and the
library primitives of its shapes at their first call, never a C++ compile.

Where a stage of Stax does not take the region's symbols yet (stax._C.SymbolicSizesRefused:
convolutions, pooling, scatters, ...), a call at new sizes binds the symbols to them and
compiles that static graph: a C++ compile per size, but no retrace, no partition and no
translation. The sizes compiled so per region are bounded like Dynamo's own recompiles
(`torch._dynamo.config.recompile_limit`); past the bound new sizes run the region in PyTorch,
with one warning. Every compile and every refusal is logged under "recompiles".
"""

from __future__ import annotations

import collections
import dataclasses
import re
import threading
import time
import warnings

import torch

from . import _C, aten_ops, debug
from .aten_ops import TextGraph
from .frozen_weights import FrozenWeights
from .layouts import at_hints, dense_order, same_layout
from .region import Region, _empty_strided, _Variant, compile_text, write_outputs_in_order
from .symbolic_sizes import SymbolFacts, Unsupported, _exact_quotients, dim_symbol

# How many sizes' output plans a symbolic program keeps (each a few hundred bytes; a decoder
# meets every length once, so older ones go first).
PLANS_KEPT = 64
# The one element every stand-in of a size expands (TextGraph.size_carriers).
_CARRIER = torch.zeros(1, dtype=torch.bool)


def _value_at(size, values: dict[str, int], derived=None) -> int:
    """A size at these values of Stax's symbols; `derived` maps the sizes given a symbol of
    their own (SymbolFacts.derived) to it."""
    if isinstance(size, int):
        return size
    expr = size.node.expr
    if derived:
        expr = _exact_quotients(expr).xreplace(derived)
    return int(expr.xreplace({s: values[str(s)] for s in expr.free_symbols}))


def _bound_layout(fake, values: dict[str, int], derived=None) -> torch.Tensor:
    """A meta tensor with `fake`'s layout at these sizes (what Region reads of a value)."""
    shape = [_value_at(s, values, derived) for s in fake.shape]
    stride = [_value_at(s, values, derived) for s in fake.stride()]
    return torch.empty_strided(shape, stride, dtype=fake.dtype, device="meta")


class _SizePlan:
    """A symbolic program at one call's sizes: the layouts its inputs must have, how its
    outputs are allocated and made (a _Variant over Compiled.layout_at), and the outputs it
    copies into PyTorch's layout afterwards."""

    __slots__ = ("sizes", "strides", "keys", "variant", "relayout")

    def __init__(self, inputs, variant, relayout):
        self.sizes = [torch.Size(s) for s, _ in inputs]
        self.strides = [tuple(t) for _, t in inputs]
        self.variant = variant
        self.relayout = relayout

    def accepts(self, sizes, strides) -> bool:
        """Whether inputs of these sizes and strides are read right: the sizes exactly, the
        strides as the wrapper checks them (layouts.same_layout)."""
        return sizes == self.sizes and all(
            same_layout(z, s, e) for z, s, e in zip(sizes, strides, self.strides))


class SymbolicProgram:
    """One compiled program of a region with size symbols, for every size (issue 33)."""

    def __init__(self, graph: TextGraph, options, freezing=None):
        self.name = graph.name
        self.options = options
        self.output_vals = list(graph.output_vals)
        self.derived = dict(graph.symbols.derived)
        hints = {name: hint for name, (_, _, hint) in graph.symbols.facts.items()}
        # Raises stax._C.SymbolicSizesRefused where a stage does not take the symbols yet.
        compiled = compile_text(graph.text(), graph.name, options, per_size_programs=False)
        # Outputs are handed over in the layout PyTorch gives them (region.py); one whose
        # Stax layout differs at the hints and is dense in some order is written so.
        outputs = compiled.layout_at(hints)[0]
        orders = {}
        for k, val in enumerate(self.output_vals):
            sizes, strides = _output_layout(val, hints, self.derived, outputs[k][3])
            if not same_layout(sizes, outputs[k][4], strides):
                orders[k] = dense_order(sizes, strides)
        laid = dataclasses.replace(graph, statements=list(graph.statements),
                                   origins=list(graph.origins), outputs=list(graph.outputs))
        if write_outputs_in_order(laid, orders):
            compiled = compile_text(laid.text(), graph.name, options, per_size_programs=False)
        self.text = laid.text()
        self.compiled = compiled
        self.frozen = (None if freezing is None
                       else FrozenWeights.for_program(compiled, freezing))
        sources = compiled.symbol_sources
        self.names = sorted(sources)
        self.sources = [sources[n] for n in self.names]
        self.plans: collections.OrderedDict = collections.OrderedDict()
        self.threads = options.threads
        self._lock = threading.Lock()

    def plan(self, key: tuple) -> _SizePlan:
        """The plan of the sizes whose symbols' values are `key` (in self.names' order)."""
        plan = self.plans.get(key)
        if plan is not None:
            return plan
        with self._lock:
            plan = self.plans.get(key)
            if plan is None:
                values = dict(zip(self.names, key))
                outputs, slot_bytes, inputs = self.compiled.layout_at(values)
                variant = _Variant(self.compiled, self.options.output_pool, None,
                                   layout=(outputs, slot_bytes))
                variant.label = f"stax::{self.name}"
                relayout = {}
                for k, (p, val) in enumerate(zip(variant.plans, self.output_vals)):
                    sizes, strides = _output_layout(val, values, self.derived, p.sizes)
                    if not same_layout(p.sizes, p.strides, strides):
                        relayout[k] = (tuple(sizes), tuple(strides))
                plan = _SizePlan(inputs, variant, relayout)
                if len(self.plans) >= PLANS_KEPT:
                    self.plans.popitem(last=False)
                self.plans[key] = plan
        return plan

    def run(self, tensors: list, given_up: list | None = None):
        """Runs on the region's tensors; None where they are laid out otherwise than the
        program reads them (the caller then takes another way). `given_up`: the caller's list
        of arguments, which it gives up (AOTAutograd's boxed convention): emptied before the
        run, which then drops each input after the program's last read of it (`tensors`, a
        list of the caller's own, is emptied too)."""
        sizes = [t.shape for t in tensors]
        key = tuple(sizes[k][d] // c for k, d, c in self.sources)
        plan = self.plan(key)
        strides = [t.stride() for t in tensors]
        if (sizes != plan.sizes or strides != plan.strides) and not plan.accepts(sizes, strides):
            return None
        threads = self.threads or torch.get_num_threads()
        if self.frozen is not None:
            self.frozen.check(tensors, threads)
        variant = plan.variant
        pointers = [t.data_ptr() for t in tensors]
        if given_up is not None and variant.outputs_are_slots and not plan.relayout:
            given_up.clear()
            return variant.run_into_slots(pointers, threads, tensors, (sizes, strides))
        slots = variant.run_into_slots(pointers, threads, None, (sizes, strides))
        outs = slots if variant.outputs_are_slots else variant.finish(tensors, slots)
        for k, (z, s) in plan.relayout.items():
            laid = _empty_strided(z, s, outs[k].dtype)
            laid.copy_(outs[k])
            outs[k] = laid
        return outs


def _layout_at(fake, values: dict[str, int], derived=None):
    """(sizes, strides) of a fake tensor's symbolic layout at these values of the symbols."""
    return (tuple(_value_at(s, values, derived) for s in fake.shape),
            tuple(_value_at(s, values, derived) for s in fake.stride()))


def _hint_layout(fake):
    """(sizes, strides) of a fake tensor at Dynamo's hints."""
    return at_hints(fake.shape), at_hints(fake.stride())


def _output_layout(fake, values: dict[str, int], derived, sizes):
    """The layout PyTorch gives an output at these values: its symbolic layout evaluated, or,
    where that reads a size Stax has no symbol for (a convolution's result inside the region,
    over a symbol only Dynamo has), the output's `sizes` (Stax's, at these values) laid out
    densely in the order PyTorch's layout has at the hints (outputs are dense in some order;
    the others are replayed views)."""
    try:
        return _layout_at(fake, values, derived)
    except KeyError:
        pass
    order = dense_order(*_hint_layout(fake))
    if order is None:
        raise Unsupported("an output's layout reads a size Stax has no symbol for")
    strides = [0] * len(sizes)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= int(sizes[d])
    return tuple(int(n) for n in sizes), tuple(strides)


class SymbolicRegion:
    """The Region interface (fast_call, boxed_call, compile) over a symbolic TextGraph."""

    def __init__(self, graph: TextGraph, options, freezing=None, reference=None):
        self.graph = graph
        self.name = graph.name
        self.options = options
        self.freezing = freezing
        self.reference = reference
        self.text = "" if graph.unspellable else graph.text()
        self.graph_returns_tuple = graph.returns_tuple
        identity = [("output", k, None) for k in range(len(graph.outputs))]
        self.num_returned = len(graph.returned or identity)
        # Which of the region's arguments are tensors (the others are sizes Dynamo passes as
        # ints, which the tensors' sizes give as well), and where each symbol is one dim.
        self.tensor_positions = list(graph.tensor_positions)
        # Numbers the region is given, each a 0-d tensor input (TextGraph.number_inputs).
        self.number_inputs = list(graph.number_inputs.items())
        # A dim of size c*s (the rows of a flattened [2, s] batch) gives s as well.
        self.symbol_dims = {}
        for k, (_, fake) in enumerate(graph.inputs):
            for d, size in enumerate(fake.shape):
                found = dim_symbol(size, graph.symbols.derived)
                if found is not None:
                    self.symbol_dims.setdefault(found[0], (k, d, found[1]))
        # A symbol no input dim gives: its stand-in input (TextGraph.size_carriers), last.
        self.carriers = [position for _, _, position in graph.size_carriers]
        for j, (_, symbol, _) in enumerate(graph.size_carriers):
            self.symbol_dims.setdefault(symbol, (len(graph.inputs) + j, 0, 1))
        missing = set(graph.symbols.facts) - set(self.symbol_dims)
        if missing and not graph.unspellable:
            raise Unsupported(f"size symbols {sorted(missing)} are no input's dim")
        self.instances: dict[tuple, Region] = {}
        # One program for every size (None until compiled, or where Stax refuses the
        # symbols: then `per_size_reason` says why and `instances` hold a program per size).
        self.program: SymbolicProgram | None = None
        self.per_size_reason: str | None = None
        self.returned = None if graph.returned in ([], identity) else graph.returned
        self.sizes_in_pytorch: set[tuple] = set()
        self.warned = False
        self._lock = threading.Lock()
        self.boxed_call = None
        self.fast_call = self.__call__
        # Whether Stax's shape rules take the graph with its symbols (ir/symbolic_shapes.h);
        # where an op has no symbolic rule yet, each size's graph is traced and translated
        # from the region as PyTorch runs it instead of bound from the symbolic text.
        self.symbolic_refused = graph.unspellable
        try:
            if self.symbolic_refused is None:
                _C.check_graph(self.text, self.name)
        except ValueError as e:
            self.symbolic_refused = str(e).splitlines()[0]
        if self.symbolic_refused is not None:
            debug.log(options, "recompiles",
                      f"stax: {self.name}: each size is traced again: {self.symbolic_refused}")

    def compile(self):
        """Compiles one program for every size; where Stax refuses the symbols, the graph at
        the sizes it was traced with (the symbols' hints). A graph traced again per size is
        compiled at its first call."""
        if self.symbolic_refused is not None:
            return self
        start = time.perf_counter()
        if self.graph.offset_guards:
            self.per_size_reason = "it reads an input's storage offset (as_strided)"
        else:
            try:
                self.program = SymbolicProgram(self.graph, self.options, self.freezing)
            except (_C.SymbolicSizesRefused, Unsupported) as e:
                self.per_size_reason = str(e).splitlines()[0]
        if self.program is not None:
            debug.log(self.options, "recompiles",
                      f"stax: {self.name}: one program for every size "
                      f"({self._facts()}) in {time.perf_counter() - start:.2f} s")
            call_boxed = self._call_boxed

            def boxed(args):
                return call_boxed(args)

            boxed._boxed_call = True
            boxed.unboxed = self.__call__
            self.boxed_call = boxed
            return self
        debug.log(self.options, "recompiles",
                  f"stax: {self.name}: compiled per size: {self.per_size_reason}")
        hints = {name: hint for name, (_, _, hint) in self.graph.symbols.facts.items()}
        self._instance(hints, None)
        return self

    @property
    def primary(self):
        """The compiled program for every size, or the compiled variant of the first sizes
        compiled (what debug logs and explain show); None before any."""
        if self.program is not None:
            return self.program
        first = next(iter(self.instances.values()), None)
        return first.primary if first is not None else None

    def _facts(self) -> str:
        return ", ".join(f"{n} in [{lo}, {hi}] (hint {hint})"
                         for n, (lo, hi, hint) in sorted(self.graph.symbols.facts.items()))

    def sizes_report(self) -> list:
        """stax.explain's and the fallback log's lines on this region's sizes: its symbols and
        what is known of them, the sizes run or compiled so far, those left to PyTorch."""
        if self.program is not None:
            run = "; ".join(_spelled(dict(zip(self.program.names, k)))
                            for k in list(self.program.plans))
            return [f"  region {self.name}: sizes known at run time, one program for every size "
                    f"({self._facts()})",
                    f"    sizes run so far (the last {PLANS_KEPT}): {run or 'none yet'}"]
        how = (f"traced again per size ({self.symbolic_refused})" if self.symbolic_refused
               else f"bound from one symbolic graph per size ({self._facts()}): "
                    f"{self.per_size_reason}")
        lines = [f"  region {self.name}: sizes known at run time, {how}"]
        compiled = "; ".join(_spelled(dict(k)) for k in self.instances)
        lines.append(f"    compiled for sizes: {compiled or 'none yet'}")
        if self.sizes_in_pytorch:
            left = "; ".join(_spelled(dict(k)) for k in sorted(self.sizes_in_pytorch))
            lines.append(f"    run in PyTorch: {left}")
        return lines

    def frozen_report(self) -> list:
        lines = [] if self.program is None or self.program.frozen is None else (
            self.program.frozen.report(self.name))
        return lines + [line for region in self.instances.values()
                        for line in region.frozen_report()]

    def _bound_graph(self, values: dict[str, int]) -> TextGraph:
        try:
            return self._bind(values)
        except KeyError as e:  # a layout over a symbol only Dynamo has
            raise Unsupported(f"a layout reads the size symbol {e} that no input gives") from e

    def _bind(self, values: dict[str, int]) -> TextGraph:
        def bind(statement: str) -> str:
            return re.sub(r"\bs[0-9]+\b",
                          lambda m: str(values[m.group(0)]) if m.group(0) in values else m.group(0),
                          statement)

        g = self.graph
        return dataclasses.replace(
            g,
            inputs=[(n, _bound_layout(v, values, g.symbols.derived)) for n, v in g.inputs],
            statements=[bind(s) for s in g.statements],
            origins=list(g.origins),
            outputs=list(g.outputs),
            offset_guards=dict(g.offset_guards),
            output_vals=[_bound_layout(v, values, g.symbols.derived) for v in g.output_vals],
            returned=list(g.returned),
            size_carriers=[],  # the sizes are numbers in a per-size graph
            symbols=SymbolFacts(),
        )

    def _traced_graph(self, args) -> TextGraph:
        """The region traced at these arguments' sizes and translated (static)."""
        from torch.fx.experimental.proxy_tensor import make_fx

        from . import partition

        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        traced = make_fx(self.reference, tracing_mode="fake")(*args)
        # The translation reads every node's value (its fake tensor).
        FakeTensorProp(traced, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*args)
        return partition.translate_region(traced, self.name, aten_ops.stax_op_params())

    def _instance(self, values: dict[str, int], args) -> Region:
        start = time.perf_counter()
        graph = self._bound_graph(values) if args is None else self._traced_graph(args)
        region = Region(graph, self.options, self.freezing)
        region.compile()
        key = tuple(sorted(values.items()))
        self.instances[key] = region
        limit = torch._dynamo.config.recompile_limit
        debug.log(self.options, "recompiles",
                  f"stax: {self.name}: compiled for sizes {_spelled(values)} in "
                  f"{time.perf_counter() - start:.2f} s ({len(self.instances)} of at most {limit})")
        return region

    def _sizes(self, tensors) -> dict[str, int]:
        """The symbols' values; for a region traced per size, its inputs' sizes by position
        (what a trace specializes on)."""
        if self.symbolic_refused is not None:
            return {f"input{k}": tuple(t.shape) for k, t in enumerate(tensors)}
        return {name: int(tensors[k].shape[d]) // c for name, (k, d, c) in self.symbol_dims.items()}

    def _returned(self, outs, args):
        """The region's results: its outputs, or region arguments it returns, each through the
        view ops replayed on it where eager's result is such a view (view_outputs.py)."""
        if self.returned is None:
            return outs
        results = []
        for where, k, replay in self.returned:
            value = (outs if where == "output" else args)[k]
            results.append(value if replay is None else replay(value, args))
        return results

    def _tensors(self, args) -> list:
        """The program's inputs: the region's tensors, then a stand-in of each size no input
        dim gives (size, stride 0: no memory of its own)."""
        tensors = [args[i] for i in self.tensor_positions]
        for position in self.carriers:
            tensors.append(_CARRIER.expand(int(args[position])))
        return tensors

    def _call_boxed(self, args: list):
        """AOTAutograd's boxed call (the list of arguments is ours): the program drops each
        input after its last read of it, as a static region's boxed call does."""
        self._numbers_as_tensors(args)
        tensors = self._tensors(args)
        if self.returned is None:
            outs = self.program.run(tensors, given_up=args)
            if outs is not None:
                args.clear()
                return outs
        outs = self.__call__(*args)
        args.clear()
        return outs

    def _numbers_as_tensors(self, args: list) -> None:
        """The numbers among `args` (TextGraph.number_inputs) as the 0-d tensors the program
        takes, in place; one converted already is left as it is."""
        for p, dtype in self.number_inputs:
            if not isinstance(args[p], torch.Tensor):
                args[p] = torch.tensor(args[p], dtype=dtype)

    def __call__(self, *args):
        if self.number_inputs:
            args = list(args)
            self._numbers_as_tensors(args)
        tensors = self._tensors(args)
        if self.program is not None:
            outs = self.program.run(tensors)
            if outs is not None:
                return self._returned(outs, args)
            # Laid out otherwise than the program reads them: the size's own program.
        values = self._sizes(tensors)
        region = self.instances.get(tuple(sorted(values.items())))
        if region is None:
            with self._lock:
                region = self.instances.get(tuple(sorted(values.items())))
                if region is None:
                    region = self._new_sizes(values, args)
        if region is None:
            outs = self.reference(*args)
            return list(outs) if isinstance(outs, (list, tuple)) else [outs]
        return region.fast_call(*args)  # the region picks its tensors (Region.compile)

    def _new_sizes(self, values: dict[str, int], args) -> Region | None:
        limit = torch._dynamo.config.recompile_limit
        key = tuple(sorted(values.items()))
        if len(self.instances) < limit and key not in self.sizes_in_pytorch:
            try:
                return self._instance(values, None if self.symbolic_refused is None else args)
            except (ValueError, RuntimeError, Unsupported) as e:
                # Stax refuses the graph at these sizes: they run in PyTorch, as a refused
                # region of a static graph does.
                self.sizes_in_pytorch.add(key)
                debug.log(self.options, "fallback",
                          f"stax: {self.name}: sizes {_spelled(values)} run in PyTorch: "
                          f"{str(e).splitlines()[0]}")
                return None
        if key in self.sizes_in_pytorch and len(self.instances) < limit:
            return None  # sizes Stax refused (logged under "fallback" when first met)
        if key not in self.sizes_in_pytorch:
            self.sizes_in_pytorch.add(key)
            debug.log(self.options, "recompiles",
                      f"stax: {self.name}: sizes {_spelled(values)} run in PyTorch: "
                      f"{len(self.instances)} sizes compiled, the recompile limit "
                      f"(torch._dynamo.config.recompile_limit = {limit})")
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"stax: a region with symbolic sizes met more than {limit} sizes "
                "(torch._dynamo.config.recompile_limit); further sizes run in PyTorch. Stax "
                "compiles such regions per size for now: pad or bucket the sizes, or raise "
                "the limit.", stacklevel=4)
        return None


def _spelled(values: dict) -> str:
    def order(kv):
        digits = "".join(c for c in kv[0] if c.isdigit())
        return (kv[0].rstrip("0123456789"), int(digits or 0))

    return ", ".join(f"{k}={list(v) if isinstance(v, tuple) else v}"
                     for k, v in sorted(values.items(), key=order))
