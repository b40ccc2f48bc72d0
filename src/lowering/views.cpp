// Index maps and strided layouts of the view ops.
#include "lowering/views.h"

#include <stdexcept>

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

IndexMap broadcast_index(const std::vector<int64_t>& in_sizes,
                         const std::vector<int64_t>& out_sizes) {
  return [in_sizes, out_sizes](const std::vector<Expr>& out) {
    std::vector<Expr> in;
    const size_t lead = out_sizes.size() - in_sizes.size();
    for (size_t d = 0; d < in_sizes.size(); ++d) {
      const bool broadcast = in_sizes[d] == 1 && out_sizes[lead + d] != 1;
      in.push_back(broadcast ? Expr(0) : out[lead + d]);
    }
    return in;
  };
}

IndexMap reshape_index(const std::vector<int64_t>& in_sizes,
                       const std::vector<int64_t>& out_sizes) {
  return [in_sizes, out_sizes](const std::vector<Expr>& out) {
    Expr flat(0);
    int64_t stride = 1;
    for (size_t k = out_sizes.size(); k-- > 0;) {
      flat = flat + out[k] * Expr(stride);
      stride *= out_sizes[k];
    }
    std::vector<Expr> in(in_sizes.size());
    stride = 1;
    for (size_t d = in_sizes.size(); d-- > 0;) {
      in[d] = d == 0 ? index::floordiv(flat, stride)
                     : index::mod(index::floordiv(flat, stride), in_sizes[d]);
      stride *= in_sizes[d];
    }
    return in;
  };
}

IndexMap window_index(int64_t dim, int64_t start, int64_t step) {
  return [dim, start, step](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    in[static_cast<size_t>(dim)] = Expr(start) + out[static_cast<size_t>(dim)] * Expr(step);
    return in;
  };
}

IndexMap select_index(int64_t dim, int64_t index) {
  return [dim, index](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    in.insert(in.begin() + dim, Expr(index));
    return in;
  };
}

IndexMap flip_index(const std::vector<int64_t>& sizes, const std::vector<bool>& flipped) {
  return [sizes, flipped](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    for (size_t d = 0; d < in.size(); ++d) {
      if (flipped[d]) in[d] = Expr(sizes[d] - 1) - out[d];
    }
    return in;
  };
}

IndexMap roll_index(const std::vector<int64_t>& sizes, const std::vector<int64_t>& shifts) {
  return [sizes, shifts](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    for (size_t d = 0; d < in.size(); ++d) {
      // out - shift, brought into [0, size): the dividend stays non-negative.
      if (shifts[d] != 0) in[d] = index::mod(out[d] + Expr(sizes[d] - shifts[d]), sizes[d]);
    }
    return in;
  };
}

IndexMap flat_roll_index(const std::vector<int64_t>& sizes, int64_t flat_shift) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  // reshape_index(in, out) maps an index of `out` sizes to one of `in` sizes.
  IndexMap flatten = reshape_index(std::vector<int64_t>{numel}, sizes);
  IndexMap unflatten = reshape_index(sizes, std::vector<int64_t>{numel});
  return [numel, flat_shift, unflatten, flatten](const std::vector<Expr>& out) {
    const Expr flat = flatten(out)[0];
    if (flat_shift == 0) return out;
    return unflatten({index::mod(flat + Expr(numel - flat_shift), numel)});
  };
}

IndexMap shift_index(const std::vector<int64_t>& offsets) {
  return [offsets](const std::vector<Expr>& out) {
    std::vector<Expr> in = out;
    for (size_t d = 0; d < in.size(); ++d) in[d] = out[d] + Expr(offsets[d]);
    return in;
  };
}

Expr strided_offset(const std::vector<Expr>& idx, const std::vector<int64_t>& strides,
                    int64_t offset) {
  Expr result(offset);
  for (size_t k = 0; k < idx.size(); ++k) result = result + idx[k] * Expr(strides[k]);
  return result;
}

}  // namespace stax::lowering
