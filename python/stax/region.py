"""A compiled Stax region: the callable that replaces a partition of the FX graph.

Per call it checks the layout of each input against the one compiled for (a different
layout compiles another variant; nothing is ever read with the wrong strides), allocates
the output slots as ordinary PyTorch tensors, handed over without a copy (large ones from
Stax's output pool, whose pages stay mapped across calls; the rest from PyTorch), and runs
the generated code on the tensors' memory in place, with the thread count PyTorch has at
that moment (`torch.get_num_threads()`). Each output comes in the layout
PyTorch gives its value (layouts.py): Stax writes it so when that layout is dense in some
order; a view with gaps or overlaps is replayed on its storage root (view_outputs.py). With
freeze_parameters, each call first checks the convolution weights packed once
(frozen_weights.py) and packs again those that changed.
"""

from __future__ import annotations

import functools
import threading

import torch

from . import _C
from .aten_ops import STAX_DTYPES, TORCH_DTYPES, TextGraph
from .frozen_weights import FrozenWeights
from .layouts import dense_order, layout_key, same_layout


class _OutputPlan:
    """How output k is made after a run, decided once per compiled variant."""

    __slots__ = ("kind", "index", "sizes", "strides", "offset", "dtype")

    def __init__(self, binding, slot_is_whole_output: bool):
        from_input, index, dtype, sizes, strides, offset = binding
        self.index = index
        self.sizes = tuple(sizes)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = TORCH_DTYPES[dtype]
        if from_input:
            self.kind = "input_view"
        elif slot_is_whole_output:
            self.kind = "slot_tensor"  # the slot itself is allocated as this tensor
        else:
            self.kind = "slot_view"


class _Variant:
    """One compilation of a region for one input layout; or, for a program over size symbols
    (symbolic_region.py), that program at one call's sizes: `layout` is then
    (outputs, output_slot_bytes) as Compiled.layout_at gives them at the symbols' values."""

    def __init__(self, compiled, output_pool=True, freezing=None, layout=None):
        self.compiled = compiled
        self.run = compiled.run
        # freeze_parameters: the packed convolution weights and their per-call check.
        self.frozen = None if freezing is None else FrozenWeights.for_program(compiled, freezing)
        bindings, slot_bytes = layout or (compiled.outputs, compiled.output_slot_bytes)
        users = [0] * len(slot_bytes)
        for b in bindings:
            if not b[0]:
                users[b[1]] += 1
        self.plans = []
        self.slot_tensor_plan = [None] * len(slot_bytes)
        for b in bindings:
            from_input, index, dtype, sizes, strides, offset = b
            whole = False
            if not from_input and users[index] == 1 and offset == 0:
                t = torch.empty_strided(sizes, strides, dtype=TORCH_DTYPES[dtype], device="meta")
                extent = t.untyped_storage().nbytes()
                whole = extent >= slot_bytes[index] and _is_64_aligned_allocation(extent)
            plan = _OutputPlan(b, whole)
            self.plans.append(plan)
            if plan.kind == "slot_tensor":
                self.slot_tensor_plan[index] = plan
        self.slot_bytes = list(slot_bytes)
        # Zero-argument allocators, one per slot: the slot as its output tensor, or raw bytes
        # (at least 64, so that even an empty slot has an address) under several outputs.
        # A pooled slot is not allocated before the run: the program takes it from Stax's pool
        # when it first writes it (run_pooled), so a backward graph's gradients take memory as
        # the activations it reads are released (issue 32, point 4); pooled_layouts[k] is its
        # (sizes, strides, dtype) then, None for a slot allocated here.
        self.allocators = []
        self.pooled = [False] * len(slot_bytes)
        self.pooled_layouts = [None] * len(slot_bytes)
        for k, nbytes in enumerate(slot_bytes):
            plan = self.slot_tensor_plan[k]
            if output_pool and nbytes >= POOLED_OUTPUT_BYTES and plan is None:
                # A slot several outputs view (or one at an offset): its bytes, from the pool
                # too, so that the pool's cached memory serves them rather than sitting beside
                # fresh pages of PyTorch's allocator (LLaMA's training step: 17 MiB of such
                # slots per step, process peak 889 -> 879 MiB).
                self.pooled[k] = True
                self.pooled_layouts[k] = ([nbytes], [1], STAX_DTYPES[torch.uint8])
                self.allocators.append(None)
            elif (output_pool and plan is not None and nbytes >= POOLED_OUTPUT_BYTES
                    and plan.dtype != torch.bool):
                self.pooled[k] = True
                self.pooled_layouts[k] = (list(plan.sizes), list(plan.strides),
                                          STAX_DTYPES[plan.dtype])
                self.allocators.append(None)
            elif plan is not None:
                self.allocators.append(functools.partial(
                    _empty_strided, plan.sizes, plan.strides, plan.dtype))
            else:
                self.allocators.append(functools.partial(
                    torch.empty, max(nbytes, 64), dtype=torch.uint8))
        # The common case: output k is slot k, allocated as itself.
        self.outputs_are_slots = len(self.plans) == len(slot_bytes) and all(
            p.kind == "slot_tensor" and p.index == k for k, p in enumerate(self.plans))

    # The name torch.profiler's traces give the region's runs (issue 34, point 4).
    label = "stax::region"

    def run_into_slots(self, pointers, threads, owners=None, shapes=None):
        """Runs on the input pointers; returns the slots: tensors allocated here, and the
        pooled ones the program took from the pool. `owners` (the inputs, given up) is
        emptied and each input dropped after the program's last read of it. `shapes`: the
        inputs' (sizes, strides), for a program over size symbols."""
        if profiling():
            with record_function(self.label):
                _C.trace_library_calls(True)
                try:
                    return self._run_into_slots(pointers, threads, owners, shapes)
                finally:
                    _C.trace_library_calls(False)
        return self._run_into_slots(pointers, threads, owners, shapes)

    def _run_into_slots(self, pointers, threads, owners, shapes):
        slots = [None if allocate is None else allocate() for allocate in self.allocators]
        if shapes is not None:
            capsules = self.compiled.run_pooled(
                owners, pointers, [0 if t is None else t.data_ptr() for t in slots],
                self.pooled_layouts, threads, shapes[0], shapes[1])
            for k, capsule in enumerate(capsules):
                if capsule is not None:
                    slots[k] = torch.from_dlpack(capsule)
            return slots
        if not any(self.pooled):
            if owners is None:
                self.run(pointers, [t.data_ptr() for t in slots], threads)
            else:
                self.compiled.run_releasing(owners, pointers, [t.data_ptr() for t in slots],
                                            threads)
            return slots
        capsules = self.compiled.run_pooled(
            owners, pointers, [0 if t is None else t.data_ptr() for t in slots],
            self.pooled_layouts, threads)
        for k, capsule in enumerate(capsules):
            if capsule is not None:
                slots[k] = torch.from_dlpack(capsule)
        return slots

    def finish(self, args, slots):
        outs = []
        for plan in self.plans:
            kind = plan.kind
            if kind == "slot_tensor":
                outs.append(slots[plan.index])
            elif kind == "input_view":
                base = args[plan.index]
                if (plan.sizes == base.shape and plan.strides == base.stride()
                        and plan.offset == 0):
                    outs.append(base)  # the input itself, as eager returns it
                else:
                    outs.append(base.as_strided(plan.sizes, plan.strides,
                                                base.storage_offset() + plan.offset))
            else:
                buf = slots[plan.index].view(plan.dtype)
                outs.append(buf.as_strided(plan.sizes, plan.strides, plan.offset))
        return outs


# Whether torch.profiler is recording (the check its own record_function makes: a C++ call,
# no Python frames), and the range a region's run is recorded as; inside it, each library
# call gets a range of its own (_C.trace_library_calls).
profiling = getattr(getattr(torch._C, "_autograd", None), "_profiler_enabled", lambda: False)
record_function = torch.profiler.record_function


def _profiled(line: str) -> list:
    """The generated call's run line, inside a record_function range while profiling."""
    body = line.strip()
    return ["    if profiling():", "        with record_function(label):",
            "            trace_library_calls(True)", "            try:",
            f"                {body}", "            finally:",
            "                trace_library_calls(False)", "    else:", f"        {body}"]


def _is_64_aligned_allocation(nbytes: int) -> bool:
    # PyTorch's CPU allocator returns 64-byte aligned memory for any non-empty allocation.
    return nbytes > 0


def _dispatching_empty_strided(sizes, strides, dtype):
    return torch.empty_strided(sizes, strides, dtype=dtype)


# PyTorch's allocation of a CPU tensor without the operator dispatcher (what the default
# backend's generated wrappers use; half the cost of torch.empty_strided on a small tensor).
_empty_strided = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
_empty_strided = getattr(_empty_strided, "_empty_strided_cpu", _dispatching_empty_strided)


# Outputs of at least this many bytes come from Stax's output pool (src/bindings/output_pool.h)
# instead of PyTorch's allocator, which gives a large tensor fresh pages on every call: at a
# fault per 4 KiB page, 1 MiB costs some 100 us of faults against a few us for the pool's
# DLPack hand-over. 64 KiB, the pool's own smallest piece (runtime/block_pool.h): with 1 MiB,
# a training step's activations below it (T5 and BERT at batch 2: 22 of 768 KiB) came from
# PyTorch's allocator while the pool's cached memory sat beside them (T5's step peaked at
# 745 MiB, 729 from the pool, the default backend 720).
POOLED_OUTPUT_BYTES = 1 << 16


class Region:
    """A Stax region of an FX graph, callable on PyTorch tensors."""

    def __init__(self, graph: TextGraph, options, freezing=None):
        self.graph = graph
        self.name = graph.name
        self.options = options
        # freeze_parameters (frozen_weights.py): None when the option is off.
        self.freezing = freezing
        self.text = graph.text()
        self.graph_returns_tuple = graph.returns_tuple
        self.input_layouts = tuple(
            (tuple(v.shape), tuple(v.stride())) for _, v in graph.inputs
        )
        self.input_dtypes = tuple(v.dtype for _, v in graph.inputs)
        self._variants: dict = {}
        self._lock = threading.Lock()
        self.primary = None
        self.threads = options.threads
        # Inputs whose storage offset the text depends on (as_strided): position -> offset.
        names = [n for n, _ in graph.inputs]
        self.offset_guards = {names.index(n): o for n, o in graph.offset_guards.items()}
        # What the region returns (TextGraph.returned); None when it is the outputs as they
        # are, in order.
        identity = [("output", k, None) for k in range(len(graph.outputs))]
        self.returned = None if graph.returned in ([], identity) else graph.returned
        self.num_returned = len(graph.returned or identity)

    # Compiling is separate from construction so that the backend can compile every region
    # of a graph concurrently (the C++ side releases the GIL).
    def compile(self):
        self.primary = self._compile_variant(self.input_layouts, self.text)
        if self._request_expected_layouts():
            self.text = self.graph.text()
            self.primary = self._compile_variant(self.input_layouts, self.text)
        self._variants[_layouts_key(self.input_layouts)] = self.primary
        self.relayout = self.primary.relayout = self._outputs_to_relayout(self.primary)
        self.fast_call, self.boxed_call = self._straight_line_call()
        positions = list(self.graph.tensor_positions)
        if self.graph.num_args and positions != list(range(self.graph.num_args)):
            # Dynamo also hands the region sizes it specialized to constants (ints the graph
            # spells as literals): the program takes the tensors only.
            tensors_call = self.fast_call
            self.fast_call = lambda *args: tensors_call(*[args[i] for i in positions])
            self.boxed_call = None
        return self

    def _mismatched_outputs(self, variant):
        out = []
        for k, (plan, val) in enumerate(zip(variant.plans, self.graph.output_vals)):
            if not same_layout(plan.sizes, plan.strides, tuple(val.stride())):
                out.append(k)
        return out

    def _request_expected_layouts(self) -> bool:
        """Outputs whose Stax layout differs from the one PyTorch gives the value are written
        in PyTorch's (write_outputs_in_order). Returns whether the graph text changed."""
        orders = {}
        for k in self._mismatched_outputs(self.primary):
            val = self.graph.output_vals[k]
            orders[k] = dense_order(tuple(val.shape), tuple(val.stride()))
        return write_outputs_in_order(self.graph, orders)

    def _outputs_to_relayout(self, variant):
        """Outputs still in another layout than PyTorch's (not dense in any order, and not a
        view, which partition.py replays instead): copied into PyTorch's layout after the run.
        The copy can be made: partition.py refuses such an output whose layout may overlap."""
        return {k: (tuple(self.graph.output_vals[k].shape),
                    tuple(self.graph.output_vals[k].stride()))
                for k in self._mismatched_outputs(variant)}

    def _straight_line_call(self):
        """The per-call path of the compiled layout as straight-line Python, generated once
        (as a wrapper module would be): layout checks, one allocation per output, the run.
        Anything unusual (another layout, outputs that are views) takes __call__."""
        v = self.primary
        if not v.outputs_are_slots or self.offset_guards or self.relayout or self.returned:
            return self.__call__, None
        n = len(self.input_layouts)
        params = ", ".join(f"a{i}" for i in range(n))
        env = {"general": self.__call__, "profiling": profiling,
               "record_function": record_function, "label": v.label,
               "trace_library_calls": _C.trace_library_calls,
               "run": v.run, "run_releasing": v.compiled.run_releasing,
               "run_pooled": v.compiled.run_pooled, "from_dlpack": torch.from_dlpack,
               "layouts": v.pooled_layouts, "empty_strided": _empty_strided,
               "threads": self.threads, "get_num_threads": torch.get_num_threads,
               "frozen": v.frozen}
        checks, allocations, pooled = [], [], []
        for i, (sizes, strides) in enumerate(self.input_layouts):
            env[f"S{i}"], env[f"Z{i}"] = strides, torch.Size(sizes)
            checks.append(f"    if a{i}.stride() != S{i} or a{i}.shape != Z{i}:")
            checks.append(f"        return general({params})")
        checks.append("    nt = threads or get_num_threads()")
        if v.frozen is not None:
            # Packed weights that are not the ones passed, unchanged, are packed again first.
            checks.append(f"    frozen.check(({params}{',' if n == 1 else ''}), nt)")
        for k, plan in enumerate(v.plans):
            if v.pooled[k]:
                pooled.append(f"    o{k} = from_dlpack(c[{k}])")
                continue
            env[f"D{k}"], env[f"OZ{k}"], env[f"OS{k}"] = plan.dtype, plan.sizes, plan.strides
            allocations.append(f"    o{k} = empty_strided(OZ{k}, OS{k}, D{k})")
        outs = ", ".join(f"o{k}" for k in range(len(v.plans)))
        ins = ", ".join(f"a{i}.data_ptr()" for i in range(n))
        ptrs = ", ".join("0" if v.pooled[k] else f"o{k}.data_ptr()" for k in range(len(v.plans)))
        if pooled:
            run = f"    c = run_pooled(None, [{ins}], [{ptrs}], layouts, nt)"
            run_releasing = f"    c = run_pooled(owners, ins, [{ptrs}], layouts, nt)"
        else:
            run = f"    run([{ins}], [{ptrs}], nt)"
            run_releasing = f"    run_releasing(owners, ins, [{ptrs}], nt)"
        lines = [f"def call({params}):", *checks, *allocations, *_profiled(run), *pooled,
                 f"    return [{outs}]"]
        # AOTAutograd's boxed convention (issue 16, point 5): the list of arguments is ours.
        # The inputs move into the run, which drops each after the program's last read of it,
        # so what no one else holds (a backward graph's saved activations) is freed as the
        # program goes, not when it returns.
        unpack = f"    {params}, = args" if n else "    pass"
        released = f"    {params} = {', '.join(['None'] * n)}" if n else "    pass"
        lines += ["", "def call_boxed(args):", unpack,
                  *[c.replace(f"general({params})", "general(*args)") for c in checks],
                  "    args.clear()", *allocations,
                  f"    owners = [{params}]", f"    ins = [{ins}]", released,
                  *_profiled(run_releasing), *pooled,
                  f"    return [{outs}]"]
        exec(compile("\n".join(lines), f"<stax region {self.name}>", "exec"), env)
        boxed = env["call_boxed"]
        boxed._boxed_call = True
        boxed.unboxed = env["call"]  # for callers that pass the arguments themselves
        return env["call"], boxed

    def _compile_variant(self, layouts, text):
        compiled = compile_text(text, self.name, self.options)
        variant = _Variant(compiled, self.options.output_pool, self.freezing)
        variant.label = f"stax::{self.name}"
        return variant

    def _variant_for(self, args):
        layouts = tuple((tuple(a.shape), tuple(a.stride())) for a in args)
        key = _layouts_key(layouts)
        variant = self._variants.get(key)
        if variant is None:
            with self._lock:
                variant = self._variants.get(key)
                if variant is None:
                    relaid = TextGraph(self.name)
                    relaid.inputs = [(n, a) for (n, _), a in zip(self.graph.inputs, args)]
                    relaid.statements = self.graph.statements
                    relaid.outputs = self.graph.outputs
                    variant = self._compile_variant(layouts, relaid.text())
                    variant.relayout = self._outputs_to_relayout(variant)
                    self._variants[key] = variant
        return variant

    def __call__(self, *args):
        for i, offset in self.offset_guards.items():
            if args[i].storage_offset() != offset:
                raise RuntimeError(
                    f"stax: region {self.name} was compiled for input {i} at storage offset "
                    f"{offset}, called with {args[i].storage_offset()}")
        variant = self.primary
        for a, (sizes, strides) in zip(args, self.input_layouts):
            if a.stride() != strides or a.shape != sizes:
                variant = self._variant_for(args)
                break
        threads = self.threads or torch.get_num_threads()
        if variant.frozen is not None:
            variant.frozen.check(args, threads)
        slots = variant.run_into_slots([a.data_ptr() for a in args], threads)
        outs = slots if variant.outputs_are_slots else variant.finish(args, slots)
        for k, (sizes, strides) in variant.relayout.items():
            laid = _empty_strided(sizes, strides, outs[k].dtype)
            laid.copy_(outs[k])
            outs[k] = laid
        if self.returned is not None:
            outs = [(outs if where == "output" else args)[k] if replay is None
                    else replay((outs if where == "output" else args)[k], args)
                    for where, k, replay in self.returned]
        return outs


    def sizes_report(self) -> list:
        """A static region's sizes need no report (SymbolicRegion's has one)."""
        return []

    def frozen_report(self) -> list:
        """stax.explain's lines on packed weights, per compiled variant (freeze_parameters)."""
        variants = [self.primary] + [v for v in self._variants.values() if v is not self.primary]
        return [line for v in variants if v is not None and v.frozen is not None
                for line in v.frozen.report(self.name)]


def _analysis_wanted(o) -> bool:
    """Whether anything will read a program's analysis (explain, the generated source, the
    kernel IR, freeze_parameters' weight sites); else it is freed once the program is loaded
    (a few MiB per training graph)."""
    from . import backend

    return bool(o.debug_dir or o.record_ir or o.freeze_parameters
                or {"fusion", "schedule", "ir", "output_code"} & set(o.logs)
                or backend._recorders)


def compile_text(text: str, name: str, o, per_size_programs: bool = True):
    """A region's graph text compiled with the backend's options `o`."""
    return _C.compile(
        text,
        name,
        num_threads=o.threads or torch.get_num_threads(),
        simd=o.simd,
        cache_dir=o.cache_dir,
        record_ir=o.record_ir,
        graph_passes=o.graph_passes,
        channels_last_intermediates=o.channels_last_intermediates,
        measure_matmul_weights=o.measure_matmul_weights,
        matmul_blas=o.matmul_blas,
        keep_analysis=_analysis_wanted(o),
        logs=o.cpp_logs,
        # Large outputs come from the pool and intermediates from the arena, both mapped
        # after the first call: where streaming stores pay (streaming_stores.cpp).
        outputs_in_mapped_memory=o.output_pool and o.streaming_stores,
        per_size_programs=per_size_programs,
    )


def write_outputs_in_order(graph: TextGraph, orders: dict) -> bool:
    """Outputs whose Stax layout differs from the one PyTorch gives the value (which the
    PyTorch code after the region may depend on: a view, a kernel that assumes it) and is
    dense in some dimension order are written in that order: permute, copy, permute back.
    `orders`: output position -> that order (None: dense in none, left as it is). Returns
    whether the graph text changed."""
    changed = False
    for k, order in orders.items():
        if order is None:
            continue
        inverse = [order.index(d) for d in range(len(order))]
        name = graph.outputs[k]
        p = graph.fresh(name + "_order")
        c, r = graph.fresh(name + "_dense"), graph.fresh(name + "_laid")
        graph.emit(p, "permute", [name, str(list(order))], "layout")
        graph.emit(c, "clone", [p, 'memory_format="contiguous_format"'], "layout")
        graph.emit(r, "permute", [c, str(inverse)], "layout")
        graph.outputs[k] = r
        changed = True
    return changed


def _layouts_key(layouts) -> tuple:
    # Layouts that Stax's wrapper accepts alike share one compiled variant.
    return tuple(layout_key(sizes, strides) for sizes, strides in layouts)
