"""The bridge's layout rules, in one place.

A tensor layout is (sizes, strides). Stax's generated wrapper checks an input's stride only
along dimensions of size greater than 1 (src/codegen/cpp_codegen.cpp: a dimension of size 1
is never stepped along), so layouts that differ only there are one layout: `same_layout`
compares them so and `layout_key` names them so (the key under which a compiled variant is
kept).

An output of a region is handed over in the layout PyTorch gives its value, because the
PyTorch code after the region may depend on it. How depends on the layout:
- dense in some dimension order (`dense_order`): Stax writes it in that order directly;
- otherwise (gaps, or several elements at one address), the value is a view
  in eager too, and it is made the way eager makes it: the view ops are replayed on their
  storage root, a dense tensor that Stax computes or a region input (view_outputs.py).
  Copying into such a layout cannot work when elements overlap.
"""

from __future__ import annotations


def at_hints(values) -> tuple:
    """Sizes or strides with each SymInt at Dynamo's hint, read without a guard: comparing a
    SymInt (or int() of one) adds a guard, and an equality guard specializes the symbol (a
    BERT's sequence length became 32 that way, a recompile at every length). The layout rules
    below decide on the hints; over symbolic sizes their answer is structural (strides are
    products of sizes), the same at every size the symbols' facts allow."""
    out = []
    for v in values:
        if isinstance(v, int):
            out.append(v)
            continue
        env = v.node.shape_env
        out.append(int(env.optimization_hint(v.node.expr) if env is not None else v.node.hint))
    return tuple(out)


def same_layout(sizes, a, b) -> bool:
    """Whether two stride tuples address the elements of `sizes` alike (strides of
    dimensions of size 1 do not matter, nor any of an empty tensor)."""
    if 0 in sizes:
        return True
    return all(n == 1 or x == y for n, x, y in zip(sizes, a, b))


def layout_key(sizes, strides) -> tuple:
    """The layout as Stax's wrapper checks it: strides of dimensions of size 0 or 1, which
    it does not check, are 0 (so such layouts share one compiled variant)."""
    sizes = tuple(int(n) for n in sizes)
    return sizes, tuple(0 if n <= 1 else int(s) for n, s in zip(sizes, strides))


def dense_order(sizes, strides):
    """The dimension order (outermost first) in which `strides` are contiguous, or None when
    they are not dense in any order (gaps, overlaps)."""
    order = sorted(range(len(sizes)), key=lambda d: (-strides[d], d))
    expected = 1
    for d in reversed(order):
        if sizes[d] != 1 and strides[d] != expected:
            return None
        expected *= sizes[d]
    return order


def provably_non_overlapping(sizes, strides) -> bool:
    """Whether no two elements of the layout share an address, by the sufficient test that,
    sorted by stride, each dimension steps past the whole extent of the smaller ones. False
    for stride-0 dimensions and overlapping strides (unfold with a step below its size), and
    for the rare interleavings that do not overlap but fail the test: a caller treats False
    as "may overlap", which is only ever the safe side."""
    if any(int(n) == 0 for n in sizes):
        return True
    dims = sorted((abs(int(s)), int(n)) for n, s in zip(sizes, strides) if int(n) != 1)
    extent = 0  # the largest offset reachable with the dimensions seen so far
    for stride, n in dims:
        if stride <= extent:
            return False
        extent += stride * (n - 1)
    return True
