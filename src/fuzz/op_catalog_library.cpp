// The op catalogue's families that lower to library and runtime calls: matrix products,
// convolutions, pooling, scatters, attention and scans (the rest: op_catalog.cpp).
#include <algorithm>

#include "fuzz/op_catalog_builder.h"

namespace stax::fuzz::catalog {

// Issue 14, point 3: the matrix products. The operands share their sizes, so the second
// factor is the first's shape transposed ([m, k] x [k, m]); addmm's and baddbmm's bias is a
// column of the third operand, expanded over the result's columns. Positive values keep the
// long sums of one sign, where the comparison tolerance's model holds (driver/tolerance.h).
// Lowering refuses them until it lands, so their cases x dtypes are known failures of the
// sweep (tests/sweep/KNOWN_FAILURES.md), which the CI fuzz run leaves out.
void add_contractions(Builder& b) {
  const DTypeSet numbers = kNoBool;  // torch has no bool matrix product
  // `name` transposed in its last two dims, as a new value.
  const auto transposed = [](const CallSite& s, const std::string& name) {
    return s.temp("transpose(" + name + ", -2, -1)");
  };
  b.add("mm", "mm", {D::Positive, D::Positive}, numbers, R::Float64, false,
        [transposed](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2) return std::nullopt;
          return "mm(" + s.operands[0] + ", " + transposed(s, s.operands[1]) + ")";
        });
  // bmm and baddbmm of rank-2 operands add a batch dim of 1.
  const auto batched = [transposed](const CallSite& s) {
    std::vector<std::string> factors = {s.operands[0], transposed(s, s.operands[1])};
    if (rank(s) == 2) {
      for (std::string& f : factors) f = s.temp("unsqueeze(" + f + ", 0)");
    }
    return factors[0] + ", " + factors[1];
  };
  b.add("bmm", "bmm", {D::Positive, D::Positive}, numbers, R::Float64, false,
        [batched](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2 && rank(s) != 3) return std::nullopt;
          return "bmm(" + batched(s) + ")";
        });
  b.add("addmm", "addmm", {D::Positive, D::Positive, D::Positive}, numbers, R::Float64, false,
        [transposed](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2) return std::nullopt;
          const std::string bias = s.temp("narrow(" + s.operands[2] + ", 1, 0, 1)");
          return "addmm(" + bias + ", " + s.operands[0] + ", " + transposed(s, s.operands[1]) +
                 ", beta=2, alpha=3)";
        });
  b.add("baddbmm", "baddbmm", {D::Positive, D::Positive, D::Positive}, numbers, R::Float64, false,
        [batched](const CallSite& s) -> std::optional<std::string> {
          if (rank(s) != 2 && rank(s) != 3) return std::nullopt;
          // A column of the third operand: [m, 1] or [batch, m, 1], expanded over the columns.
          const std::string bias =
              s.temp("narrow(" + s.operands[2] + ", " + std::to_string(rank(s) - 1) + ", 0, 1)");
          return "baddbmm(" + bias + ", " + batched(s) + ", beta=2, alpha=3)";
        });
}

// Issue 15, point 2: convolution. The first operand is the input [N, C, spatial...] (rank 3
// to 5); the weight is the second operand's leading window [N, C, min(3, size)...], so C_out
// is N; a padding of 1 keeps every window inside the padded input, and every other spatial
// dim is strided by 2. Positive values keep the sums of one sign (driver/tolerance.h).
void add_convolutions(Builder& b) {
  b.add("convolution", "convolution", {D::Positive, D::Positive}, kNoBool, R::Float64, false,
        [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r < 3 || r > 5) return std::nullopt;
          for (int64_t size : s.sizes) {
            if (size == 0) return std::nullopt;  // eager refuses C_out == 0 and empty windows
          }
          std::string weight = s.operands[1];
          std::string stride, padding, dilation, output_padding;
          for (int d = 2; d < r; ++d) {
            const int64_t k = std::min<int64_t>(3, s.sizes[static_cast<size_t>(d)]);
            weight = s.temp("narrow(" + weight + ", " + std::to_string(d) + ", 0, " +
                            std::to_string(k) + ")");
            const std::string sep = d == 2 ? "" : ", ";
            stride += sep + (d % 2 == 0 ? "1" : "2");
            padding += sep + "1";
            dilation += sep + "1";
            output_padding += sep + "0";
          }
          return "convolution(" + s.operands[0] + ", " + weight + ", None, [" + stride + "], [" +
                 padding + "], [" + dilation + "], False, [" + output_padding + "], 1)";
        });
  // Its gradients: the input is the first operand [N, C, spatial...], the weight the second's
  // window [C_out, C, k...] with C_out = min(N, C) and k = 3 (1 for dims under 3) padded to
  // keep the spatial sizes, so grad_output is the third operand's first C_out channels.
  b.add("convolution_backward", "convolution_backward", {D::Positive, D::Positive, D::Positive},
        kFloats, R::Float64, false, [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r < 3 || r > 5) return std::nullopt;
          for (int64_t size : s.sizes) {
            if (size == 0) return std::nullopt;
          }
          const int64_t out_channels = std::min(s.sizes[0], s.sizes[1]);
          std::string weight =
              s.temp("narrow(" + s.operands[1] + ", 0, 0, " + std::to_string(out_channels) + ")");
          const std::string grad =
              s.temp("narrow(" + s.operands[2] + ", 1, 0, " + std::to_string(out_channels) + ")");
          std::string ones, padding, zeros;
          for (int d = 2; d < r; ++d) {
            const int64_t k = s.sizes[static_cast<size_t>(d)] < 3 ? 1 : 3;
            weight = s.temp("narrow(" + weight + ", " + std::to_string(d) + ", 0, " +
                            std::to_string(k) + ")");
            const std::string sep = d == 2 ? "" : ", ";
            ones += sep + "1";
            padding += sep + std::to_string(k / 2);
            zeros += sep + "0";
          }
          return "convolution_backward(" + grad + ", " + s.operands[0] + ", " + weight +
                 ", None, [" + ones + "], [" + padding + "], [" + ones + "], False, [" + zeros +
                 "], 1, [True, True, True])";
        });
  b.entries.back().result_count = [](const CallSite&) { return 3; };
}

// Pooling over the last two dims of an operand of rank 3 ([C, H, W]) or 4 ([N, C, H, W]).
// Max and average pooling: a window of min(3, size) per dim, stride 2, padding 1 where the
// kernel allows it (up to half the kernel), ceil_mode; max pooling dilates a dim of 5 or more
// by 2. Max pooling of coarse values meets ties and NaNs (eager takes the first maximum and
// the last NaN); eager refuses a dim of size 0 other than the batch. Adaptive pooling halves
// H and widens W by one (windows of several lengths, overlapping). The backward ops take the
// forward's result over the same operand as grad_output (max pooling's backward also the
// forward's indices, so tied and NaN maxima route gradients as eager's do).
void add_pooling(Builder& b) {
  // The spatial sizes (H, W), or nullopt when the call does not apply.
  auto spatial = [](const CallSite& s, bool empty_batch_ok) -> std::optional<std::vector<int64_t>> {
    const int r = rank(s);
    if (r != 3 && r != 4) return std::nullopt;
    for (int d = 0; d < r; ++d) {
      if (s.sizes[static_cast<size_t>(d)] == 0 && !(empty_batch_ok && r == 4 && d == 0)) {
        return std::nullopt;
      }
    }
    return std::vector<int64_t>{s.sizes[static_cast<size_t>(r - 2)],
                                s.sizes[static_cast<size_t>(r - 1)]};
  };
  auto window = [](const std::vector<int64_t>& in, bool dilate) {
    std::vector<int64_t> kernel, padding, dilation;
    for (int64_t size : in) {
      kernel.push_back(std::min<int64_t>(3, size));
      padding.push_back(kernel.back() >= 2 ? 1 : 0);
      dilation.push_back(dilate && size >= 5 ? 2 : 1);
    }
    return std::vector<std::vector<int64_t>>{kernel, padding, dilation};
  };
  b.add("max_pool2d_with_indices", "max_pool2d_with_indices", {D::Coarse}, kNoBool, R::Float64,
        true, [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, true);
          return "max_pool2d_with_indices(" + s.operands[0] + ", " + list(w[0]) + ", [2, 2], " +
                 list(w[1]) + ", " + list(w[2]) + ", True)";
        });
  b.entries.back().result_count = [](const CallSite&) { return 2; };  // values, indices
  b.add("max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward", {D::Coarse},
        kFloats, R::Float64, false,
        [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, true);
          const std::string args =
              list(w[0]) + ", [2, 2], " + list(w[1]) + ", " + list(w[2]) + ", True";
          const std::vector<std::string> forward =
              s.temp_results("max_pool2d_with_indices(" + s.operands[0] + ", " + args + ")", 2);
          return "max_pool2d_with_indices_backward(" + forward[0] + ", " + s.operands[0] + ", " +
                 args + ", " + forward[1] + ")";
        });
  b.add("avg_pool2d", "avg_pool2d", {D::Positive}, kFloats | dtype_bit(DType::Int64), R::Float64,
        false, [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, false);
          return "avg_pool2d(" + s.operands[0] + ", " + list(w[0]) + ", [2, 1], " + list(w[1]) +
                 ", True, False)";
        });
  b.add("avg_pool2d_backward", "avg_pool2d_backward", {D::Positive},
        kFloats | dtype_bit(DType::Int64), R::Float64, false,
        [spatial, window](const CallSite& s) -> std::optional<std::string> {
          const auto in = spatial(s, true);
          if (!in) return std::nullopt;
          const auto w = window(*in, false);
          const std::string args = list(w[0]) + ", [2, 1], " + list(w[1]) + ", True, False";
          const std::string grad = s.temp("avg_pool2d(" + s.operands[0] + ", " + args + ")");
          return "avg_pool2d_backward(" + grad + ", " + s.operands[0] + ", " + args + ", None)";
        });
  b.add("_adaptive_avg_pool2d", "_adaptive_avg_pool2d", {D::Positive}, kFloats, R::Float64, false,
        [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r != 3 && r != 4) return std::nullopt;
          const int64_t h = s.sizes[static_cast<size_t>(r - 2)];
          const int64_t w = s.sizes[static_cast<size_t>(r - 1)];
          if (h == 0 || w == 0) return std::nullopt;  // eager refuses empty planes
          return "_adaptive_avg_pool2d(" + s.operands[0] + ", " + list({(h + 1) / 2, w + 1}) + ")";
        });
  b.add("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward", {D::Positive}, kFloats,
        R::Float64, false, [](const CallSite& s) -> std::optional<std::string> {
          const int r = rank(s);
          if (r != 3 && r != 4) return std::nullopt;
          const int64_t h = s.sizes[static_cast<size_t>(r - 2)];
          const int64_t w = s.sizes[static_cast<size_t>(r - 1)];
          if (h == 0 || w == 0) return std::nullopt;
          const std::string grad = s.temp("_adaptive_avg_pool2d(" + s.operands[0] + ", " +
                                          list({(h + 1) / 2, w + 1}) + ")");
          return "_adaptive_avg_pool2d_backward(" + grad + ", " + s.operands[0] + ")";
        });
}

// The scatters (issue 15, point 4) over operands of equal sizes: index_put along dim 0 and
// (with a None first) dim 1, index_add along dim 0, scatter, scatter_add and scatter_reduce
// along the last dim with an index of the operand's sizes; indices drawn in [0, size) repeat, so
// sums meet several values per element and writes are overwritten. Sums are compared with eager in
// the dtype itself (every addition rounds, in eager's order); writes copy exactly.
void add_scatters(Builder& b) {
  auto leading = [](const CallSite& s, size_t dim) -> std::optional<int64_t> {
    if (s.sizes.size() <= dim || s.sizes[dim] == 0) return std::nullopt;
    return s.sizes[dim];
  };
  for (const bool accumulate : {false, true}) {
    const std::string suffix = accumulate ? ".accumulate" : "";
    const std::string flag = accumulate ? ", True)" : ")";
    b.add("index_put", "index_put" + suffix, {D::Finite, D::Finite}, kAll,
          accumulate ? R::SameDtype : R::Float64, !accumulate,
          [leading, flag](const CallSite& s) -> std::optional<std::string> {
            const auto n = leading(s, 0);
            if (!n) return std::nullopt;
            return "index_put(" + s.operands[0] + ", [" + s.index_input({*n}, *n) + "], " +
                   s.operands[1] + flag;
          });
    // Two tensor indices over dims 0 and 1 (the values: the second operand's column 0).
    b.add("index_put", "index_put.two" + suffix, {D::Finite, D::Finite}, kAll,
          accumulate ? R::SameDtype : R::Float64, !accumulate,
          [leading, flag](const CallSite& s) -> std::optional<std::string> {
            const auto n = leading(s, 0);
            const auto m = leading(s, 1);
            if (!n || !m) return std::nullopt;
            const std::string values = s.temp("select(" + s.operands[1] + ", 1, 0)");
            return "index_put(" + s.operands[0] + ", [" + s.index_input({*n}, *n) + ", " +
                   s.index_input({*n}, *m) + "], " + values + flag;
          });
    b.add("index_put", "index_put.dim1" + suffix, {D::Finite, D::Finite}, kAll,
          accumulate ? R::SameDtype : R::Float64, !accumulate,
          [leading, flag](const CallSite& s) -> std::optional<std::string> {
            const auto n = leading(s, 1);
            if (!n || !leading(s, 0)) return std::nullopt;
            return "index_put(" + s.operands[0] + ", [None, " + s.index_input({*n}, *n) + "], " +
                   s.operands[1] + flag;
          });
  }
  b.add("index_add", "index_add", {D::Finite, D::Finite}, kAll, R::SameDtype, false,
        [leading](const CallSite& s) -> std::optional<std::string> {
          const auto n = leading(s, 0);
          if (!n) return std::nullopt;
          return "index_add(" + s.operands[0] + ", 0, " + s.index_input({*n}, *n) + ", " +
                 s.operands[1] + ")";
        });
  b.add("index_add", "index_add.alpha", {D::Small, D::Small}, kNoBool, R::SameDtype, false,
        [leading](const CallSite& s) -> std::optional<std::string> {
          const auto n = leading(s, 0);
          if (!n) return std::nullopt;
          return "index_add(" + s.operands[0] + ", 0, " + s.index_input({*n}, *n) + ", " +
                 s.operands[1] + ", alpha=2)";
        });
  for (const char* op : {"scatter", "scatter_add"}) {
    const bool add = std::string(op) == "scatter_add";
    b.add(op, op, {D::Finite, D::Finite}, kAll, add ? R::SameDtype : R::Float64, !add,
          [op](const CallSite& s) -> std::optional<std::string> {
            if (last_size(s) == 0) return std::nullopt;
            return std::string(op) + "(" + s.operands[0] + ", -1, " +
                   s.index_input(s.sizes, last_size(s)) + ", " + s.operands[1] + ")";
          });
  }
  // scatter_reduce: every reduction, with and without self (products of values near one,
  // extrema of coarse values: ties and NaNs).
  const std::vector<std::tuple<const char*, D, DTypeSet>> reductions = {
      {"sum", D::Finite, kAll},
      {"prod", D::NearOne, kAll},
      {"mean", D::Finite, kNoBool},
      {"amax", D::Coarse, kAll},
      {"amin", D::Coarse, kAll}};
  for (const auto& [reduce, domain, dtypes] : reductions) {
    for (const bool include_self : {true, false}) {
      const std::string r = reduce;
      const std::string flag = include_self ? "')" : "', include_self=False)";
      b.add("scatter_reduce", "scatter_reduce." + r + (include_self ? "" : ".without_self"),
            {domain, domain}, dtypes, R::SameDtype, r == "amax" || r == "amin",
            [r, flag](const CallSite& s) -> std::optional<std::string> {
              if (last_size(s) == 0) return std::nullopt;
              return "scatter_reduce(" + s.operands[0] + ", -1, " +
                     s.index_input(s.sizes, last_size(s)) + ", " + s.operands[1] + ", '" + r + flag;
            });
    }
  }
  b.add("scatter", "scatter.value", {D::Finite}, kNoBool, R::SameDtype, true,
        [](const CallSite& s) -> std::optional<std::string> {
          if (last_size(s) == 0) return std::nullopt;
          return "scatter(" + s.operands[0] + ", -1, " + s.index_input(s.sizes, last_size(s)) +
                 ", 3)";
        });
}

// Attention (issue 15, point 1) of a rank-4 operand with itself as query, key and value,
// causal; the backward takes the operand as the output's gradient too; softmax_attention with
// an explicit scale.
void add_attention(Builder& b) {
  const DTypeSet dtypes = dtype_bit(DType::Float32) | dtype_bit(DType::BFloat16);
  const std::string forward = "_scaled_dot_product_flash_attention_for_cpu";
  b.add(forward, forward, {D::Coarse}, dtypes, R::Float64, false,
        [forward](const CallSite& s) -> std::optional<std::string> {
          if (s.sizes.size() != 4) return std::nullopt;
          const std::string& x = s.operands[0];
          return forward + "(" + x + ", " + x + ", " + x + ", 0.0, True)";
        });
  b.entries.back().result_count = [](const CallSite&) { return 2; };  // output, logsumexp
  b.add(forward + "_backward", forward + "_backward", {D::Coarse}, dtypes, R::Float64, false,
        [forward](const CallSite& s) -> std::optional<std::string> {
          if (s.sizes.size() != 4) return std::nullopt;
          const std::string& x = s.operands[0];
          const std::vector<std::string> f =
              s.temp_results(forward + "(" + x + ", " + x + ", " + x + ", 0.0, True)", 2);
          return forward + "_backward(" + x + ", " + x + ", " + x + ", " + x + ", " + f[0] + ", " +
                 f[1] + ", 0.0, True)";
        });
  b.entries.back().result_count = [](const CallSite&) { return 3; };  // dq, dk, dv
  // The written-out attention the graph passes put in place of matmul -> softmax -> matmul.
  b.add("softmax_attention", "softmax_attention", {D::Coarse}, dtypes, R::Float64, false,
        [](const CallSite& s) -> std::optional<std::string> {
          if (s.sizes.size() != 4) return std::nullopt;
          const std::string& x = s.operands[0];
          return "softmax_attention(" + x + ", " + x + ", " + x + ", scale=0.5)";
        });
}

// The scans (issue 16, point 7) along the last dim and along dim 0 (an outer dim: the runtime
// carries one running value per column): sums of small values, products of values near one,
// logcumsumexp of finite floats, and the extrema of coarse values, whose ties and NaN move the
// index.
void add_scans(Builder& b) {
  for (const char* dim : {"-1", "0"}) {
    const std::string where = std::string(dim) == "0" ? ".first" : ".last";
    b.add("cumsum", "cumsum" + where, {D::Small}, kAll, R::Float64, false, call_on("cumsum", dim));
    b.add("cumprod", "cumprod" + where, {D::NearOne}, kAll, R::Float64, false,
          call_on("cumprod", dim));
    b.add("logcumsumexp", "logcumsumexp" + where, {D::Finite}, kFloats, R::Float64, false,
          call_on("logcumsumexp", dim));
    for (const char* op : {"cummax", "cummin"}) {
      b.add(op, op + where, {D::Coarse}, kAll, R::SameDtype, true, call_on(op, dim));
      b.entries.back().result_count = [](const CallSite&) { return 2; };  // values, indices
    }
  }
}

// copy_ writes a value into a new input of the graph (the only values it writes): of the
// same layout, transposed, and with a leading dim the value is broadcast over. The check
// compares the written input with eager's (fuzz/case_check.cpp).
void add_mutations(Builder& b) {
  b.add("copy_", "copy_", {D::Any}, kAll, R::SameDtype, true, [](const CallSite& s) {
    return "copy_(" + s.destination_input(s.dtype, s.sizes, {}) + ", " + s.operands[0] + ")";
  });
  b.add("copy_", "copy_.transposed", {D::Any}, kAll, R::SameDtype, true,
        [](const CallSite& s) -> std::optional<std::string> {
          if (s.sizes.size() < 2) return std::nullopt;
          // Strides of the sizes stored with the dims in reverse order (column-major).
          std::vector<int64_t> strides(s.sizes.size());
          int64_t step = 1;
          for (size_t d = 0; d < s.sizes.size(); ++d) {
            strides[d] = step;
            step *= s.sizes[d];
          }
          return "copy_(" + s.destination_input(s.dtype, s.sizes, strides) + ", " + s.operands[0] +
                 ")";
        });
  b.add("copy_", "copy_.broadcast", {D::Any}, kAll, R::SameDtype, true, [](const CallSite& s) {
    std::vector<int64_t> sizes = {3};
    sizes.insert(sizes.end(), s.sizes.begin(), s.sizes.end());
    return "copy_(" + s.destination_input(s.dtype, sizes, {}) + ", " + s.operands[0] + ")";
  });
}

}  // namespace stax::fuzz::catalog
