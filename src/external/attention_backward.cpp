// AttentionPlan's backward (attention.h, attention.cpp). One work item is (batch b, key/value
// head g): its thread accumulates dK and dV of the head in float32 over the head's query heads
// and their query blocks, in that order, so that the sums do not depend on the thread count.
// Per query block i0..i0+m of query head h:
//   D_i = sum_c dO_ic out_ic
//   for each key block j0..j0+n (causal: the keys some row sees)
//     S = scale * Q K^T + mask (causal -inf), P = exp(S - lse)   (a fully masked row: lse 0,
//                                                                  so P = exp(-inf) = 0)
//     dV[j0..] += P^T dO                     (16-bit: P rounded to the dtype)
//     dP = dO V^T, dS = P * (dP - D)         (16-bit: dS rounded to the dtype)
//     dQ_acc (+)= scale * dS K, dK[j0..] += scale * dS^T Q
//   dq = dQ_acc rounded once; after every query head: dk, dv rounded once.
// The products are oneDNN's (attention.cpp's cache); P^T and dS^T are the products' operands
// read transposed in place.
#include <algorithm>
#include <cstring>

#include "external/attention_internal.h"

namespace stax::external {

void AttentionPlan::Impl::backward_item(int64_t item, const char* go_data, const char* q_data,
                                        const char* k_data, const char* v_data, const char* o_data,
                                        const float* lse_data, const void* mask_data, char* dq_data,
                                        char* dk_data, char* dv_data, detail::Workspace& ws) const {
  const int64_t b = item / Hkv, g = item % Hkv;
  const int64_t group = Hq / Hkv;
  const int64_t qr = blocks.query_rows, kb = blocks.keys;
  const int64_t nqb = query_blocks();
  const Layout l = layout();
  char* base = static_cast<char*>(ws.buffer.get());
  auto* s = reinterpret_cast<float*>(base + l.s);
  auto* p16 = is_16bit ? reinterpret_cast<uint16_t*>(base + l.p16) : nullptr;
  auto* dp = reinterpret_cast<float*>(base + l.dp);
  auto* dq_acc = reinterpret_cast<float*>(base + l.acc);
  auto* d_rows = reinterpret_cast<float*>(base + l.rows);
  float* lse_rows = d_rows + qr;
  auto* dk_acc = reinterpret_cast<float*>(base + l.dkacc);
  auto* dv_acc = reinterpret_cast<float*>(base + l.dvacc);
  std::fill(dk_acc, dk_acc + Lk * E, 0.0f);
  std::fill(dv_acc, dv_acc + Lk * Ev, 0.0f);
  const auto scale = static_cast<float>(spec.scale);
  for (int64_t h = g * group; h < (g + 1) * group; ++h) {
    for (int64_t qb = 0; qb < nqb; ++qb) {
      const int64_t i0 = qb * qr, m = std::min(qr, Lq - i0);
      const char* qp =
          detail::block_rows(q_data, q, q_use, b, h, i0, m, E, element, base + l.qpack);
      const char* gop =
          detail::block_rows(go_data, grad_out, go_use, b, h, i0, m, Ev, element, base + l.gopack);
      for (int64_t r = 0; r < m; ++r) {
        const int64_t i = i0 + r;
        d_rows[r] =
            detail::dot_row(go_data + grad_out.at(b, h, i) * element, grad_out.stride[3],
                            o_data + out_in.at(b, h, i) * element, out_in.stride[3], Ev, is_16bit);
        lse_rows[r] = lse_data[lse_in.stride[1] * b + lse_in.stride[2] * h + lse_in.stride[3] * i];
      }
      const int64_t kend = key_end(i0, m);
      for (int64_t j0 = 0; j0 < kend; j0 += kb) {
        const int64_t n = std::min(kb, kend - j0);
        const char* kp =
            detail::block_rows(k_data, k, k_use, b, g, j0, n, E, element, base + l.kpack);
        const char* vp =
            detail::block_rows(v_data, v, v_use, b, g, j0, n, Ev, element, base + l.vpack);
        detail::run_gemm(*gemms, {m, n, E, q_use.rs, 1, 1, k_use.rs, n, scale, false}, qp, kp, s,
                         ws);
        for (int64_t r = 0; r < m; ++r) {
          float* row = s + r * n;
          mask_row(row, b, h, i0 + r, j0, n, mask_data);
          detail::exp_row(row, n, lse_rows[r], p16 ? p16 + r * n : nullptr);
        }
        const void* p_operand = p16 ? static_cast<const void*>(p16) : s;
        detail::run_gemm(*gemms, {n, Ev, m, 1, n, go_use.rs, 1, Ev, 1.0f, true}, p_operand, gop,
                         dv_acc + j0 * Ev, ws);
        detail::run_gemm(*gemms, {m, n, Ev, go_use.rs, 1, 1, v_use.rs, n, 1.0f, false}, gop, vp, dp,
                         ws);
        // dS overwrites dP (float32) and, in 16-bit, P's rounded copy (its product is done).
        for (int64_t r = 0; r < m; ++r) {
          detail::softmax_grad_row(dp + r * n, s + r * n, n, d_rows[r],
                                   p16 ? p16 + r * n : nullptr);
        }
        const void* ds_operand = p16 ? static_cast<const void*>(p16) : dp;
        detail::run_gemm(*gemms, {m, E, n, n, 1, k_use.rs, 1, E, scale, j0 > 0}, ds_operand, kp,
                         dq_acc, ws);
        detail::run_gemm(*gemms, {n, E, m, 1, n, q_use.rs, 1, E, scale, true}, ds_operand, qp,
                         dk_acc + j0 * E, ws);
      }
      for (int64_t r = 0; r < m; ++r) {
        char* dst = dq_data + dq.at(b, h, i0 + r) * element;
        detail::store_row(kend == 0 ? nullptr : dq_acc + r * E, E, kend == 0 ? 0.0f : 1.0f, dst,
                          dq.stride[3], is_16bit);
      }
    }
  }
  for (int64_t j = 0; j < Lk; ++j) {
    detail::store_row(dk_acc + j * E, E, 1.0f, dk_data + dk.at(b, g, j) * element, dk.stride[3],
                      is_16bit);
    detail::store_row(dv_acc + j * Ev, Ev, 1.0f, dv_data + dv.at(b, g, j) * element, dv.stride[3],
                      is_16bit);
  }
}

}  // namespace stax::external
