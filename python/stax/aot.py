"""Ahead-of-time packages (issue 34, point 1): `stax.aot_compile` exports a model, compiles
it into one Stax program and writes a package (src/package/package.h) that `stax.load` here,
`stax::Package::load` in C++ and `stax run PKG` load without compiling, Python or libtorch.

    stax.aot_compile(model, (input_ids,), "bert.staxpkg",
                     dynamic_shapes={"input_ids": {1: torch.export.Dim("seq", max=512)}})
    run = stax.load("bert.staxpkg")
    outputs = run(input_ids)  # a tuple of tensors: the model's outputs, flattened

The model is captured by `torch.export` (or given as an ExportedProgram), decomposed with the
table torch.compile's Stax backend uses, and must become one Stax program as a whole: an op
Stax does not run, or a graph that mutates a buffer, is refused naming it (a package runs
without PyTorch, so nothing can fall back). Parameters and buffers are kept in the package
(weights=True) and bound to their inputs, so that callers pass only the model's inputs.
"""

from __future__ import annotations

import operator
import os
from collections import OrderedDict

import torch

from . import _C, aten_ops
from .aten_ops import STAX_DTYPES, TORCH_DTYPES
from .options import Options
from .partition import partition, translate_region
from .region import _Variant, compile_text
from .size_hoisting import hoist_size_reads

PackageError = _C.PackageError


def _exported(model_or_fn, example_inputs, dynamic_shapes, strict):
    from torch.export import ExportedProgram

    if isinstance(model_or_fn, ExportedProgram):
        return model_or_fn
    if not isinstance(model_or_fn, torch.nn.Module):
        fn = model_or_fn

        class _Fn(torch.nn.Module):
            def forward(self, *args):
                return fn(*args)

        model_or_fn = _Fn()
    return torch.export.export(model_or_fn, tuple(example_inputs),
                               dynamic_shapes=dynamic_shapes, strict=strict)


def _drop_runtime_asserts(gm) -> None:
    """torch.export keeps its checks of dtypes and of the size symbols' ranges as nodes; the
    package checks every input's dtype, sizes and strides, and the symbols' facts, itself."""
    asserts = {torch.ops.aten._assert_tensor_metadata.default,
               torch.ops.aten._assert_scalar.default,
               torch.ops.aten.sym_constrain_range_for_size.default}
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in asserts and not node.users:
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    gm.recompile()


def _one_region(fused, region_names, reasons):
    """The call of the one Stax region that computes every tensor of the partitioned graph;
    PackageError naming the nodes left to PyTorch otherwise. Nodes outside it may only read
    sizes (sym_size and arithmetic on them: the region spells those over its size
    symbols)."""
    problems = []
    calls = [n for n in fused.graph.nodes if n.op == "call_module" and n.target in region_names]
    for node in fused.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if isinstance(node.meta.get("val"), (torch.SymInt, int, torch.SymFloat, float)):
            if isinstance(node.meta.get("val"), (torch.SymFloat, float)):
                problems.append(f"{node.name} ({node.target}): a number computed from sizes")
            continue
        problems.append(f"{node.name} ({node.target}): {reasons.get(node.name, 'not supported')}")
    if problems:
        raise PackageError("aot_compile: a package is one Stax program, and Stax does not run "
                           + "; ".join(problems[:8])
                           + (f"; and {len(problems) - 8} more" if len(problems) > 8 else ""))
    if len(calls) != 1:
        raise PackageError(f"aot_compile: the program splits into {len(calls)} Stax regions "
                           "(a package holds one)")
    return calls[0]


def aot_compile(model_or_fn, example_inputs, path, *, dynamic_shapes=None, weights=True,
                options=None, strict=False, metadata=None) -> str:
    """Exports `model_or_fn` (an nn.Module, a function, or a torch.export ExportedProgram)
    at `example_inputs`, compiles it into one Stax program and writes the package to `path`.

    dynamic_shapes: as torch.export takes it (torch.export.Dim per dim); those dims become
    Stax's size symbols, one program for every size their ranges allow. weights: keep the
    parameters and buffers in the package (safetensors), bound to their inputs; False makes
    them inputs the caller passes, after the model's own, in the exported program's order.
    options: the torch.compile backend's options that apply to compiling (threads, simd,
    cache_dir, ...). Returns `path`. Raises PackageError when the program cannot be packaged
    (an op Stax does not run, a mutated buffer, an output that is a view PyTorch would have
    to remake) and torch.export's errors as they are."""
    opts = Options.parse(options)
    ep = _exported(model_or_fn, example_inputs, dynamic_shapes, strict)
    from .backend import decompositions

    ep = ep.run_decompositions(decompositions())
    gm = ep.graph_module
    signature = ep.graph_signature
    from torch.export.graph_signature import InputKind, OutputKind

    mutated = [s for s in signature.output_specs
               if s.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION)]
    if mutated:
        raise PackageError(
            "aot_compile: the exported program writes "
            + ", ".join(f"{s.target or s.arg.name} ({s.kind.name.lower()})" for s in mutated)
            + "; a package runs a function without state: export the model in eval mode")
    stax_ops = aten_ops.stax_op_params()
    _drop_runtime_asserts(gm)
    hoist_size_reads(gm)
    fused, region_names, reasons = partition(gm, stax_ops)
    call = _one_region(fused, region_names, reasons)
    name = "aot_" + "".join(c if c.isalnum() else "_" for c in type(model_or_fn).__name__)
    text_graph = translate_region(getattr(fused, call.target), name, stax_ops)
    if text_graph.unspellable or text_graph.number_inputs or text_graph.size_carriers:
        raise PackageError("aot_compile: the program needs numbers computed from sizes at each "
                           f"call ({text_graph.unspellable or 'a size no input gives'}), which "
                           "only the Python bridge makes")
    if text_graph.offset_guards:
        raise PackageError("aot_compile: the program reads inputs at storage offsets it guards "
                           f"({', '.join(text_graph.offset_guards)})")
    identity = [("output", k, None) for k in range(len(text_graph.outputs))]
    if text_graph.returned not in ([], identity):
        raise PackageError("aot_compile: an output is an input or a view that PyTorch remakes "
                           "after the program; return computed tensors")
    _check_outputs(fused, call, text_graph)

    # The region's tensor arguments are the exported program's inputs (each a parameter,
    # buffer, constant or user input); its other arguments are sizes it spells itself.
    positions = text_graph.tensor_positions if text_graph.num_args else range(len(call.args))
    tensor_args = [call.args[i] for i in positions]
    if any(getattr(a, "op", None) != "placeholder" for a in tensor_args):
        raise PackageError("aot_compile: the program reads a tensor computed outside it")
    # The partitioned graph keeps the placeholders in order, not always their names (FX
    # renames one called like a builtin, `input`): matched by position.
    placeholders = [p for p in fused.graph.nodes if p.op == "placeholder"]
    if len(placeholders) != len(signature.input_specs):
        raise PackageError("aot_compile: the exported program's inputs do not match its "
                           "signature")
    kinds = {p.name: s for p, s in zip(placeholders, signature.input_specs)}
    unread = [kinds[p.name].arg.name for p in placeholders
              if kinds[p.name].kind == InputKind.USER_INPUT and p not in tensor_args]
    if unread:
        raise PackageError(f"aot_compile: the program never reads input(s) {', '.join(unread)}; "
                           "export a function without them")
    # The region takes its inputs in the order the partitioner chose: the package takes the
    # model's inputs first, in the exported order, then its weights.
    region_inputs = dict(zip(tensor_args, text_graph.inputs))
    exported = [p for p in fused.graph.nodes if p.op == "placeholder" and p in region_inputs]
    users = [p for p in exported if kinds[p.name].kind == InputKind.USER_INPUT]
    ordered = users + [p for p in exported if p not in users]
    text_graph.inputs = [region_inputs[p] for p in ordered]
    text = text_graph.text()
    compiled = compile_text(text, name, opts, per_size_programs=False)

    state = dict(ep.state_dict)
    state.update(getattr(ep, "constants", {}) or {})
    packed = []
    keep_alive = []  # the contiguous copies, alive until the package is written
    for node, (stax_name, _) in zip(ordered, text_graph.inputs):
        spec = kinds[node.name]
        if spec.kind == InputKind.USER_INPUT or not weights:
            continue
        value = state[spec.target].detach().contiguous()
        keep_alive.append(value)
        packed.append((stax_name, spec.target, value.data_ptr(), STAX_DTYPES[value.dtype],
                       list(value.shape)))
    meta = {"exporter": "stax.aot_compile", "torch": torch.__version__}
    meta.update(metadata or {})
    _C.save_package(compiled, text, name, os.fspath(path), packed, meta)
    return os.fspath(path)


def _check_outputs(fused, call, text_graph) -> None:
    """The model's outputs must be the region's, in order: a package returns the program's."""
    outputs = next(n for n in fused.graph.nodes if n.op == "output").args[0]
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    expected = ([call] if len(outputs) == 1 and not text_graph.returns_tuple else
                [("item", k) for k in range(len(outputs))])
    got = [call if o is call else ("item", o.args[1]) if (
        getattr(o, "target", None) is operator.getitem and o.args[0] is call) else o
        for o in outputs]
    if got != expected:
        raise PackageError("aot_compile: the model's outputs are not the program's outputs "
                           "in order (an output computed outside it, repeated or reordered)")


class LoadedPackage:
    """A package loaded for PyTorch tensors: call it with the model's inputs (CPU tensors of
    the exported dtypes; any sizes the package's size symbols allow); it returns the outputs
    as a tuple (one tensor alone for a single output). `threads`: of every kernel (None:
    torch.get_num_threads() at each call)."""

    def __init__(self, path, *, threads: int | None = None, measure_matmul_weights=True,
                 cache_dir=""):
        self.path = os.fspath(path)
        self._package = _C.load_package(self.path, measure_matmul_weights=measure_matmul_weights,
                                        cache_dir=cache_dir)
        self.program = self._package.program
        self.metadata = dict(self._package.metadata)
        self._types = [(name, TORCH_DTYPES[dtype], tuple(sizes), tuple(strides))
                       for name, dtype, sizes, strides in self.program.inputs]
        # Bool weights come over DLPack as uint8 (its older versions have no bool).
        self._weights = [None if c is None else torch.from_dlpack(c).view(t[1])
                         for c, t in zip(self._package.weights(), self._types)]
        self.input_names = [t[0] for t, w in zip(self._types, self._weights) if w is None]
        self.threads = threads or 0
        self._sources = self.program.symbol_sources
        self._variants: OrderedDict = OrderedDict()

    def _variant(self, tensors):
        if not self._sources:
            key = ()
        else:
            key = tuple(tensors[i].shape[d] // f for _, (i, d, f) in sorted(self._sources.items()))
        v = self._variants.get(key)
        if v is None:
            layout = None
            if self._sources:
                values = {s: tensors[i].shape[d] // f for s, (i, d, f) in self._sources.items()}
                outputs, slot_bytes, _ = self.program.layout_at(values)
                layout = (outputs, slot_bytes)
            v = _Variant(self.program, output_pool=False, layout=layout)
            v.label = f"stax::package::{os.path.basename(self.path)}"
            self._variants[key] = v
            if len(self._variants) > 16:
                self._variants.popitem(last=False)
        else:
            self._variants.move_to_end(key)
        return v

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"stax package {self.path} takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        tensors = []
        given = iter(inputs)
        for (name, dtype, _, strides), weight in zip(self._types, self._weights):
            if weight is not None:
                tensors.append(weight)
                continue
            t = next(given)
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"stax package input {name}: expected a tensor, got "
                                f"{type(t).__name__}")
            if t.device.type != "cpu":
                raise ValueError(f"stax package input {name}: the package runs on the CPU, "
                                 f"got a tensor on {t.device}")
            if t.dtype != dtype:
                raise ValueError(f"stax package input {name}: expected {dtype}, got {t.dtype}")
            tensors.append(t.contiguous())
        variant = self._variant(tensors)
        shapes = ([tuple(t.shape) for t in tensors], [tuple(t.stride()) for t in tensors])
        # PyTorch's thread count at each call, as the torch.compile backend runs (not the count
        # of the machine that wrote the package).
        threads = self.threads or torch.get_num_threads()
        slots = variant.run_into_slots([t.data_ptr() for t in tensors], threads, shapes=shapes)
        outs = variant.finish(tensors, slots)
        return outs[0] if len(outs) == 1 else tuple(outs)


def load(path, **kwargs) -> LoadedPackage:
    """Loads a package written by aot_compile or `stax compile` (no compile at load); see
    LoadedPackage. Raises PackageError naming what is wrong: another Stax build, another
    CPU, a truncated or damaged file, a missing library."""
    return LoadedPackage(path, **kwargs)
