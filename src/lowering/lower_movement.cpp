// Lowering of the data-movement ops that copy (issue 6, point 6), each as an index function
// of its output, never a copy loop of its own:
//  * cat, stack, constant_pad_nd, slice_scatter and select_scatter select an operand region
//    by a mask computed from index values; each region's loads run under push_mask/pop_mask (so
//    they never read outside the operand) and the regions are combined with Where;
//  * flip and roll rewrite the index (roll with modulo);
//  * gather, index_select, embedding and index.Tensor load the index tensor, turn the value
//    into an index variable with OpsHandler::indirect_index (which checks its range) and load
//    the source through it.
// Argument meanings come from ir/movement_args.h, shared with the eager interpreter.
#include <cmath>

#include "ir/movement_args.h"
#include "lowering/lowerer.h"
#include "lowering/region_masks.h"

namespace stax::lowering {

namespace {

// The cost of a region mask: two comparisons and a conjunction per bounded side.
BodyStats mask_stats(int bounded_sides) {
  BodyStats s;
  for (int k = 0; k < bounded_sides; ++k) {
    s += op_stats(PointwiseOp::Ge);
    s += op_stats(PointwiseOp::LogicalAnd);
  }
  s += op_stats(PointwiseOp::Where);
  return s;
}

}  // namespace

LoweredValue Lowerer::lower_cat(const ir::Node& node, const ir::Value& out) {
  ir::CatArgs c = ir::cat_args(graph_, node);
  // Issue 33: each part's extent along dim, and its offset, as expressions (a cache of s0
  // tokens and one new token: parts [0, s0) and [s0, s0 + 1)).
  std::vector<Expr> part_offsets, part_sizes;
  Expr running(0);
  for (const ir::CatPart& part : c.parts) {
    const Expr size = c.stacked
                          ? Expr(1)
                          : sizes_of(graph_.value(part.value).type).at(static_cast<size_t>(c.dim));
    part_offsets.push_back(running);
    part_sizes.push_back(size);
    running = running + size;
  }
  struct Region {
    Loader loader;
    Expr begin;
    Expr end;
  };
  std::vector<Region> regions;
  LoweredValue v = computed_value(node, out);
  const DType dtype = out.type.dtype;
  for (size_t p = 0; p < c.parts.size(); ++p) {
    const ir::CatPart& part = c.parts[p];
    if (part_sizes[p] == Expr(0)) continue;  // never selected
    const LoweredValue& operand = value(part.value.index);
    Loader inner = operand.loader;
    const DType from = operand.dtype;
    const int64_t dim = c.dim;
    const Expr offset = part_offsets[p];
    const bool stacked = c.stacked;
    Loader loader = [inner, from, dtype, dim, offset, stacked](OpsHandler& h,
                                                               const std::vector<Expr>& idx) {
      std::vector<Expr> at = idx;
      if (stacked) {
        at.erase(at.begin() + dim);
      } else {
        at[static_cast<size_t>(dim)] = idx[static_cast<size_t>(dim)] - offset;
      }
      OpsValue x = inner(h, at);
      return from == dtype ? x : h.to_dtype(x, dtype);
    };
    regions.push_back({loader, offset, offset + part_sizes[p]});
    v.stats += operand.stats;
    v.stats += mask_stats(2);
  }
  const auto dim = static_cast<size_t>(c.dim);
  v.loader = [regions, dim, dtype](OpsHandler& h, const std::vector<Expr>& idx) {
    if (regions.empty()) return h.constant(0, dtype);  // an empty result: never run
    // Region k holds where begin_k <= idx < end_k; the first region needs no lower bound and
    // the last no upper bound, and a single region no mask at all.
    std::optional<OpsValue> result;
    for (size_t k = regions.size(); k-- > 0;) {
      const Region& r = regions[k];
      std::optional<OpsValue> mask;
      if (k > 0) mask = index_at_least(h, idx[dim], r.begin);
      if (k + 1 < regions.size()) mask = both(h, mask, index_below(h, idx[dim], r.end));
      if (!mask) {
        result = r.loader(h, idx);
        continue;
      }
      h.push_mask(*mask);
      OpsValue x = r.loader(h, idx);
      h.pop_mask();
      result = result ? select_where(h, *mask, x, *result) : x;
    }
    return *result;
  };
  v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  return v;
}

LoweredValue Lowerer::lower_scatter_window(const ir::Node& node, const ir::Value& out) {
  const ir::ScatterWindowArgs a = ir::scatter_window_args(graph_, node);
  const LoweredValue& self = value(std::get<ir::ValueRef>(node.args[0]).index);
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[1]).index);
  LoweredValue v = computed_value(node, out);
  const auto dim = static_cast<size_t>(a.window.dim);
  const bool selected = a.selected;
  const int64_t step = a.window.step;
  // The window [start, end) by step, past its last index; static, or (issue 33) over the size
  // symbols, proved within the dim for every value of them, src filling it exactly.
  Expr start(a.window.start);
  Expr end(a.window.start + (a.window.length - 1) * step + 1);
  bool empty = a.window.length == 0;
  if (has_symbolic_sizes(node)) {
    ir::SymbolicWindow w;
    try {
      w = ir::symbolic_window(graph_, node);
    } catch (const ir::GraphError& e) {
      throw index::SymbolicSizesRefused("lowering " + node.op + ": " + e.what());
    }
    start = w.start;
    end = w.end;
    const Expr length = step == 1 ? end - start : floordiv(end - start + Expr(step - 1), step);
    std::vector<Expr> expected = v.sizes;
    if (selected) {
      expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(dim));
    } else {
      expected[dim] = length;
    }
    if (src.sizes != expected) {
      throw index::SymbolicSizesRefused("lowering " + node.op + ": src's sizes " +
                                        index::format_exprs(src.sizes) + " fill the window " +
                                        index::format_exprs(expected) +
                                        " only for some values of the size symbols");
    }
    empty = false;  // an empty window at some sizes: the masks below keep self there
  }
  const Expr size = v.sizes[dim];
  const bool from_first = start == Expr(0);
  const bool to_last = end == size;
  const bool covers_all = !empty && from_first && to_last && step == 1;
  v.stats += src.stats;
  if (!covers_all) {
    v.stats += self.stats;
    v.stats += mask_stats(!from_first + !to_last + (step > 1));
  }
  Loader self_loader = self.loader, src_loader = src.loader;
  v.loader = [=](OpsHandler& h, const std::vector<Expr>& idx) {
    if (empty) return self_loader(h, idx);  // an empty slice: self unchanged
    // src's element for idx: the window position (idx - start) / step along dim, or no dim
    // at all for a select; read only where idx is in the window.
    std::vector<Expr> at = idx;
    if (selected) {
      at.erase(at.begin() + static_cast<std::ptrdiff_t>(dim));
    } else {
      at[dim] = step == 1 ? idx[dim] - start : floordiv(idx[dim] - start, step);
    }
    if (covers_all) return src_loader(h, at);
    std::optional<OpsValue> in_window;
    if (!from_first) in_window = index_at_least(h, idx[dim], start);
    if (!to_last) in_window = both(h, in_window, index_below(h, idx[dim], end));
    if (step > 1) {
      const OpsValue on_step = apply(h, PointwiseOp::Eq,
                                     {h.index_value(mod(idx[dim] - start, step), DType::Int64),
                                      h.constant(int64_t{0}, DType::Int64)});
      in_window = both(h, in_window, on_step);
    }
    if (!in_window) in_window = h.constant(true, DType::Bool);
    h.push_mask(*in_window);
    OpsValue x = src_loader(h, at);
    h.pop_mask();
    return select_where(h, *in_window, x, self_loader(h, idx));
  };
  v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  return v;
}

LoweredValue Lowerer::lower_pad(const ir::Node& node, const ir::Value& out) {
  const ir::PadArgs p = ir::pad_args(graph_, node);
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  // Issue 33: the input's sizes may be expressions over size symbols; the pads are numbers.
  const std::vector<Expr> in_sizes = src.sizes;
  std::vector<Expr> offsets;
  int bounded_sides = 0;
  for (size_t d = 0; d < in_sizes.size(); ++d) {
    offsets.push_back(-p.before[d]);
    bounded_sides += (p.before[d] > 0) + (p.after[d] > 0);
  }
  LoweredValue v = remapped(src, sizes_of(out.type), shift_index(offsets));
  append_unique(v.origin, node.op);
  v.composed = composed_over_operands(node);
  if (bounded_sides == 0) {
    // Only cuts: the result is a window of the input (eager still copies it).
    v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
    return v;
  }
  v.pure_view = false;
  v.stats += mask_stats(bounded_sides);
  Loader inner = v.loader;
  const double fill = p.value;
  const DType dtype = src.dtype;
  const std::vector<int64_t> before = p.before;
  const std::vector<int64_t> after = p.after;
  v.loader = [inner, fill, dtype, before, after, in_sizes](OpsHandler& h,
                                                           const std::vector<Expr>& idx) {
    std::optional<OpsValue> mask;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (before[d] > 0) mask = both(h, mask, index_at_least(h, idx[d], before[d]));
      if (after[d] > 0) mask = both(h, mask, index_below(h, idx[d], Expr(before[d]) + in_sizes[d]));
    }
    h.push_mask(*mask);
    OpsValue x = inner(h, idx);
    h.pop_mask();
    // The fill value as eager stores it: integers truncated, bool nonzero (checked to fit),
    // floats rounded once from the literal (a float64 constant converted to the dtype).
    OpsValue filler;
    if (dtype == DType::Bool) {
      filler = h.constant(fill != 0.0, dtype);
    } else if (is_integral(dtype)) {
      filler = h.constant(std::trunc(fill), dtype);
    } else {
      filler = h.to_dtype(h.constant(fill, DType::Float64), dtype);
    }
    return select_where(h, *mask, x, filler);
  };
  v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  return v;
}

LoweredValue Lowerer::lower_flip_roll(const ir::Node& node, const ir::Value& out) {
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  IndexMap map;
  if (node.op == "flip") {
    map = flip_index(src.sizes, ir::flip_dims(graph_, node));  // size - 1 - i at any size
  } else {
    // Over sizes known only at run time (issue 33) the shifts are wrapped by each call's
    // sizes, in the index (roll_index), not at the hints.
    const ir::RollArgs r = ir::roll_args(graph_, node);
    const bool symbolic = has_symbolic_sizes(node);
    map = r.flattened ? flat_roll_index(src.sizes, symbolic ? r.raw_flat_shift : r.flat_shift)
                      : roll_index(src.sizes, symbolic ? r.raw_shifts : r.shifts);
    std::vector<Expr> probe;
    for (size_t d = 0; d < src.sizes.size(); ++d)
      probe.push_back(Expr::var("i" + std::to_string(d)));
    map(probe);  // a size the index algebra takes no divisor of is refused here, by name
  }
  LoweredValue v = remapped(src, sizes_of(out.type), map);
  append_unique(v.origin, node.op);
  v.composed = composed_over_operands(node);
  v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  return v;
}

LoweredValue Lowerer::lower_indirect(const ir::Node& node, const ir::Value& out) {
  const ir::IndirectArgs a = ir::indirect_args(graph_, node);
  if (has_symbolic_sizes(node)) {
    // Issue 33: the index tensors and the dims not selected along may be symbolic (token ids
    // of s0 positions into a static table); a selected dim's size bounds the index values,
    // and that bound must be a number.
    const std::vector<Expr> source = sizes_of(graph_.value(a.source).type);
    for (const ir::IndexTerm& t : a.terms) {
      if (t.dim >= 0 && !source.at(static_cast<size_t>(t.dim)).is_constant()) {
        refuse_symbolic_sizes(node);
      }
    }
    if (a.empty_result_rule || node.op == "index") refuse_symbolic_sizes(node);
  }
  const LoweredValue& source = value(a.source.index);
  LoweredValue v = computed_value(node, out);
  v.stats = source.stats;
  Loader source_loader = source.loader;
  // Each term's index loader and rule (the rule's message names the node).
  struct Term {
    Loader loader;
    ir::IndexRule rule;
    std::vector<int64_t> index_dims;
  };
  std::vector<Term> terms;
  for (const ir::IndexTerm& t : a.terms) {
    const LoweredValue& index = value(t.index.index);
    v.stats += index.stats;
    ir::IndexRule rule = t.rule;
    rule.message = current_node_ + ": " + rule.message;
    terms.push_back(Term{index.loader, std::move(rule), t.index_dims});
  }
  const DType v_dtype = v.dtype;
  if (a.empty_result_rule) {
    // The result's loops run no iteration, yet eager checks every index value: a buffer over
    // the index alone stores the values it checked, and the result reads it (the read, never
    // executed, orders the check before the result's consumers and keeps it alive).
    ir::IndexRule check = *a.empty_result_rule;
    check.message = current_node_ + ": " + check.message;
    const LoweredValue& index = value(a.term().index.index);
    const Loader index_loader = index.loader;
    const ir::Value& index_value = graph_.value(a.term().index);
    ComputedBuffer buf;
    buf.name = next_buffer_name();
    buf.dtype = index.dtype;
    buf.sizes = sizes_of(index_value.type);
    buf.strides = index::contiguous_strides(buf.sizes);
    buf.ranges = buf.sizes;
    const auto strides = buf.strides;
    buf.output_index = [strides](const std::vector<Expr>& idx) {
      return strided_offset(idx, strides);
    };
    buf.value = [index_loader, check](OpsHandler& h, const std::vector<Expr>& idx,
                                      const std::vector<Expr>&) {
      const OpsValue x = index_loader(h, idx);
      h.indirect_index(x, check);
      return x;
    };
    buf.origin = "index check";
    result_.log.push_back(buf.name + " (index check): " + node.op +
                          "'s result is empty, its index is not");
    const LoweredValue checked = add_buffer(std::move(buf), index.composed);
    const Loader checked_loader = checked.loader;
    const std::vector<Expr> first(checked.sizes.size(), Expr(0));
    v.loader = [checked_loader, first, v_dtype](OpsHandler& h, const std::vector<Expr>&) {
      return convert(h, checked_loader(h, first), v_dtype);
    };
    v.stats = checked.stats;
    return v;
  }
  if (!out.type.is_symbolic() && out.type.numel() == 0) {
    // No element to compute and eager checks nothing: read nothing (an index over a loop of
    // no iteration has no range to bound the indirect read by).
    v.loader = [v_dtype](OpsHandler& h, const std::vector<Expr>&) {
      return h.constant(0, v_dtype);
    };
    return v;
  }
  const std::vector<int64_t> source_dims = a.source_dims;
  v.loader = [source_dims, terms, source_loader, v_dtype](OpsHandler& h,
                                                          const std::vector<Expr>& idx) {
    std::vector<Expr> selected;
    for (const Term& t : terms) {
      std::vector<Expr> at;
      for (int64_t d : t.index_dims) at.push_back(d < 0 ? Expr(0) : idx[static_cast<size_t>(d)]);
      selected.push_back(h.indirect_index(t.loader(h, at), t.rule));
    }
    // Through an empty dim every index is refused (the run raises): nothing to read.
    for (const Term& t : terms) {
      if (t.rule.size == 0) return h.constant(0, v_dtype);
    }
    std::vector<Expr> src;
    for (int64_t d : source_dims) {
      const auto k = ir::IndirectArgs::term_of(d);
      src.push_back(k ? selected[*k] : idx[static_cast<size_t>(d)]);
    }
    return source_loader(h, src);
  };
  v.stats.index_divisions = measure_index_divisions(v.loader, v.sizes.size());
  return v;
}

}  // namespace stax::lowering
