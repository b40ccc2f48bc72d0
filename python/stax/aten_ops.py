"""The map from ATen operators (as they appear in AOTAutograd's FX graphs) to Stax ops.

Stax's graph IR uses ATen's op names and argument names, so most operators map one to one:
the Stax op is the overload packet's name and each argument keeps its name. This module
holds that rule, the few operators that need a rewrite (foreach ops, `max.dim`, `t`, ...),
and the reason an operator is not taken, which `stax.explain` and the debug log report.

A translation emits Stax text statements into a `TextGraph`; the translator never guesses:
anything it does not know is `Unsupported`, and the node runs in PyTorch.
"""

from __future__ import annotations

import math
import operator
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import symbolic_sizes
from .layouts import at_hints
from .symbolic_sizes import SymbolFacts, Unsupported

aten = torch.ops.aten
prims = torch.ops.prims

# Stax dtype names (ir/dtype.h) of the dtypes Stax computes in.
STAX_DTYPES = {
    torch.bool: "bool",
    torch.uint8: "u8",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
}
TORCH_DTYPES = {v: k for k, v in STAX_DTYPES.items()}

# ATen arguments that carry no meaning on Stax's CPU-only, strided tensors: dropped when
# their value is one of the accepted ones, Unsupported otherwise.
_PLACEMENT_ARGS = {
    "device": lambda v: v is None or torch.device(v).type == "cpu",
    "layout": lambda v: v is None or v == torch.strided,
    "pin_memory": lambda v: v is None or v is False,
    "requires_grad": lambda v: True,  # autograd is AOTAutograd's, outside the graph
    "non_blocking": lambda v: True,  # host to host copies are synchronous anyway
    "memory_format": lambda v: v is None
    or v in (torch.preserve_format, torch.contiguous_format),
}


# Unsupported: a node Stax does not run; the message is the reason shown by explain.


# Stax's op registry, from the extension module (the C++ registry is the truth):
# op name -> [(parameter name, keyword_only)] in schema order.
def stax_op_params() -> dict[str, list[tuple[str, bool]]]:
    global _OP_PARAMS
    if _OP_PARAMS is None:
        from . import _C

        _OP_PARAMS = {name: [(p, kw) for p, kw in params] for name, params in _C.op_schemas()}
    return _OP_PARAMS


_OP_PARAMS = None


@dataclass
class TextGraph:
    """A Stax graph under construction, as text-format statements."""

    name: str
    inputs: list[tuple[str, Any]] = field(default_factory=list)  # (name, FakeTensor-ish)
    statements: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)  # ATen op of each statement
    outputs: list[str] = field(default_factory=list)
    returns_tuple: bool = True
    # Inputs whose storage offset the graph depends on (as_strided): name -> offset.
    offset_guards: dict = field(default_factory=dict)
    # The FakeTensor of each output: the layout PyTorch code after the region expects.
    output_vals: list = field(default_factory=list)
    # What the region returns, per value: ("output", k, replay) is output k, ("input", i,
    # replay) input i, each through replay (a view_outputs.ViewReplay) unless it is None.
    returned: list = field(default_factory=list)
    # The size symbols the graph's types and arguments use, with their facts (issue 33), and
    # which of the region's arguments are the graph's inputs (the others are sizes).
    symbols: SymbolFacts = field(default_factory=SymbolFacts)
    tensor_positions: list = field(default_factory=list)
    num_args: int = 0  # the region's arguments, sizes included (0: as many as inputs)
    # Why an input's symbolic sizes cannot be spelled (a floor division), or None.
    unspellable: str | None = None
    # Size symbols no input dim gives, each read from a stand-in input of that size and
    # stride 0 made at each call from the int argument Dynamo passes (partition.py):
    # (input name, symbol, argument position), declared after the inputs.
    size_carriers: list = field(default_factory=list)
    # The region's arguments that are numbers (a batch norm's n / (n - 1), a SymFloat; an
    # element count over a floor division, a SymInt): position -> dtype of the 0-d tensor
    # input of the graph made from the number at each call (partition.number_operand_problem).
    number_inputs: dict = field(default_factory=dict)
    _counter: int = 0

    def fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_s{self._counter}"

    def emit(self, target: str | list[str], op: str, args: list[str], origin: str) -> None:
        lhs = target if isinstance(target, str) else ", ".join(target)
        self.statements.append(f"    {lhs} = {op}({', '.join(args)})")
        self.origins.append(origin)

    def text(self) -> str:
        params = [f"{n}: {tensor_type_text(v, self.symbols)}" for n, v in self.inputs]
        params += [f"{n}: bool[{symbol}] strides=[0]" for n, symbol, _ in self.size_carriers]
        lines = [f"def {self.name}({', '.join(params)}){self.symbols.where_clause()}:"]
        lines += self.statements
        lines.append("    return " + ", ".join(self.outputs))
        return "\n".join(lines) + "\n"


def tensor_type_text(t: Any, symbols: SymbolFacts | None = None) -> str:
    dtype = STAX_DTYPES[t.dtype]
    if symbols is not None and symbolic_sizes.has_symbolic_layout(t):
        # Issue 33: sizes and strides as expressions over size symbols; the strides are
        # written out unless they are the contiguous ones of the sizes.
        sizes = [symbols.text(s) for s in t.shape]
        strides = [symbols.text(s) for s in t.stride()]
        text = f"{dtype}[{', '.join(sizes)}]"
        # Decided at the hints, without a guard (layouts.at_hints).
        if list(at_hints(t.stride())) != contiguous_strides(list(at_hints(t.shape))):
            text += " strides=[" + ", ".join(strides) + "]"
        return text
    sizes = ", ".join(str(int(s)) for s in t.shape)
    text = f"{dtype}[{sizes}]"
    strides = [int(s) for s in t.stride()]
    if strides != contiguous_strides([int(s) for s in t.shape]):
        text += " strides=[" + ", ".join(str(s) for s in strides) + "]"
    return text


def contiguous_strides(sizes: list[int]) -> list[int]:
    strides, running = [], 1
    for s in reversed(sizes):
        strides.append(running)
        running *= max(s, 1)
    return list(reversed(strides))


# The size symbols of the graph being translated (partition.translate_region, per thread),
# for the SymInt arguments literal() spells.
_translating = threading.local()


def literal(value: Any, names: Callable[[Any], str]) -> str:
    """The text-format spelling of one argument value."""
    if isinstance(value, torch.fx.Node):
        return names(value)
    if isinstance(value, torch.SymInt):
        symbols = getattr(_translating, "symbols", None)
        if symbols is None:
            raise Unsupported("a symbolic size outside a symbolic translation")
        return symbols.text(value)
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, torch.dtype):
        if value not in STAX_DTYPES:
            raise Unsupported(f"dtype {value}")
        return f'"{STAX_DTYPES[value]}"'
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, torch.memory_format):
        formats = {torch.contiguous_format: "contiguous_format",
                   torch.preserve_format: "preserve_format"}
        if value not in formats:
            raise Unsupported(f"memory format {value}")
        return f'"{formats[value]}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v, names) for v in value) + "]"
    raise Unsupported(f"argument of type {type(value).__name__}")


def bind_arguments(node: torch.fx.Node) -> list[tuple[str, Any, Any]]:
    """(name, value, default) for every schema argument of an OpOverload call."""
    schema = node.target._schema
    bound = []
    for i, arg in enumerate(schema.arguments):
        if i < len(node.args):
            value = node.args[i]
        elif arg.name in node.kwargs:
            value = node.kwargs[arg.name]
        elif arg.has_default_value():
            value = arg.default_value
        else:
            raise Unsupported(f"missing argument {arg.name}")
        bound.append((arg.name, value, arg.default_value if arg.has_default_value() else None))
    return bound


# Operators whose Stax spelling differs from the one-to-one rule. Each takes the node, the
# value namer and the graph, and returns the Stax value name(s) of the node's result.
Rewrite = Callable[[torch.fx.Node, Callable[[Any], str], TextGraph], Any]
REWRITES: dict[Any, Rewrite] = {}


def rewrite(*targets):
    def register(fn):
        for t in targets:
            REWRITES[t] = fn
        return fn

    return register


def _emit_op(graph: TextGraph, node: torch.fx.Node, op: str, args: list[str], hint=None) -> str:
    out = graph.fresh(hint or node.name)
    graph.emit(out, op, args, _origin(node))
    return out


def _origin(node: torch.fx.Node) -> str:
    target = node.target
    return str(target) if not hasattr(target, "_schema") else target.name().replace("::", ".")


@rewrite(aten.alias.default, aten.lift_fresh_copy.default, aten.detach.default)
def _identity(node, names, graph):
    if node.target is aten.lift_fresh_copy.default:
        return _emit_op(graph, node, "clone", [names(node.args[0])])
    return names(node.args[0])


@rewrite(torch.ops.prims.convert_element_type.default)
def _prims_convert(node, names, graph):
    # A decomposition's cast (GPT-2's attention scale over a symbolic head size); its operand
    # is `a` where Stax's convert_element_type names it `self`.
    return _emit_op(graph, node, "convert_element_type",
                    [names(node.args[0]), literal(node.args[1], names)])


@rewrite(aten.true_divide.Tensor)
def _true_divide(node, names, graph):
    # true_divide is div without a rounding mode, integer operands included.
    return _emit_op(graph, node, "div", [literal(node.args[0], names), literal(node.args[1], names)])


@rewrite(aten.slice_scatter.default, aten.select_scatter.default)
def _scatter_window(node, names, graph):
    # Eager converts src to self's dtype as copy_ does; Stax's ops take src in self's dtype.
    dtype = node.args[0].meta["val"].dtype
    args = [literal(value, names) for _, value, _ in bind_arguments(node)]
    if node.args[1].meta["val"].dtype != dtype:
        args[1] = _emit_op(graph, node, "convert_element_type", [args[1], literal(dtype, names)],
                           hint=f"{node.name}_src")
    return _emit_op(graph, node, node.target._overloadpacket.__name__, args)


@rewrite(aten.scatter.value)
def _scatter_value(node, names, graph):
    # Stax's scatter takes ATen's scatter.src and scatter.value as one op whose src is a
    # tensor or a scalar.
    bound = {n: v for n, v, _ in bind_arguments(node)}
    return _emit_op(graph, node, "scatter", [
        names(bound["self"]), literal(bound["dim"], names), names(bound["index"]),
        literal(bound["value"], names)])


def _check_tensor_indices(node: torch.fx.Node) -> None:
    """index.Tensor and index_put: Stax takes integer tensor indices (broadcast together,
    None entries around them); boolean masks, whose results' shapes depend on the data, run
    in PyTorch."""
    indices = [i for i in node.args[1] if i is not None]
    if not indices:
        raise Unsupported("no tensor index")
    for index in indices:
        dtype = index.meta["val"].dtype
        if dtype not in (torch.int64, torch.int32):
            raise Unsupported(f"a {dtype} index (Stax takes int64 and int32 indices)")


@rewrite(aten.t.default)
def _t(node, names, graph):
    rank = len(node.args[0].meta["val"].shape)
    if rank < 2:
        return names(node.args[0])
    return _emit_op(graph, node, "transpose", [names(node.args[0]), "0", "1"])


@rewrite(aten._unsafe_view.default, aten.view.default)
def _unsafe_view(node, names, graph):
    # PyTorch has already checked a view against eager's strides, which Stax's model of
    # eager's layouts does not always know (a pointwise op keeps a permuted input's layout in
    # eager, a computed value is contiguous in the model); its values are reshape's, and the
    # layouts of the region's outputs come from PyTorch's metadata (view_outputs.py).
    return _emit_op(graph, node, "reshape", [names(node.args[0]), literal(node.args[1], names)])


@rewrite(aten.arange.default, aten.arange.start)
def _arange(node, names, graph):
    # Stax has ATen's arange.start_step; the shorter overloads start at 0 and step by 1.
    bound = {n: v for n, v, _ in bind_arguments(node)}
    for name in ("layout", "device", "pin_memory"):
        if not _PLACEMENT_ARGS[name](bound.get(name)):
            raise Unsupported(f"{name}={bound[name]}")
    start = bound.get("start", 0)
    args = [literal(start, names), literal(bound["end"], names)]
    if bound.get("dtype") is not None:
        args.append(f"dtype={literal(bound['dtype'], names)}")
    return _emit_op(graph, node, "arange", args)


@rewrite(aten.as_strided.default)
def _as_strided(node, names, graph):
    # ATen's storage offset counts from the start of the storage; a Stax input starts at its
    # element 0, so the offset is made relative to the input's own, which the region then
    # checks at every call (partition.py admits as_strided of graph inputs only).
    bound = {n: v for n, v, _ in bind_arguments(node)}
    base = bound["self"]
    base_offset = int(base.meta["val"].storage_offset())
    offset = bound["storage_offset"]
    offset = base_offset if offset is None else int(offset)
    if offset < base_offset:
        raise Unsupported("as_strided before the start of its input")
    graph.offset_guards[names(base)] = base_offset
    return _emit_op(graph, node, "as_strided", [
        names(base), literal(list(bound["size"]), names), literal(list(bound["stride"]), names),
        str(offset - base_offset)])


@rewrite(prims.squeeze.default)
def _prims_squeeze(node, names, graph):
    return _emit_op(graph, node, "squeeze", [names(node.args[0]),
                                             literal(list(node.args[1]), names)])


@rewrite(aten.max.dim, aten.min.dim)
def _max_dim(node, names, graph):
    bound = {n: v for n, v, _ in bind_arguments(node)}
    red, arg = ("amax", "argmax") if node.target is aten.max.dim else ("amin", "argmin")
    x, dim, keep = names(bound["self"]), int(bound["dim"]), literal(bound["keepdim"], names)
    values = _emit_op(graph, node, red, [x, f"dim=[{dim}]", f"keepdim={keep}"])
    # Eager's max.dim takes bool (cumprod's backward finds the first zero with it) where its
    # argmax refuses bool; the first extremum of the values as uint8 is the same index.
    arg_input = x
    if bound["self"].meta["val"].dtype == torch.bool:
        arg_input = _emit_op(graph, node, "_to_copy", [x, f"dtype={literal(torch.uint8, names)}"])
    indices = _emit_op(graph, node, arg, [arg_input, f"dim={dim}", f"keepdim={keep}"])
    return [values, indices]


@rewrite(aten.copy.default)
def _copy(node, names, graph):
    # The functional copy: src broadcast to self's shape, in self's dtype.
    dst, src = node.args[0].meta["val"], node.args[1]
    value = names(src)
    if tuple(src.meta["val"].shape) != tuple(dst.shape):
        value = _emit_op(graph, node, "expand", [value, literal(list(dst.shape), names)])
    if src.meta["val"].dtype != dst.dtype:
        value = _emit_op(graph, node, "_to_copy", [value, f"dtype={literal(dst.dtype, names)}"])
    elif value == names(src):
        value = _emit_op(graph, node, "clone", [value])
    return value


@rewrite(aten.copy_.default)
def _copy_in_place(node, names, graph):
    # AOTAutograd's epilogue of an input mutation (keep_inference_input_mutations): the
    # input's final value written into its own memory. Stax's copy_ broadcasts and converts
    # src as eager's does and writes the input in place (issue 16, point 6).
    dst = node.args[0]
    if not isinstance(dst, torch.fx.Node) or dst.op != "placeholder":
        raise Unsupported("copy_ into a value that is not a graph input")
    return _emit_op(graph, node, "copy_", [names(dst), names(node.args[1])])


@rewrite(aten.unbind.int)
def _unbind(node, names, graph):
    x = node.args[0]
    dim = int(node.args[1]) if len(node.args) > 1 else int(node.kwargs.get("dim", 0))
    n = int(x.meta["val"].shape[dim])
    return [_emit_op(graph, node, "select", [names(x), str(dim), str(i)]) for i in range(n)]


# The foreach ops of optimizers (AdamW(foreach=True)): one Stax op per list entry.
_FOREACH_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow",
                   "maximum": "maximum", "minimum": "minimum"}
_FOREACH_UNARY = {"sqrt", "neg", "reciprocal", "exp", "abs", "sign", "log", "sigmoid", "rsqrt"}


def _foreach(node, names, graph):
    name = node.target._overloadpacket.__name__.removeprefix("_foreach_")
    overload = node.target._overloadname
    args = list(node.args)
    kwargs = dict(node.kwargs)
    if name in _FOREACH_UNARY:
        return [_emit_op(graph, node, name, [names(t)]) for t in args[0]]
    if name in _FOREACH_BINARY:
        op = _FOREACH_BINARY[name]
        alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
        if overload == "ScalarAndTensor":  # pow(scalar, tensor list)
            return [_emit_op(graph, node, op, [literal(args[0], names), names(t)]) for t in args[1]]
        lhs = args[0]
        if overload in ("Scalar", "Tensor"):
            rhs = [args[1]] * len(lhs)
        elif overload in ("List", "ScalarList"):
            rhs = list(args[1])
        else:
            raise Unsupported(f"foreach overload {overload}")
        out = []
        for a, b in zip(lhs, rhs):
            extra = [f"alpha={literal(alpha, names)}"] if alpha != 1 and op in ("add", "sub") else []
            out.append(_emit_op(graph, node, op, [names(a), literal(b, names)] + extra))
        return out
    if name in ("addcmul", "addcdiv"):
        selfs, t1s, t2s = args[0], args[1], args[2]
        value = kwargs.get("value", args[3] if len(args) > 3 else 1)
        values = list(value) if isinstance(value, (list, tuple)) else [value] * len(selfs)
        inner_op = "mul" if name == "addcmul" else "div"
        out = []
        for s, a, b, v in zip(selfs, t1s, t2s, values):
            prod = _emit_op(graph, node, inner_op, [names(a), names(b)])
            scaled = prod if v == 1 else _emit_op(graph, node, "mul", [prod, literal(v, names)])
            out.append(_emit_op(graph, node, "add", [names(s), scaled]))
        return out
    if name == "lerp":
        weight = args[2]
        weights = list(weight) if isinstance(weight, (list, tuple)) else [weight] * len(args[0])
        return [
            _emit_op(graph, node, "lerp", [names(a), names(b), literal(w, names)])
            for a, b, w in zip(args[0], args[1], weights)
        ]
    raise Unsupported(f"foreach op {name}")


def is_foreach(target) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target._overloadpacket.__name__.startswith(
        "_foreach_"
    ) and not target._overloadpacket.__name__.endswith("_")


_ATTENTION = (aten._scaled_dot_product_flash_attention_for_cpu.default,
              aten._scaled_dot_product_flash_attention_for_cpu_backward.default)


def _check_attention(node: torch.fx.Node) -> None:
    """Stax's runtime attention takes float32 and bfloat16 without dropout; PyTorch's kernel
    runs the rest."""
    query = node.args[1] if node.target is _ATTENTION[1] else node.args[0]
    dtype = query.meta["val"].dtype
    if dtype not in (torch.float32, torch.bfloat16):
        raise Unsupported(f"attention in {dtype} (Stax's runtime attention takes float32 and "
                          "bfloat16)")
    dropout = node.args[6] if node.target is _ATTENTION[1] else (
        node.args[3] if len(node.args) > 3 else node.kwargs.get("dropout_p", 0.0))
    if dropout != 0.0:
        raise Unsupported(f"attention with dropout_p={dropout}")


def translate_node(node: torch.fx.Node, names: Callable[[Any], str], graph: TextGraph,
                   stax_ops: dict[str, list[str]]):
    """Emits the Stax statements of one call_function node; returns the result's Stax value
    name (a list for ops with several results). Raises Unsupported with the reason."""
    target = node.target
    if target is operator.getitem:
        base, index = node.args
        return ("getitem", base, index)  # resolved by the caller from the base's results
    if not isinstance(target, torch._ops.OpOverload):
        raise Unsupported(f"{target} is not an ATen operator")
    if target in REWRITES:
        return REWRITES[target](node, names, graph)
    if target in (aten.index.Tensor, aten.index_put.default):
        _check_tensor_indices(node)
    if target is aten.convolution.default and node.args[6]:
        raise Unsupported("a transposed convolution (Stax lowers the forward kind only)")
    if target is aten.convolution_backward.default and node.args[7]:
        raise Unsupported("the backward of a transposed convolution")
    if target in _ATTENTION:
        _check_attention(node)
    if target.namespace == "prims" and target._overloadpacket.__name__ == "squeeze":
        return _prims_squeeze(node, names, graph)
    if is_foreach(target):
        return _foreach(node, names, graph)
    op = target._overloadpacket.__name__
    if target.namespace == "prims" and op not in ("convert_element_type", "iota"):
        raise Unsupported(f"prims.{op}")
    if op not in stax_ops:
        raise Unsupported(f"no Stax op {op}")
    params = dict(stax_ops[op])
    bound = {}
    for name, value, default in bind_arguments(node):
        if name in params:
            bound[name] = (value, default)
        elif name in _PLACEMENT_ARGS:
            if not _PLACEMENT_ARGS[name](value):
                raise Unsupported(f"{name}={value}")
        elif value != default:
            raise Unsupported(f"argument {name}={value!r} (Stax's {op} has no {name})")
    # Positional while every parameter so far is given and not keyword-only; keywords after.
    args, positional = [], True
    for name, keyword_only in stax_ops[op]:
        if name not in bound:
            positional = False
            continue
        value, default = bound[name]
        if value is None and default is None:
            positional = False  # Stax's default is None too
            continue
        positional = positional and not keyword_only
        text = literal(value, names)
        args.append(text if positional else f"{name}={text}")
    results = _result_count(node)
    if results == 1:
        return _emit_op(graph, node, op, args)
    outs = [graph.fresh(f"{node.name}_{i}") for i in range(results)]
    graph.emit(outs, op, args, _origin(node))
    return outs


def _result_count(node: torch.fx.Node) -> int:
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return len(val)
    return 1
