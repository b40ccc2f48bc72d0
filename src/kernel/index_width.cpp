// The int32 bounds of index arithmetic (index_width.h): interval magnitudes over the canonical
// polynomial form, taken the way the printed C++ evaluates it.
#include "kernel/index_width.h"

#include <algorithm>

#include "index/node.h"
#include "index/shape_exprs.h"
#include "kernel/kernel_ir_visitor.h"

namespace stax::kernel {

namespace {

using index::detail::Atom;
using index::detail::AtomKind;
using index::detail::Term;

// 128-bit so that products of int64 bounds cannot wrap before they are compared.
using Wide = __int128;
constexpr Wide kInt64Max = static_cast<Wide>(INT64_MAX);

Wide magnitude_of(int64_t v) {
  return v < 0 ? -static_cast<Wide>(v) : static_cast<Wide>(v);
}

// What the printed C++ of an expression computes: `largest` bounds the magnitude of every
// intermediate value, [lo, hi] the result.
struct Reach {
  Wide largest = 0;
  Wide lo = 0;
  Wide hi = 0;
};

Wide magnitude_of(Wide lo, Wide hi) {
  return std::max(lo < 0 ? -lo : lo, hi < 0 ? -hi : hi);
}

std::optional<Reach> reach(const index::Expr& e, const index::Domain& ranges);

std::optional<Reach> atom_reach(const Atom& a, const index::Domain& ranges) {
  if (a.kind == AtomKind::kVar) {
    // A loop variable reaches below its extent's largest value; a size symbol (issue 33) its
    // facts' upper end.
    if (auto it = ranges.extents.find(a.name); it != ranges.extents.end()) {
      const auto extent = index::upper_bound(it->second, ranges.symbols);
      if (!extent || *extent < 1) return std::nullopt;
      return Reach{*extent - 1, 0, *extent - 1};
    }
    if (auto it = ranges.symbols.find(a.name); it != ranges.symbols.end()) {
      return Reach{it->second.hi, it->second.lo, it->second.hi};
    }
    return std::nullopt;
  }
  const auto dividend = reach(a.arg, ranges);
  if (!dividend) return std::nullopt;
  const auto divisor = a.constant_divisor();
  if (!divisor) return std::nullopt;  // a size symbol: its reach is not proved here
  const Wide d = *divisor;
  Reach r{std::max(dividend->largest, d), 0, d - 1};  // d mod c is within [0, c - 1]
  if (a.kind == AtomKind::kFloorDiv) {
    auto floor_div = [d](Wide x) { return x >= 0 ? x / d : -((-x + d - 1) / d); };
    r.lo = floor_div(dividend->lo);
    r.hi = floor_div(dividend->hi);
  }
  return r;
}

std::optional<Reach> reach(const index::Expr& e, const index::Domain& ranges) {
  const auto& node = e.node();
  Reach out;
  out.largest = magnitude_of(node.constant);
  // Partial sums, in whatever order they are added, stay within the sum of the terms'
  // negative parts and the sum of their positive parts.
  Wide below = std::min<Wide>(node.constant, 0);
  Wide above = std::max<Wide>(node.constant, 0);
  out.lo = out.hi = node.constant;
  for (const Term& t : node.terms) {
    // The printer writes coeff*f0*f1*...: every prefix of the product is computed.
    Wide lo = t.coeff;
    Wide hi = t.coeff;
    out.largest = std::max(out.largest, magnitude_of(lo, hi));
    for (const Atom& a : t.factors) {
      const auto f = atom_reach(a, ranges);
      if (!f) return std::nullopt;
      const Wide p[4] = {lo * f->lo, lo * f->hi, hi * f->lo, hi * f->hi};
      lo = *std::min_element(p, p + 4);
      hi = *std::max_element(p, p + 4);
      out.largest = std::max({out.largest, f->largest, magnitude_of(lo, hi)});
      if (out.largest > kInt64Max) return std::nullopt;
    }
    below += std::min<Wide>(lo, 0);
    above += std::max<Wide>(hi, 0);
    out.lo += lo;
    out.hi += hi;
    out.largest = std::max(out.largest, magnitude_of(below, above));
    if (out.largest > kInt64Max) return std::nullopt;
  }
  return out;
}

std::optional<int64_t> narrow(std::optional<Wide> w) {
  if (!w || *w > kInt64Max) return std::nullopt;
  return static_cast<int64_t>(*w);
}

}  // namespace

std::optional<int64_t> index_magnitude(const index::Expr& e, const index::Domain& ranges) {
  const auto r = reach(e, ranges);
  if (!r) return std::nullopt;
  return narrow(r->largest);
}

std::optional<int64_t> index_magnitude_as_printed(const index::Expr& e,
                                                  const index::Domain& ranges) {
  const auto given = index_magnitude(e, ranges);
  const auto simplified = index_magnitude(index::simplify(e, ranges), ranges);
  if (!given || !simplified) return std::nullopt;
  return std::max(*given, *simplified);
}

std::optional<int64_t> loop_header_magnitude(const Loop& loop, const index::Domain& ranges) {
  const auto begin = index_magnitude_as_printed(loop.begin, ranges);
  const auto end = index_magnitude_as_printed(loop.end, ranges);
  const auto first = index::bounds(loop.begin, ranges);
  const auto stop = index::bounds(loop.end, ranges);
  const auto range = ranges.extents.find(loop.var);
  if (!begin || !end || !first || !stop || range == ranges.extents.end()) return std::nullopt;
  const auto extent = index::upper_bound(range->second, ranges.symbols);
  if (!extent) return std::nullopt;
  const Wide last_stop = loop.limit ? std::min<Wide>(stop->hi, *loop.limit) : stop->hi;
  // Every index bound takes the variable within [0, range - 1]; a loop beyond it proves
  // nothing.
  if (first->lo < 0 || last_stop > *extent) return std::nullopt;
  // The last iteration starts below the stop; its increment may pass the stop by step - 1.
  const Wide overshoot = last_stop - 1 + loop.step;
  Wide largest = std::max<Wide>({*begin, *end, overshoot, magnitude_of(loop.step)});
  if (loop.limit) largest = std::max(largest, magnitude_of(*loop.limit));
  return narrow(largest);
}

std::optional<int64_t> index_value_magnitude(const Let& let, const index::Domain& ranges) {
  const auto start = index_magnitude_as_printed(let.index, ranges);
  if (!start) return std::nullopt;
  const Wide lanes = static_cast<Wide>(let.type.lanes - 1) * magnitude_of(let.step);
  return narrow(std::max<Wide>({*start, *start + lanes, magnitude_of(let.step)}));
}

void for_each_index_expr(const Kernel& kernel,
                         const std::function<void(const index::Expr&, const std::string&)>& f) {
  for_each_stmt(kernel.body, [&](const Stmt& s) {
    for_each_index(s, [&](const index::Expr& e, IndexRole role) {
      switch (role) {
        case IndexRole::LoopBegin:
          return f(e, "the start of loop " + s.loop->var);
        case IndexRole::LoopEnd:
          return f(e, "the end of loop " + s.loop->var);
        case IndexRole::Load:
          return f(e, "load of " + s.let.access.buffer);
        case IndexRole::Store:
          return f(e, "store to " + s.access.buffer);
        case IndexRole::GatherBase:
          return;  // not printed: the offsets carry the addresses
        case IndexRole::IndexValue:
          return f(e, "index value tmp" + std::to_string(s.let.id));
        case IndexRole::DefineIndex:
          return f(e, "index " + s.name);
        // The printed base offsets; transpose_tile steps through the block in int64.
        case IndexRole::TransposeSource:
          return f(e, "transpose of " + s.transpose.source.buffer);
        case IndexRole::TransposeDestination:
          return f(e, "transpose into " + s.transpose.destination.buffer);
      }
    });
  });
}

}  // namespace stax::kernel
