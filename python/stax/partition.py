"""Capability-based partitioning of an ATen FX graph into Stax regions and PyTorch nodes.

A node is Stax's when every tensor it reads and produces is a CPU tensor of a Stax dtype
with static sizes, and `aten_ops.translate_node` can spell it in Stax's text format. Regions
are the largest groups of such nodes that keep the graph acyclic (torch.fx's
CapabilityBasedPartitioner); a region of views only stays in PyTorch, where a view costs
nothing. Every node left to PyTorch is recorded with its reason (explain, debug log).
"""

from __future__ import annotations

import collections
import operator
from dataclasses import dataclass, field

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from . import aten_ops, layouts, symbolic_sizes, view_outputs
from .aten_ops import TextGraph, Unsupported

aten = torch.ops.aten

# Ops that move no data when PyTorch runs them: a region made of these only is not worth a
# kernel call.
VIEW_OPS = {
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "expand", "slice", "select", "narrow", "split", "split_with_sizes", "as_strided", "alias",
    "unbind",
}


def op_name(node: torch.fx.Node) -> str:
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return t.name().replace("::", ".").removeprefix("aten.")
    if t is operator.getitem:
        return "getitem"
    return getattr(t, "__name__", str(t))


def _fake_values(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _fake_values(v)
    else:
        yield value


def _tensor_problem(t) -> str | None:
    if not isinstance(t, torch.Tensor):
        return f"a {type(t).__name__} value"
    if t.device.type != "cpu":
        return f"a tensor on {t.device}"
    if t.dtype not in aten_ops.STAX_DTYPES:
        return f"dtype {t.dtype}"
    if t.layout != torch.strided:
        return f"layout {t.layout}"
    if not isinstance(t.storage_offset(), int):
        return "a symbolic storage offset"
    # Issue 33: symbolic sizes are taken. Stax's shape rules compute a region's intermediate
    # sizes (a convolution's floor divisions included); only its inputs' sizes and its size
    # arguments are spelled, and a region whose inputs its text cannot spell is translated per
    # size instead (symbolic_region.py).
    return None


# Ops whose output mask leaves results out (None in eager, an empty tensor in Stax's IR).
_RESULTS_MAY_BE_NONE = {aten.convolution_backward.default}


def node_problem(node: torch.fx.Node, stax_ops) -> str | None:
    """Why `node` cannot run in Stax, or None when it can."""
    if node.op != "call_function":
        return "not an op"
    for inp in node.all_input_nodes:
        # A tensor constant (lift_fresh_copy's operand) is one more input of the region; an
        # attribute without a fake tensor (a submodule of a higher-order op) is not.
        if inp.op == "get_attr" and not isinstance(inp.meta.get("val"), torch.Tensor):
            return "reads a module attribute that is not a tensor"
        val = inp.meta.get("val")
        if node.target is operator.getitem:
            continue
        if isinstance(val, torch.SymInt) and not symbolic_sizes.is_symbolic_value(val):
            continue  # a size Dynamo specialized to a constant: an int
        if isinstance(val, torch.SymFloat):
            problem = number_operand_problem(node, inp)
            if problem:
                return f"input {inp.name} is a SymFloat value {problem}"
            continue
        if symbolic_sizes.is_symbolic_value(val):
            # A size argument (view's, expand's): spelled as an expression (issue 33).
            try:
                symbolic_sizes.SymbolFacts().text(val)
            except Unsupported as e:
                return f"input {inp.name} is {e}"
            continue
        for v in _fake_values(val):
            problem = _tensor_problem(v)
            if problem:
                return f"input {inp.name} is {problem}"
    out = node.meta.get("val")
    if out is None:
        return "no metadata"
    for v in _fake_values(out):
        if v is None and node.target in _RESULTS_MAY_BE_NONE:
            continue  # a result the op does not compute: Stax's is an empty tensor nobody reads
        problem = _tensor_problem(v)
        if problem:
            return f"result is {problem}"
    if node.target is operator.getitem:
        return None
    if node.target is aten.as_strided.default and node.args[0].op != "placeholder":
        # Its result depends on the strides and storage offset of a computed value, which a
        # Stax buffer need not share with eager's.
        return "as_strided of a computed value"
    scratch = TextGraph("probe")
    aten_ops._translating.symbols = scratch.symbols
    try:
        aten_ops.translate_node(node, lambda n: n.name, scratch, stax_ops)
    except Unsupported as e:
        return str(e)
    finally:
        aten_ops._translating.symbols = None
    return None


def number_operand_problem(node: torch.fx.Node, inp: torch.fx.Node) -> str | None:
    """Why the number `inp` cannot be an operand of `node` in a region as a 0-d tensor input
    (TextGraph.number_inputs), or None. The numbers are a SymFloat computed from sizes in
    PyTorch (a batch norm's n / (n - 1)) and a SymInt whose expression no input dim gives
    (a bfloat16 batch norm's element count over a strided convolution's result). Where it is
    a Tensor argument of a pointwise op whose operands with dims give the result its dtype, a
    0-d float64 (int64) tensor promotes as the Python float (int) does, and the op reads it
    as its opmath type, as it reads the Python number."""
    is_float = isinstance(inp.meta.get("val"), torch.SymFloat)
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or target in aten_ops.REWRITES:
        return "(an op that takes it as a number only)"
    # The promoted dtype of the other tensor operands with dims, and of the 0-d ones: a 0-d
    # operand (the carrier included) changes the result's dtype only without the former.
    dims, zero_dims = None, None
    for arg, (name, value, _) in zip(target._schema.arguments, aten_ops.bind_arguments(node)):
        if value is inp and not isinstance(arg.type, torch.TensorType):
            return f"(argument {name} of {target} is a number, not a tensor)"
        val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if isinstance(val, torch.Tensor) and val.dim() > 0:
            dims = val.dtype if dims is None else torch.promote_types(dims, val.dtype)
        elif isinstance(val, torch.Tensor):
            zero_dims = val.dtype if zero_dims is None else torch.promote_types(zero_dims, val.dtype)
    out = node.meta.get("val")
    base = dims if dims is not None else zero_dims
    if base is None or not isinstance(out, torch.Tensor):
        return "(the op has no tensor operand)"
    if is_float:
        if not base.is_floating_point:
            return "(the op's other operands do not give its result a floating dtype)"
        as_number = base
    else:
        as_number = torch.int64 if base == torch.bool else base
    carrier = torch.float64 if is_float else torch.int64
    as_tensor = as_number if dims is not None else torch.promote_types(base, carrier)
    if as_tensor != as_number or out.dtype != as_number:
        return (f"(a 0-d {carrier} tensor there would make the result {as_tensor}, and the "
                f"number {as_number}; the op's result is {out.dtype})")
    return None


def _number_input(graph: TextGraph, name: str, position: int, dtype: torch.dtype) -> None:
    graph.inputs.append((name, torch.empty((), dtype=dtype)))
    graph.tensor_positions.append(position)
    graph.number_inputs[position] = dtype


def _spelled_over_input_dims(symbols, val) -> str | None:
    """The text of a size the region is given, or None where it needs a size symbol no input
    dim gives (SymbolFacts._derived: a floor division) or cannot be spelled; `symbols` is left
    as it was then."""
    derived, facts = dict(symbols.derived), dict(symbols.facts)
    try:
        text = symbols.text(val)
    except Unsupported:
        text = None
    if text is not None and len(symbols.derived) == len(derived):
        return text
    symbols.derived.clear()
    symbols.derived.update(derived)
    symbols.facts.clear()
    symbols.facts.update(facts)
    return None


class _StaxSupport(OperatorSupportBase):
    def __init__(self, stax_ops):
        self.stax_ops = stax_ops
        # Keyed by node name: fusing the partitions rebuilds the graph with new Node objects.
        self.reasons: dict[str, str] = {}

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        problem = node_problem(node, self.stax_ops)
        if node.target is operator.getitem and problem is None:
            base = node.args[0]
            problem = self.reasons.get(base.name) if isinstance(base, torch.fx.Node) else "getitem"
            if problem is None and node_problem(base, self.stax_ops) is not None:
                problem = "its producer runs in PyTorch"
        if problem is not None:
            self.reasons[node.name] = problem
        return problem is None


@dataclass
class PartitionReport:
    """What ran where: per op, the nodes in Stax regions and those left to PyTorch."""

    stax_ops: collections.Counter = field(default_factory=collections.Counter)
    fallback_ops: collections.Counter = field(default_factory=collections.Counter)
    fallback_reasons: dict[str, collections.Counter] = field(default_factory=dict)

    def add_fallback(self, name: str, reason: str) -> None:
        self.fallback_ops[name] += 1
        self.fallback_reasons.setdefault(name, collections.Counter())[reason] += 1


def complex_value(gm: torch.fx.GraphModule) -> str | None:
    """The first value of a complex dtype in the graph, if any: such graphs run in PyTorch
    whole (Stax has no complex numbers, and a graph split around them gains nothing)."""
    for node in gm.graph.nodes:
        for v in _fake_values(node.meta.get("val")):
            if isinstance(v, torch.Tensor) and v.dtype.is_complex:
                return f"{node.name} is {v.dtype}"
    return None


def partition(gm: torch.fx.GraphModule, stax_ops):
    """Returns (graph module with regions as submodules `stax_region_<k>`, region names,
    reasons of unsupported nodes)."""
    support = _StaxSupport(stax_ops)
    complex_reason = complex_value(gm)
    if complex_reason is not None:
        reason = f"the graph has complex values ({complex_reason})"
        return gm, [], {n.name: reason for n in gm.graph.nodes}
    partitioner = CapabilityBasedPartitioner(
        gm, support, allows_single_node_partition=True
    )
    partitions = partitioner.propose_partitions()
    kept = []
    for p in partitions:
        compute = [
            n for n in p.nodes
            if n.op == "call_function" and n.target is not operator.getitem
            and op_name(n).split(".")[0] not in VIEW_OPS
        ]
        if compute:
            kept.append(p)
        else:
            for n in p.nodes:
                support.reasons.setdefault(n.name, "a region of views only (a view costs nothing in PyTorch)")
    fused = partitioner.fuse_partitions(kept, prefix="stax_region_")
    regions = [name for name, _ in fused.named_children() if name.startswith("stax_region_")]
    return fused, regions, support.reasons


def translate_region(sub: torch.fx.GraphModule, name: str, stax_ops) -> TextGraph:
    """The Stax graph of one region (a submodule whose nodes are all supported)."""
    graph = TextGraph(name)
    names: dict[torch.fx.Node, object] = {}
    used = set()

    def stax_name(n: str) -> str:
        base = n if n.isidentifier() and n not in ("def", "return", "True", "False", "None") else "v"
        candidate, k = base, 0
        while candidate in used:
            k += 1
            candidate = f"{base}_{k}"
        used.add(candidate)
        return candidate

    def name_of(n):
        value = names[n]
        if isinstance(value, list):
            raise Unsupported(f"{n.name} has several results")
        return value

    aten_ops._translating.symbols = graph.symbols
    try:
        _translate_nodes(sub, graph, names, stax_name, name_of, stax_ops)
    finally:
        aten_ops._translating.symbols = None
    return graph


def _translate_nodes(sub, graph, names, stax_name, name_of, stax_ops):
    # The inputs' sizes first: a size Stax's expressions do not take becomes a symbol of its
    # own where an input dim has it (SymbolFacts._derived), and a size argument given before
    # that input is then written over it.
    for node in sub.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and isinstance(val, torch.Tensor):
            for size in val.shape:
                try:
                    graph.symbols.text(size)
                except Unsupported:
                    pass  # said where the input is translated below
    position = 0
    for node in sub.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and (symbolic_sizes.is_symbolic_value(val)
                                         or isinstance(val, (int, torch.SymInt))):
            # A size the region is given (issue 33): its uses spell the expression (or the
            # int, in a region traced at one call's sizes); the value comes from the inputs'
            # sizes at run time, not as an input. One that no input's dims give and that is
            # only an operand of pointwise ops is a 0-d int64 input instead.
            text = _spelled_over_input_dims(graph.symbols, val)
            if text is None and node.users and all(
                    number_operand_problem(user, node) is None for user in node.users):
                names[node] = stax_name(node.name)
                _number_input(graph, names[node], position, torch.int64)
            else:
                names[node] = text if text is not None else graph.symbols.text(val)
            position += 1
        elif node.op == "placeholder" and isinstance(val, torch.SymFloat):
            # A number computed from sizes in PyTorch (number_operand_problem): an input of
            # the region, as a 0-d float64 tensor made at each call.
            names[node] = stax_name(node.name)
            _number_input(graph, names[node], position, torch.float64)
            position += 1
        elif node.op == "placeholder":
            s = stax_name(node.name)
            names[node] = s
            graph.inputs.append((s, node.meta["val"]))
            graph.tensor_positions.append(position)
            val = node.meta["val"]
            if isinstance(val, torch.Tensor) and symbolic_sizes.has_symbolic_layout(val):
                try:
                    for size in list(val.shape) + list(val.stride()):
                        graph.symbols.text(size)  # records the symbols and their facts
                except Unsupported as e:
                    graph.unspellable = f"input {s}: {e}"
            position += 1
        elif node.op == "call_function":
            result = aten_ops.translate_node(node, name_of, graph, stax_ops)
            if isinstance(result, tuple) and result and result[0] == "getitem":
                _, base, index = result
                result = names[base][index]
            names[node] = result
        elif node.op == "output":
            outs = node.args[0]
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            graph.returns_tuple = isinstance(node.args[0], (list, tuple))
            inputs = [n for n in sub.graph.nodes if n.op == "placeholder"]
            for o in outs:
                graph.returned.append(_returned_value(o, graph, inputs, name_of))
        else:
            raise Unsupported(f"{node.op} node in a region")
    graph.num_args = position
    _add_size_carriers(sub, graph)


def _add_size_carriers(sub, graph: TextGraph) -> None:
    """A size symbol that no input dim gives (a region that computes a dropout's counters
    reads only the sizes Dynamo passes as ints) is read from a stand-in input of that size and
    stride 0, made at each call from the int argument (TextGraph.size_carriers)."""
    if not graph.symbols.facts:
        return
    given = set()
    for _, fake in graph.inputs:
        for size in getattr(fake, "shape", ()):
            found = symbolic_sizes.dim_symbol(size, graph.symbols.derived)
            if found is not None:
                given.add(found[0])
    taken = {n for n, _ in graph.inputs}
    position = 0
    for node in sub.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt) and val.node.expr.is_Symbol:
            symbol = str(val.node.expr)
            if symbol in graph.symbols.facts and symbol not in given:
                name = f"size_of_{symbol}"
                while name in taken:
                    name += "_"
                graph.size_carriers.append((name, symbol, position))
                given.add(symbol)
        position += 1


def _returned_value(node: torch.fx.Node, graph: TextGraph, inputs, name_of):
    """How the region returns `node`'s value (TextGraph.returned): as a Stax output in the
    layout PyTorch gives it, or, when that layout is not dense in any order, as eager makes
    it: the view ops replayed on the value's storage root (view_outputs.py)."""
    val = node.meta["val"]
    sizes, strides = layouts.at_hints(val.shape), layouts.at_hints(val.stride())
    replay = None
    if 0 not in sizes and layouts.dense_order(sizes, strides) is None:
        root, chain = view_outputs.storage_root(node)
        if chain:
            replay = view_outputs.ViewReplay(root, chain, inputs)
            if root.op == "placeholder":
                return ("input", inputs.index(root), replay)
            node, val = root, root.meta["val"]
            sizes, strides = layouts.at_hints(val.shape), layouts.at_hints(val.stride())
        if not layouts.provably_non_overlapping(sizes, strides):
            raise Unsupported(f"output {node.name} has elements at one address (sizes "
                              f"{list(sizes)}, strides {list(strides)}) and is not a view")
    name = name_of(node)
    if name not in graph.outputs:
        graph.outputs.append(name)
        graph.output_vals.append(val)
    return ("output", graph.outputs.index(name), replay)
