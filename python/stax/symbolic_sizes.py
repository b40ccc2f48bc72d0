"""Sizes known only at run time, as the text format spells them (issue 33).

Dynamo's symbolic graphs carry sizes as SymInts: a sympy expression over the ShapeEnv's
symbols (`s0`, `s1`, ...) with what the ShapeEnv knows of each (its range and the example
value, the hint). A Stax graph writes the same sizes as expressions over size symbols
(`f32[s0, 768]`, `view(x, [s0, 12, 64])`) and declares the facts in a `where` clause
(ir/symbolic_shapes.h). This module turns one into the other and collects the facts of the
symbols a translation uses; it never takes a SymInt's hint as its value (that would
specialize the graph silently): what it cannot spell is `Unsupported`.
"""

from __future__ import annotations

import re

import sympy
import torch

# What an undeclared symbol may be in Stax (ir::default_size_symbol): a ShapeEnv range with
# no upper bound is clipped to it.
MAX_SIZE = 2**31 - 1
# The first number of the symbols SymbolFacts._derived names (Dynamo numbers its own from 0).
_DERIVED_BASE = 900000
_SYMBOL_NAME = re.compile(r"s[0-9]+\Z")


class Unsupported(Exception):
    pass


class SymbolFacts:
    """The size symbols one Stax graph uses: name -> (lo, hi, hint)."""

    def __init__(self):
        self.facts: dict[str, tuple[int, int, int]] = {}
        # Sizes Stax's expressions do not take, each a symbol of its own (_derived).
        self.derived: dict = {}

    def where_clause(self) -> str:
        if not self.facts:
            return ""
        parts = [f"{name}: [{lo}, {hi}] hint={hint}"
                 for name, (lo, hi, hint) in sorted(self.facts.items(), key=lambda kv: int(kv[0][1:]))]
        return " where " + ", ".join(parts)

    def _record(self, symbol: sympy.Symbol, shape_env) -> str:
        name = str(symbol)
        if not _SYMBOL_NAME.match(name):
            raise Unsupported(f"size symbol {name} (Stax takes backed sizes s0, s1, ...)")
        if name in self.facts:
            return name
        # The example values (torch renamed var_to_val to backed_var_to_val).
        hints = getattr(shape_env, "backed_var_to_val", None)
        if hints is None and shape_env is not None:
            hints = shape_env.var_to_val
        if hints is None or symbol not in hints:
            raise Unsupported(f"size symbol {name} without a hint")
        hint = int(hints[symbol])
        lo, hi = 0, MAX_SIZE
        value_range = shape_env.var_to_range.get(symbol)
        if value_range is not None:
            lo = max(lo, _bound(value_range.lower, 0))
            hi = min(hi, _bound(value_range.upper, MAX_SIZE))
        if not lo <= hint <= hi:
            raise Unsupported(f"size symbol {name}: its hint {hint} is outside [{lo}, {hi}]")
        self.facts[name] = (lo, hi, hint)
        return name

    def text(self, size) -> str:
        """The text of one size: an int, or a SymInt's expression over size symbols."""
        if isinstance(size, int):
            return str(size)
        if not isinstance(size, torch.SymInt):
            raise Unsupported(f"a size of type {type(size).__name__}")
        node = size.node
        expr = node.expr
        shape_env = getattr(node, "shape_env", None)
        if shape_env is not None and not expr.is_Integer:
            # The symbols Dynamo specialized since the node was made (a length it guarded
            # equal to 32) replaced by their values, as the fake tensors' sizes have them.
            expr = shape_env.replace(expr)
        if expr.is_Integer:
            return str(int(expr))
        expr = _exact_quotients(expr)
        try:
            return self._expr_text(expr, shape_env)
        except Unsupported:
            return self._derived(expr, shape_env)

    def _derived(self, expr, shape_env) -> str:
        """A size Stax's expressions do not take (a window's result, (s53 - 1)//8 + 1, in the
        regions of a ResNet's training graphs) as a size symbol of its own, with the range and
        hint Dynamo gives the expression. Its value is read at each call from an input dim that
        has it, as any symbol's, and no relation to the symbols it is computed from is assumed:
        where the graph needs one, its shape rules refuse it and the region is traced per size.
        Later sizes (strides over it) are written over the new symbol."""
        if shape_env is None or not expr.free_symbols:
            raise Unsupported(f"size expression {expr} (Stax takes sums and products of sizes)")
        # One that differs from a derived size by a constant (the placeholder (s53 - 1)//2 of
        # an input dim (s53 - 1)//2 + 1) is written over that size's symbol.
        for known, symbol in self.derived.items():
            offset = sympy.expand(expr - known)
            if offset.is_Integer:
                if offset == 0:
                    return str(symbol)
                return f"{symbol} {'-' if offset < 0 else '+'} {abs(int(offset))}"
        try:
            hint = int(shape_env.optimization_hint(expr))
            value_range = shape_env.bound_sympy(expr)
        except Exception as e:  # noqa: BLE001 - any failure: no symbol for it
            raise Unsupported(f"size expression {expr}: no hint or range ({e})") from e
        lo = max(0, _bound(value_range.lower, 0))
        hi = min(MAX_SIZE, _bound(value_range.upper, MAX_SIZE))
        if not lo <= hint <= hi:
            raise Unsupported(f"size expression {expr}: its hint {hint} is outside [{lo}, {hi}]")
        name = f"s{_DERIVED_BASE + len(self.derived)}"
        self.derived[expr] = sympy.Symbol(name, integer=True, positive=True)
        self.facts[name] = (lo, hi, hint)
        return name

    def _expr_text(self, expr, shape_env) -> str:
        if expr.is_Integer:
            return str(int(expr))
        if expr in self.derived:
            return str(self.derived[expr])
        if expr.is_Symbol:
            return self._record(expr, shape_env)
        if expr.is_Add:
            terms = [self._expr_text(t, shape_env) for t in expr.as_ordered_terms()]
            text = terms[0]
            for t in terms[1:]:
                text += f" - {t[1:]}" if t.startswith("-") else f" + {t}"
            return text
        if expr.is_Mul:
            factors = []
            for f in expr.as_ordered_factors():
                if f.is_Pow and f.exp.is_Integer and int(f.exp) > 0:
                    factors += [self._expr_text(f.base, shape_env)] * int(f.exp)
                else:
                    factors.append(self._expr_text(f, shape_env))
            if factors[0] == "-1":
                return "-" + "*".join(factors[1:])
            return "*".join(factors)
        if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
            return "*".join([self._expr_text(expr.base, shape_env)] * int(expr.exp))
        if isinstance(expr, (sympy.Max, sympy.Min)) and len(expr.args) == 2:
            # Max(1, s27) of a size Dynamo clamps: decided where a constant bounds a sum of
            # products of symbols with nonnegative coefficients (increasing in every symbol)
            # from below at every value the symbols' ranges allow.
            const = [a for a in expr.args if a.is_Integer]
            other = [a for a in expr.args if not a.is_Integer]
            if len(const) == 1 and len(other) == 1:
                least = _least_value(other[0], shape_env)
                if least is not None and least >= int(const[0]):
                    chosen = other[0] if isinstance(expr, sympy.Max) else const[0]
                    return self._expr_text(chosen, shape_env)
        raise Unsupported(f"size expression {expr} (Stax takes sums and products of sizes)")


def _exact_quotients(expr):
    """The expression with every floor division Dynamo left unsimplified whose divisor divides
    its dividend as polynomials ((s27**2)//s27, in GPT-2's training graphs) replaced by the
    quotient, exact for every value of the symbols."""
    def exact(e):
        if type(e).__name__ != "FloorDiv":
            return None
        quotient = sympy.cancel(e.args[0] / e.args[1])
        if sympy.fraction(quotient)[1] != 1 or not quotient.is_polynomial():
            return None
        if not all(c.is_Integer for c in sympy.Poly(quotient).coeffs()):
            return None
        return sympy.expand(quotient)

    return expr.replace(lambda e: exact(e) is not None, exact)


def _least_value(expr, shape_env):
    """The least value of a polynomial with nonnegative coefficients over symbols each at least
    its range's lower bound (itself at least 0), or None where that does not apply."""
    if shape_env is None or not expr.is_polynomial():
        return None
    poly = sympy.Poly(expr)
    if any(not c.is_Integer or c < 0 for c in poly.coeffs()):
        return None
    lows = {}
    for symbol in expr.free_symbols:
        value_range = shape_env.var_to_range.get(symbol)
        if value_range is None:
            return None
        lo = _bound(value_range.lower, 0)
        if lo < 0:
            return None
        lows[symbol] = lo
    return int(expr.subs(lows))


def _bound(value, default: int) -> int:
    """A ShapeEnv range's bound as an int; an infinite one (int_oo) is `default`."""
    if isinstance(value, int):
        return value
    if getattr(value, "is_Integer", False):
        return int(value)
    return default


def dim_symbol(size, derived: dict):
    """(symbol, factor) where an input dim of this size gives a symbol: a size c*s (c >= 1,
    the rows of a flattened [2, s] batch give s as well), or a size SymbolFacts._derived gave a
    symbol of its own (`derived`, SymbolFacts.derived); None for any other size."""
    if not isinstance(size, torch.SymInt):
        return None
    expr = size.node.expr
    symbol = derived.get(expr)
    if symbol is not None:
        return str(symbol), 1
    coeff, rest = expr.as_coeff_Mul()
    if rest.is_Symbol and coeff.is_Integer and int(coeff) > 0:
        return str(rest), int(coeff)
    return None


def is_symbolic_value(value) -> bool:
    """Whether a node's value is a SymInt that is not a constant (Dynamo's specializations
    applied)."""
    if not isinstance(value, torch.SymInt):
        return False
    expr = value.node.expr
    shape_env = getattr(value.node, "shape_env", None)
    if shape_env is not None and not expr.is_Integer:
        expr = shape_env.replace(expr)
    return not expr.is_Integer


def has_symbolic_layout(t) -> bool:
    return any(not isinstance(s, int) for s in list(t.shape) + list(t.stride()))
