// Stax's runtime attention (issue 15, point 1): the external node that
// _scaled_dot_product_flash_attention_for_cpu and its backward lower to. For each batch b and
// query head h (key/value head h / (Hq / Hkv): grouped-query attention shares a key/value head
// among Hq / Hkv query heads),
//   S = scale * Q K^T + mask          (mask: an additive float mask, broadcast; causal: key
//                                       positions j > i are -inf, top-left aligned)
//   P = softmax(S) by rows, out = P V, lse = log(sum_j exp(S_ij)) per row
// with eager's answers for a row that every key is masked from: out 0 and lse 0 (probed,
// torch 2.13.0), and its gradients 0. The backward takes grad_out, the forward's out and lse
// and gives dq, dk and dv:
//   P = exp(S - lse), dP = dO V^T, D = rowsum(dO * out), dS = P * (dP - D),
//   dQ = scale * dS K, dK = scale * dS^T Q, dV = P^T dO.
//
// The scores of a block of query rows never leave cache: the rows are processed in blocks and
// each block meets the keys in blocks, with softmax's running max and sum rescaled as a new
// key block arrives (flash attention's online softmax). The block sizes come from the cache
// sizes of the machine (AttentionBlocks); one key block holding every key is the plain
// softmax. The block products run in oneDNN; 16-bit operands are multiplied as 16-bit with
// float32 accumulation (where oneDNN has no bfloat16 matmul, an AVX2-only CPU, they are
// widened to float32 first, exactly: AttentionPlan::arithmetic), softmax is computed in
// float32 and P (and dS) rounded to the dtype for the products that take them, as eager's
// kernel does.
//
// Threads: the forward splits (batch, head, query block); the backward splits (batch,
// key/value head), each thread accumulating dk and dv of its heads in float32, so results do
// not depend on the thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "external/arithmetic.h"
#include "external/scatter.h"  // StridedOperand
#include "ir/dtype.h"

namespace stax::external {

struct AttentionSpec {
  DType dtype = DType::Float32;  // query, key, value, out, grad_out and the gradients
  // Rank-4 layouts, strides in elements (any non-negative strides):
  StridedOperand query;  // [B, Hq, Lq, E]
  StridedOperand key;    // [B, Hkv, Lk, E]; Hq a multiple of Hkv
  StridedOperand value;  // [B, Hkv, Lk, Ev]
  // The additive mask as a rank-4 view broadcast to [B, Hq, Lq, Lk] (stride 0 on broadcast
  // dims), of mask_dtype (float32 or `dtype`); absent: none.
  std::optional<StridedOperand> mask;
  DType mask_dtype = DType::Float32;
  bool causal = false;
  // A row whose scores are all -inf (every key masked) gives NaN, as a written-out softmax
  // gives, instead of flash attention's 0 (the forward only; no keys at all still give 0).
  bool masked_rows_nan = false;
  double scale = 1.0;  // already resolved (1 / sqrt(E) when the op's scale is None)
  // The blocking, when positive: query rows and keys per block instead of what
  // choose_attention_blocks picks from the cache sizes (tests force several key blocks with
  // small sizes; lowering leaves them 0). Results depend on the blocking (the order of the
  // sums), never on the thread count.
  int64_t block_query_rows = 0;
  int64_t block_keys = 0;
  // The layouts the results are written in (any non-overlapping strides): out [B, Hq, Lq, Ev]
  // and lse [B, Hq, Lq] (float32) for the forward; dq, dk, dv (the layouts of query, key and
  // value's sizes) for the backward. The backward also reads grad_out and out in
  // `out_layout` strides given by grad_out / out below.
  StridedOperand out;
  StridedOperand lse;
  // Backward only:
  StridedOperand grad_out;    // [B, Hq, Lq, Ev]
  StridedOperand out_in;      // the forward's out, [B, Hq, Lq, Ev]
  StridedOperand lse_in;      // the forward's lse, [B, Hq, Lq] float32
  StridedOperand grad_query;  // [B, Hq, Lq, E]
  StridedOperand grad_key;    // [B, Hkv, Lk, E]
  StridedOperand grad_value;  // [B, Hkv, Lk, Ev]

  std::string describe() const;  // "attention q [2, 12, 128, 64] k [...] ... float32"
};

// The blocking the cost model picks for a spec on this machine: query rows per block and
// keys per block (Lk itself when every key fits), and why.
struct AttentionBlocks {
  int64_t query_rows = 0;
  int64_t keys = 0;
  std::string reason;
};
AttentionBlocks choose_attention_blocks(const AttentionSpec& spec);

// How the block products read each operand: in place, or packed per block into dense rows
// where its layout needs it (columns not contiguous) or where oneDNN would run a slower kernel
// on it in place than on dense rows (attention_packing.cpp says why and what was measured).
struct AttentionPacking {
  bool query = false, key = false, value = false, grad_out = false;
  std::string reason;
};
AttentionPacking choose_attention_packing(const AttentionSpec& spec, bool backward);

// Why `spec` is not one the runtime runs (sizes that disagree, a dtype it does not take,
// overlapping outputs), or nullopt. The forward fields are always checked; `backward` also
// checks the backward's.
std::optional<std::string> attention_spec_problem(const AttentionSpec& spec, bool backward);

class AttentionPlan {
 public:
  // How the block products multiply `dtype` on this machine: Native where oneDNN has a kernel
  // for it, ThroughFloat32 for bfloat16 where it has only float32's (an AVX2-only CPU): each
  // product's operands, already bfloat16 as eager's kernel rounds them (P and dS included), are
  // widened to float32, exactly (arithmetic.h); nullopt where it has neither, with `why`.
  static std::optional<Arithmetic> arithmetic(DType dtype, std::string* why = nullptr);
  // Builds the block products' primitives; throws LibraryError (matmul.h) when oneDNN has no
  // fast implementation.
  static std::unique_ptr<AttentionPlan> create(const AttentionSpec& spec, bool backward,
                                               int num_threads);
  ~AttentionPlan();
  const AttentionSpec& spec() const;
  const AttentionBlocks& blocks() const;
  Arithmetic arithmetic() const;

  // Pointers at element 0 of each layout; mask null when the spec has none; lse may be null
  // (the forward then does not store it).
  void run_forward(const void* query, const void* key, const void* value, const void* mask,
                   void* out, float* lse, int num_threads) const;
  void run_backward(const void* grad_out, const void* query, const void* key, const void* value,
                    const void* out, const float* lse, const void* mask, void* grad_query,
                    void* grad_key, void* grad_value, int num_threads) const;

 private:
  struct Impl;
  explicit AttentionPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stax::external
