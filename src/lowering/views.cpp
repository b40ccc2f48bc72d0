// Index maps and strided layouts of the view ops.
#include "lowering/views.h"

#include <optional>
#include <stdexcept>

#include "index/shape_exprs.h"

namespace stax::lowering {

using index::Expr;

IndexMap permute_index(const std::vector<int64_t>& dims) {
  return [dims](const std::vector<Expr>& out) {
    std::vector<Expr> in(out.size());
    for (size_t k = 0; k < dims.size(); ++k) in[static_cast<size_t>(dims[k])] = out[k];
    return in;
  };
}

IndexMap unsqueeze_index(int64_t dim) {
  return [dim](const std::vector<Expr>& out) {
    std::vector<Expr> in;
    for (size_t k = 0; k < out.size(); ++k) {
      if (static_cast<int64_t>(k) != dim) in.push_back(out[k]);
    }
    return in;
  };
}

IndexMap squeeze_index(const std::vector<bool>& removed) {
  return [removed](const std::vector<Expr>& out) {
    std::vector<Expr> in;
    size_t k = 0;
    for (bool gone : removed) in.push_back(gone ? Expr(0) : out[k++]);
    return in;
  };
}

IndexMap broadcast_index(const std::vector<Expr>& in_sizes, const std::vector<Expr>& out_sizes) {
  return [in_sizes, out_sizes](const std::vector<Expr>& out) {
    std::vector<Expr> in;
    const size_t lead = out_sizes.size() - in_sizes.size();
    for (size_t d = 0; d < in_sizes.size(); ++d) {
      const bool broadcast = in_sizes[d] == Expr(1) && out_sizes[lead + d] != Expr(1);
      in.push_back(broadcast ? Expr(0) : out[lead + d]);
    }
    return in;
  };
}

namespace {

// The dims [in_begin, in_end) of the input and [out_begin, out_end) of the output of a reshape
// that hold the same elements: their size products are equal, and no shorter prefix splits.
struct ReshapeGroup {
  size_t in_begin, in_end, out_begin, out_end;
};

// The reshape cut into its smallest independent groups (e.g. (4, 768, 196) -> (4, 768, 14, 14)
// is {4}->{4}, {768}->{768}, {196}->{14, 14}); nullopt when a size is 0 (no element to map) or
// when no grouping has equal products at every size. Which side takes the next dim is decided
// at the hints; a group closes only where its products are equal as expressions.
std::optional<std::vector<ReshapeGroup>> reshape_groups(const std::vector<Expr>& in_sizes,
                                                        const std::vector<Expr>& out_sizes,
                                                        const index::SymbolTable& symbols) {
  for (const auto* sizes : {&in_sizes, &out_sizes}) {
    for (const Expr& s : *sizes) {
      if (s == Expr(0)) return std::nullopt;
    }
  }
  const auto hints = index::hint_values(symbols);
  auto at_hint = [&](const Expr& e) -> std::optional<int64_t> {
    if (const auto c = e.constant_value()) return c;
    for (const auto& name : index::free_vars(e)) {
      if (!hints.count(name)) return std::nullopt;
    }
    return index::evaluate(e, hints);
  };
  std::vector<ReshapeGroup> groups;
  size_t i = 0;
  size_t j = 0;
  while (i < in_sizes.size() || j < out_sizes.size()) {
    ReshapeGroup g{i, i, j, j};
    Expr in_product(1);
    Expr out_product(1);
    do {
      const auto in_value = at_hint(in_product);
      const auto out_value = at_hint(out_product);
      if (!in_value || !out_value) return std::nullopt;
      const bool take_in =
          i < in_sizes.size() && (*in_value <= *out_value || j == out_sizes.size());
      if (take_in) {
        in_product = in_product * in_sizes[i++];
      } else if (j < out_sizes.size()) {
        out_product = out_product * out_sizes[j++];
      } else {
        return std::nullopt;  // no grouping holds at every size: keep the flat form
      }
    } while (in_product != out_product);
    g.in_end = i;
    g.out_end = j;
    groups.push_back(g);
  }
  return groups;
}

// Row-major reshape of the output index `out[out_begin, out_end)` to input sizes
// `in_sizes[in_begin, in_end)`, through the group's flat index.
void reshape_group(const std::vector<Expr>& in_sizes, const std::vector<Expr>& out_sizes,
                   const ReshapeGroup& g, const std::vector<Expr>& out, std::vector<Expr>& in) {
  Expr flat(0);
  Expr stride(1);
  for (size_t k = g.out_end; k-- > g.out_begin;) {
    flat = flat + out[k] * stride;
    stride = stride * out_sizes[k];
  }
  stride = Expr(1);
  for (size_t d = g.in_end; d-- > g.in_begin;) {
    in[d] = d == g.in_begin ? index::floordiv(flat, stride)
                            : index::mod(index::floordiv(flat, stride), in_sizes[d]);
    stride = stride * in_sizes[d];
  }
}

}  // namespace

IndexMap reshape_index(const std::vector<Expr>& in_sizes, const std::vector<Expr>& out_sizes,
                       const index::SymbolTable& symbols) {
  // Each group of dims is reshaped on its own, not through the whole tensor's flat index. Over
  // in-range indices both are equal, and the simplifier reduces the flat form to this when the
  // loop ranges prove every index in range. But an index shifted by an operand region of cat or
  // padding (x - 1 for x in [0, n), valid only under the region's mask) is not provably in range,
  // and through the flat form it leaks floor divisions and modulos into every dim: ViT's
  // cat([cls, patches.transpose(1, 2)]) made the channel index of the convolution load
  // (c + (x - 1 + 195) // 196 + 767) % 768, with no constant stride along c, so each layernorm
  // over the residual stream ran scalar. Grouped, the channel index stays c.
  const std::optional<std::vector<ReshapeGroup>> groups =
      reshape_groups(in_sizes, out_sizes, symbols);
  const ReshapeGroup whole{0, in_sizes.size(), 0, out_sizes.size()};
  return [in_sizes, out_sizes, groups, whole](const std::vector<Expr>& out) {
    std::vector<Expr> in(in_sizes.size());
    if (!groups) {
      reshape_group(in_sizes, out_sizes, whole, out, in);
      return in;
    }
    for (const ReshapeGroup& g : *groups) reshape_group(in_sizes, out_sizes, g, out, in);
    return in;
  };
}

IndexMap window_index(int64_t dim, const Expr& start, int64_t step) {
  return [dim, start, step](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    in[static_cast<size_t>(dim)] = start + out[static_cast<size_t>(dim)] * Expr(step);
    return in;
  };
}

IndexMap select_index(int64_t dim, const Expr& index) {
  return [dim, index](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    in.insert(in.begin() + dim, index);
    return in;
  };
}

IndexMap flip_index(const std::vector<Expr>& sizes, const std::vector<bool>& flipped) {
  return [sizes, flipped](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    for (size_t d = 0; d < in.size(); ++d) {
      if (flipped[d]) in[d] = sizes[d] - Expr(1) - out[d];
    }
    return in;
  };
}

namespace {

// out - shift brought into [0, size), its dividend non-negative: out + size - shift for a
// shift already in [0, size) (a number size), else out - c + max(c, 0) * size, which is at
// least 0 at every size >= 1.
Expr rolled(const Expr& out, const Expr& size, int64_t shift) {
  if (!index::is_divisor(size)) {
    throw index::SymbolicSizesRefused("lowering roll: a dim of size " + index::to_string(size) +
                                      " is no divisor the index algebra takes");
  }
  if (size.is_constant()) return index::mod(out + size - Expr(shift), size);
  return index::mod(out - Expr(shift) + Expr(std::max<int64_t>(shift, 0)) * size, size);
}

}  // namespace

IndexMap roll_index(const std::vector<Expr>& sizes, const std::vector<int64_t>& shifts) {
  return [sizes, shifts](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    for (size_t d = 0; d < in.size(); ++d) {
      if (shifts[d] != 0) in[d] = rolled(out[d], sizes[d], shifts[d]);
    }
    return in;
  };
}

IndexMap flat_roll_index(const std::vector<Expr>& sizes, int64_t flat_shift) {
  const Expr numel = index::product(sizes);
  // reshape_index(in, out) maps an index of `out` sizes to one of `in` sizes.
  IndexMap flatten = reshape_index(std::vector<Expr>{numel}, sizes);
  IndexMap unflatten = reshape_index(sizes, std::vector<Expr>{numel});
  return [numel, flat_shift, unflatten, flatten](const std::vector<Expr>& out) {
    const Expr flat = flatten(out)[0];
    if (flat_shift == 0) return out;
    return unflatten({rolled(flat, numel, flat_shift)});
  };
}

IndexMap shift_index(const std::vector<Expr>& offsets) {
  return [offsets](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    for (size_t d = 0; d < in.size(); ++d) in[d] = out[d] + offsets[d];
    return in;
  };
}

Expr strided_offset(const std::vector<Expr>& idx, const std::vector<Expr>& strides,
                    const Expr& offset) {
  Expr result = offset;
  for (size_t k = 0; k < idx.size(); ++k) result = result + idx[k] * strides[k];
  return result;
}

}  // namespace stax::lowering
