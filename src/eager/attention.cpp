// The eager oracle of the attention ops (ir/attention_args.h): scores, softmax and products in
// double, each result rounded once to its dtype. The backward recomputes the probabilities
// from the logsumexp it is given (P = exp(S - lse)), as eager's kernel does, and takes D =
// rowsum(grad_out * out) from the out it is given. A row every key is masked from (all its
// scores -inf, or no keys) has output 0, logsumexp 0 and gradients 0; softmax_attention's
// output is NaN for a row whose scores are all -inf (and 0 with no keys), as softmax gives.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "eager/ops.h"
#include "eager/row_major.h"
#include "ir/attention_args.h"

namespace stax::eager::detail {

namespace {

struct Dims {
  int64_t batch, query_heads, kv_heads, lq, lk, e;
  int64_t group() const { return query_heads / kv_heads; }
  size_t q(int64_t b, int64_t h, int64_t i, int64_t c) const {
    return static_cast<size_t>(((b * query_heads + h) * lq + i) * e + c);
  }
  size_t kv(int64_t b, int64_t h, int64_t j, int64_t c) const {
    return static_cast<size_t>(((b * kv_heads + h) * lk + j) * e + c);
  }
  size_t row(int64_t b, int64_t h, int64_t i) const {
    return static_cast<size_t>((b * query_heads + h) * lq + i);
  }
};

// The scores of one (batch, head) pair, scaled and masked, row-major [lq, lk].
std::vector<double> scores(const ir::AttentionArgs& a, const Dims& d, int64_t b, int64_t h,
                           const std::vector<double>& q, const std::vector<double>& k,
                           const Tensor* mask, const std::vector<int64_t>& mask_dims) {
  std::vector<double> s(static_cast<size_t>(d.lq * d.lk));
  const int64_t kh = h / d.group();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<int64_t> at(mask ? mask->dim() : 0, 0);
  for (int64_t i = 0; i < d.lq; ++i) {
    for (int64_t j = 0; j < d.lk; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d.e; ++c) dot += q[d.q(b, h, i, c)] * k[d.kv(b, kh, j, c)];
      double v = dot * a.scale;
      if (mask != nullptr) {
        const int64_t coords[4] = {b, h, i, j};
        for (size_t x = 0; x < 4; ++x) {
          if (mask_dims[x] >= 0) at[static_cast<size_t>(mask_dims[x])] = coords[x];
        }
        v += mask->get(at);
      }
      if (a.causal && j > i) v = -inf;
      s[static_cast<size_t>(i * d.lk + j)] = v;
    }
  }
  return s;
}

}  // namespace

Tensor eval_attention(const Env& env, const ir::Node& node) {
  const ir::AttentionArgs a = ir::attention_args(env.graph, node);
  const ir::TensorType& type = env.result_type(node);
  // Eager's layout of the result (a later `view` observes it).
  Tensor out = Tensor::empty_strided(
      type.dtype, type.sizes,
      a.result_strides(env.graph, node.result_index,
                       env.values.at(static_cast<size_t>(a.query.index)).strides()));
  if (out.numel() == 0) return out;
  const Dims d{a.batch, a.query_heads, a.kv_heads, a.query_length, a.key_length, a.head_size};
  auto values_of = [&](ir::ValueRef ref) {
    return gather_floats(env.values.at(static_cast<size_t>(ref.index)));
  };
  const std::vector<double> q = values_of(a.query), k = values_of(a.key), v = values_of(a.value);
  const Tensor* mask = a.mask ? &env.values.at(static_cast<size_t>(a.mask->index)) : nullptr;
  const std::vector<int64_t> mask_dims = a.mask ? a.mask_dims(env.graph) : std::vector<int64_t>{};
  std::vector<double> result(static_cast<size_t>(out.numel()), 0.0);
  const int r = node.result_index;
  std::vector<double> grad, fwd_out, lse;
  if (a.backward) {
    grad = values_of(a.grad_out);
    fwd_out = values_of(a.out);
    lse = values_of(a.logsumexp);
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.query_heads; ++h) {
      const int64_t kh = h / d.group();
      std::vector<double> p = scores(a, d, b, h, q, k, mask, mask_dims);
      for (int64_t i = 0; i < d.lq; ++i) {
        double* row = &p[static_cast<size_t>(i * d.lk)];
        double row_lse = 0;
        if (a.backward) {
          row_lse = lse[d.row(b, h, i)];
        } else {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < d.lk; ++j) m = std::max(m, row[j]);
          if (std::isinf(m) && m < 0) {
            row_lse = std::numeric_limits<double>::quiet_NaN();  // masked: P = 0 below
          } else {
            double sum = 0;
            for (int64_t j = 0; j < d.lk; ++j) sum += std::exp(row[j] - m);
            row_lse = m + std::log(sum);
          }
        }
        bool masked = true;
        for (int64_t j = 0; j < d.lk; ++j) masked = masked && std::isinf(row[j]) && row[j] < 0;
        // softmax_attention gives NaN there, as the softmax it stands for does.
        const double masked_p = a.written_out ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        for (int64_t j = 0; j < d.lk; ++j) row[j] = masked ? masked_p : std::exp(row[j] - row_lse);
        if (!a.backward && r == 1) result[d.row(b, h, i)] = masked ? 0.0 : row_lse;
      }
      if (!a.backward) {
        if (r != 0) continue;
        for (int64_t i = 0; i < d.lq; ++i) {
          for (int64_t c = 0; c < d.e; ++c) {
            double sum = 0;
            for (int64_t j = 0; j < d.lk; ++j) {
              sum += p[static_cast<size_t>(i * d.lk + j)] * v[d.kv(b, kh, j, c)];
            }
            result[d.q(b, h, i, c)] = sum;
          }
        }
        continue;
      }
      // dP = dO V^T, D = rowsum(dO * out), dS = P (dP - D).
      std::vector<double> ds(p.size());
      for (int64_t i = 0; i < d.lq; ++i) {
        double big_d = 0;
        for (int64_t c = 0; c < d.e; ++c) big_d += grad[d.q(b, h, i, c)] * fwd_out[d.q(b, h, i, c)];
        for (int64_t j = 0; j < d.lk; ++j) {
          double dp = 0;
          for (int64_t c = 0; c < d.e; ++c) dp += grad[d.q(b, h, i, c)] * v[d.kv(b, kh, j, c)];
          const size_t x = static_cast<size_t>(i * d.lk + j);
          ds[x] = p[x] * (dp - big_d);
        }
      }
      for (int64_t i = 0; i < d.lq; ++i) {
        for (int64_t j = 0; j < d.lk; ++j) {
          const size_t x = static_cast<size_t>(i * d.lk + j);
          for (int64_t c = 0; c < d.e; ++c) {
            if (r == 0) result[d.q(b, h, i, c)] += a.scale * ds[x] * k[d.kv(b, kh, j, c)];
            if (r == 1) result[d.kv(b, kh, j, c)] += a.scale * ds[x] * q[d.q(b, h, i, c)];
            if (r == 2) result[d.kv(b, kh, j, c)] += p[x] * grad[d.q(b, h, i, c)];
          }
        }
      }
    }
  }
  write_all(out, [&](const std::vector<int64_t>& index, int64_t p) {
    out.set(index, round_to(type.dtype, result[static_cast<size_t>(p)]));
  });
  return out;
}

}  // namespace stax::eager::detail
