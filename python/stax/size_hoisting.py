"""Size reads of computed tensors rewritten over the graph's inputs (issue 33).

AOTAutograd's symbolic graphs read sizes off intermediates: a batch norm's running-variance
update multiplies by n / (n - 1), n = `sym_numel(convolution)`. The read runs in PyTorch, so
the partitioner must hand PyTorch the convolution's result between two regions only for its
size, and the region that computed it is cut in two (ResNet training: 2 forward regions and
6 to 7 backward ones where the static graphs have one each).

Every such size is an expression over the graph's size symbols, and each symbol is a size
input (a SymInt placeholder) or a dim of an input tensor. `hoist_size_reads` replaces each
read of a computed tensor's size by the same expression over those inputs, computed right
after the placeholders: nothing then waits for a region's result to know a size. A read whose
expression uses an operation not listed here stays as it is.
"""

from __future__ import annotations

import operator

import sympy
import torch

aten = torch.ops.aten

_SIZE_READS = {aten.sym_size.int, aten.sym_numel.default, aten.sym_stride.int,
               aten.sym_storage_offset.default}


class _NotHoistable(Exception):
    pass


class _Emitter:
    """Emits FX nodes computing sympy expressions over the graph's size inputs."""

    def __init__(self, graph: torch.fx.Graph):
        self.graph = graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        self.anchor = placeholders[-1] if placeholders else None
        self.sources: dict[sympy.Symbol, torch.fx.Node] = {}
        self.tensor_dims: dict[sympy.Symbol, tuple[torch.fx.Node, int]] = {}
        for node in placeholders:
            val = node.meta.get("val")
            if isinstance(val, torch.SymInt) and val.node.expr.is_Symbol:
                self.sources.setdefault(val.node.expr, node)
            elif isinstance(val, torch.Tensor):
                for d, size in enumerate(val.shape):
                    if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                        self.tensor_dims.setdefault(size.node.expr, (node, d))

    def _add(self, target, args, val) -> torch.fx.Node:
        with self.graph.inserting_after(self.anchor):
            node = self.graph.call_function(target, args)
        node.meta["val"] = val
        self.anchor = node
        return node

    def _symbol(self, symbol: sympy.Symbol):
        if symbol in self.sources:
            return self.sources[symbol]
        if symbol not in self.tensor_dims:
            raise _NotHoistable(f"no input gives {symbol}")
        tensor, d = self.tensor_dims[symbol]
        node = self._add(aten.sym_size.int, (tensor, d), tensor.meta["val"].shape[d])
        self.sources[symbol] = node
        return node

    def _fold(self, op, parts):
        result = parts[0]
        for part in parts[1:]:
            value = op(_val(result), _val(part))
            result = self._add(op, (result, part), value)
        return result

    def emit(self, expr: sympy.Expr):
        """A node (or an int) whose value is `expr` at run time."""
        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            return self._symbol(expr)
        if isinstance(expr, sympy.Add):
            return self._fold(operator.add, [self.emit(a) for a in expr.args])
        if isinstance(expr, sympy.Mul):
            return self._fold(operator.mul, [self.emit(a) for a in expr.args])
        if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) >= 1:
            base = self.emit(expr.base)
            return self._fold(operator.mul, [base] * int(expr.exp))
        name = type(expr).__name__
        if name == "FloorDiv":
            return self._fold(operator.floordiv, [self.emit(a) for a in expr.args])
        if name in ("PythonMod", "Mod"):
            return self._fold(operator.mod, [self.emit(a) for a in expr.args])
        raise _NotHoistable(f"{name} in {expr}")


def _val(x):
    return x.meta["val"] if isinstance(x, torch.fx.Node) else x


def hoist_size_reads(gm: torch.fx.GraphModule) -> int:
    """Rewrites each size read of a computed tensor as arithmetic over the graph's size
    inputs; returns how many reads it rewrote."""
    emitter = None
    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _SIZE_READS:
            continue
        tensor = node.args[0]
        if not isinstance(tensor, torch.fx.Node) or tensor.op == "placeholder":
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.SymInt):
            continue
        if emitter is None:
            emitter = _Emitter(gm.graph)
            if emitter.anchor is None:
                return 0
        expr = val.node.expr
        shape_env = getattr(val.node, "shape_env", None)
        if shape_env is not None:
            expr = shape_env.replace(expr)  # symbols Dynamo specialized since
        try:
            replacement = emitter.emit(expr)
        except _NotHoistable:
            continue
        for user in list(node.users):
            user.replace_input_with(node, replacement)
        gm.graph.erase_node(node)
        rewritten += 1
    if rewritten:
        gm.graph.lint()
        gm.recompile()
    return rewritten
