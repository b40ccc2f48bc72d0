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
                options=None, strict=False, metadata=None, capture="export") -> str:
    """Captures `model_or_fn` (an nn.Module, a function, or a torch.export ExportedProgram)
    at `example_inputs`, compiles it into one Stax program and writes the package to `path`.

    capture: "export" traces with torch.export; "compile" with torch.compile's own front end
    (Dynamo and AOTAutograd, the graphs `torch.compile(backend="stax")` compiles, so code
    torch.export refuses may package), which needs the whole function as one graph
    (fullgraph). dynamic_shapes: as torch.export takes it (per input, by the forward's argument
    name or by position: {dim: torch.export.Dim}); those dims become Stax's size symbols, one
    program for every size their ranges allow. weights: keep the parameters and buffers (and,
    with capture="compile", any other tensor the function reads) in the package
    (safetensors), bound to their inputs; False makes them inputs the caller passes, after the
    model's own, in the captured graph's order. options: the torch.compile backend's options
    that apply to compiling (threads, simd, cache_dir, ...). Returns `path`. Raises
    PackageError when the program cannot be packaged (an op Stax does not run, a mutated
    buffer, an output that is a view PyTorch would have to remake) and the capture's errors
    as they are."""
    opts = Options.parse(options)
    if capture == "export":
        gm, roles, labels = _exported_graph(model_or_fn, example_inputs, dynamic_shapes, strict)
    elif capture == "compile":
        gm, roles, labels = _compiled_graph(model_or_fn, example_inputs, dynamic_shapes)
    else:
        raise ValueError(f"aot_compile: capture must be 'export' or 'compile', got {capture!r}")
    name = "aot_" + "".join(c if c.isalnum() else "_" for c in type(model_or_fn).__name__)
    meta = {"exporter": "stax.aot_compile", "capture": capture, "torch": torch.__version__}
    meta.update(metadata or {})
    _write_package(gm, roles, labels, name, path, opts, weights, meta)
    return os.fspath(path)


# What each placeholder of the captured ATen graph is, in the graph's order.
class _Input:  # one of the model's inputs, the `position`-th the caller passes
    def __init__(self, position):
        self.position = position


class _Weight:  # a tensor the package keeps (weights=True) under `key`
    def __init__(self, key, value):
        self.key, self.value = key, value


class _Size:  # a size Dynamo passes on its own; the program reads it from its inputs' sizes
    pass


class _Other:  # what a package cannot take (an effect token, a script object)
    def __init__(self, what):
        self.what = what


def _exported_graph(model_or_fn, example_inputs, dynamic_shapes, strict):
    ep = _exported(model_or_fn, example_inputs, dynamic_shapes, strict)
    from .backend import decompositions

    ep = ep.run_decompositions(decompositions())
    signature = ep.graph_signature
    from torch.export.graph_signature import InputKind, OutputKind

    mutated = [s for s in signature.output_specs
               if s.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION)]
    if mutated:
        raise PackageError(
            "aot_compile: the exported program writes "
            + ", ".join(f"{s.target or s.arg.name} ({s.kind.name.lower()})" for s in mutated)
            + "; a package runs a function without state: export the model in eval mode")
    state = dict(ep.state_dict)
    state.update(getattr(ep, "constants", {}) or {})
    roles, labels = [], []
    for spec in signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            roles.append(_Input(len(labels)))
            labels.append(spec.arg.name)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            roles.append(_Weight(spec.target, state[spec.target]))
        else:
            roles.append(_Other(f"{spec.arg.name} ({spec.kind.name.lower()})"))
    return ep.graph_module, roles, labels


def _compiled_graph(model_or_fn, example_inputs, dynamic_shapes):
    """The ATen graph torch.compile makes of `model_or_fn` at `example_inputs` under no_grad
    (Dynamo's graph through AOTAutograd with Stax's decompositions, as the backend gets it),
    and its placeholders' roles: Dynamo passes the inputs, the parameters and buffers (known
    here by identity) and any other tensor the function reads (kept as a weight named after
    where Dynamo found it)."""
    from torch._dynamo.backends.common import aot_autograd

    from .backend import decompositions, inference_graph_runtime_work
    from .frozen_weights import _readable

    forward = model_or_fn.forward if isinstance(model_or_fn, torch.nn.Module) else model_or_fn
    labels = _argument_names(forward, len(example_inputs))
    copies = []
    for label, value in zip(labels, example_inputs):
        if not isinstance(value, torch.Tensor):
            raise PackageError(f"aot_compile: input {label} is a {type(value).__name__}; a "
                               "package takes tensors (capture a function that closes over it)")
        copies.append(value.detach())  # a new tensor object: marked dynamic without the user's
    for position, dims in _dims_by_position(dynamic_shapes, labels).items():
        for dim, spec in dims.items():
            if spec is not None:
                torch._dynamo.mark_dynamic(copies[position], dim, min=getattr(spec, "min", None),
                                           max=getattr(spec, "max", None))
    positions = {id(t): k for k, t in enumerate(copies)}
    state_names = {}
    if isinstance(model_or_fn, torch.nn.Module):
        for key, t in list(model_or_fn.named_parameters(remove_duplicate=False)) + list(
                model_or_fn.named_buffers(remove_duplicate=False)):
            state_names.setdefault(id(t), key)
    captured = {}

    def backend(gm, example):
        if "graph" in captured:
            captured["problem"] = "Dynamo made more than one graph"
            return gm
        roles = []
        for node, value in zip([n for n in gm.graph.nodes if n.op == "placeholder"], example):
            if isinstance(value, (torch.SymInt, int)):
                roles.append(_Size())
            elif id(value) in positions:
                roles.append(_Input(positions[id(value)]))
            elif id(value) in state_names:
                roles.append(_Weight(state_names[id(value)], value))
            else:
                source = getattr(node.meta.get("grapharg"), "source", None)
                where = getattr(source, "name", node.name)
                roles.append(_Weight(_readable(str(where() if callable(where) else where)), value))

        def inference(aten_gm, fake_inputs):
            work = inference_graph_runtime_work()
            if work is not None:
                captured["problem"] = (f"{work}, which PyTorch's runtime does around the graph; "
                                       "a package runs one Stax program, a function without "
                                       "state")
            elif len(fake_inputs) != len(roles):
                captured["problem"] = "AOTAutograd changed the graph's inputs (duplicates?)"
            captured["graph"] = (aten_gm, roles)
            return aten_gm

        def training(aten_gm, fake_inputs):
            captured["problem"] = "the graph was traced for training"
            return aten_gm

        return aot_autograd(fw_compiler=training, bw_compiler=training,
                            inference_compiler=inference, decompositions=decompositions(),
                            keep_inference_input_mutations=True)(gm, example)

    # Each capture is a new backend for Dynamo: the function's cache entries of earlier ones
    # must not count against its recompile limit.
    with torch.no_grad(), torch._dynamo.config.patch(recompile_limit=1 << 30,
                                                     accumulated_recompile_limit=1 << 30):
        torch.compile(model_or_fn, backend=backend, fullgraph=True)(*copies)
    if "problem" in captured:
        raise PackageError(f"aot_compile (capture='compile'): {captured['problem']}")
    if "graph" not in captured:
        raise PackageError("aot_compile (capture='compile'): torch.compile made no graph (the "
                           "function computes no tensor)")
    gm, roles = captured["graph"]
    # The package's input names: the forward's arguments, and the weights' keys.
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, role in zip(placeholders, roles):
        if isinstance(role, _Input):
            node._rename(labels[role.position])
        elif isinstance(role, _Weight):
            node._rename("w_" + "".join(c if c.isalnum() else "_" for c in role.key))
    gm.recompile()
    return gm, roles, labels


def _argument_names(forward, count):
    import inspect

    try:
        params = [p for p in inspect.signature(forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    return names + [f"arg{k}" for k in range(len(names), count)]


def _dims_by_position(dynamic_shapes, labels):
    """dynamic_shapes as torch.export takes it (a dict by argument name, or a tuple or list by
    position, of {dim: Dim or None}) as {position: {dim: spec}}."""
    if dynamic_shapes is None:
        return {}
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in labels]
        if unknown:
            raise ValueError(f"aot_compile: dynamic_shapes names {', '.join(map(str, unknown))}, "
                             f"not among the inputs ({', '.join(labels)})")
        items = [(labels.index(k), v) for k, v in dynamic_shapes.items()]
    else:
        items = list(enumerate(dynamic_shapes))
    out = {}
    for position, dims in items:
        if dims is None:
            continue
        if isinstance(dims, (list, tuple)):
            dims = dict(enumerate(dims))
        out[position] = dims
    return out


def _write_package(gm, roles, labels, name, path, opts, weights, meta) -> None:
    """Partitions the captured ATen graph, compiles its one region and writes the package: the
    model's inputs (`labels`, each an _Input's position) first, in the caller's order, then
    its weights (kept, or inputs too)."""
    stax_ops = aten_ops.stax_op_params()
    placeholders = [p for p in gm.graph.nodes if p.op == "placeholder"]
    if len(placeholders) != len(roles):
        raise PackageError("aot_compile: the captured program's inputs do not match its "
                           "signature")
    role_of = dict(zip(placeholders, roles))
    _drop_runtime_asserts(gm)
    hoist_size_reads(gm)
    fused, region_names, reasons = partition(gm, stax_ops)
    call = _one_region(fused, region_names, reasons)
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

    # The region's tensor arguments are the captured program's inputs (each a weight or one of
    # the model's inputs); its other arguments are sizes it spells itself.
    positions = text_graph.tensor_positions if text_graph.num_args else range(len(call.args))
    tensor_args = [call.args[i] for i in positions]
    if any(getattr(a, "op", None) != "placeholder" for a in tensor_args):
        raise PackageError("aot_compile: the program reads a tensor computed outside it")
    # The partitioned graph keeps the placeholders in order, not always their names (FX
    # renames one called like a builtin, `input`): matched by position.
    fused_placeholders = [p for p in fused.graph.nodes if p.op == "placeholder"]
    if len(fused_placeholders) != len(placeholders):
        raise PackageError("aot_compile: partitioning changed the program's inputs")
    role_of = {f: role_of[p] for f, p in zip(fused_placeholders, placeholders)}
    others = [role_of[p].what for p in tensor_args if isinstance(role_of[p], _Other)]
    if others:
        raise PackageError(f"aot_compile: the program takes {', '.join(others)}, which a "
                           "package cannot hold")
    # (Dynamo leaves an input the function never reads out of its graph.)
    read = {role_of[p].position for p in tensor_args if isinstance(role_of[p], _Input)}
    unread = [label for k, label in enumerate(labels) if k not in read]
    if unread:
        raise PackageError(f"aot_compile: the program never reads input(s) {', '.join(unread)}; "
                           "capture a function without them")
    # The region takes its inputs in the order the partitioner chose: the package takes the
    # model's inputs first, in the caller's order, then its weights in the graph's.
    region_inputs = dict(zip(tensor_args, text_graph.inputs))
    captured = [p for p in fused_placeholders if p in region_inputs]
    users = sorted((p for p in captured if isinstance(role_of[p], _Input)),
                   key=lambda p: role_of[p].position)
    ordered = users + [p for p in captured if p not in users]
    text_graph.inputs = [region_inputs[p] for p in ordered]
    text = text_graph.text()
    compiled = compile_text(text, name, opts, per_size_programs=False)

    packed = []
    keep_alive = []  # the contiguous copies, alive until the package is written
    for node, (stax_name, _) in zip(ordered, text_graph.inputs):
        role = role_of[node]
        if not isinstance(role, _Weight) or not weights:
            continue
        value = role.value.detach().contiguous()
        keep_alive.append(value)
        packed.append((stax_name, role.key, value.data_ptr(), STAX_DTYPES[value.dtype],
                       list(value.shape)))
    _C.save_package(compiled, text, name, os.fspath(path), packed, meta)


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
