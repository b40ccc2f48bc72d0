// What attention.cpp (spec checks, the plan, the forward) and attention_backward.cpp share: the
// plan's state, the cache of oneDNN block products, the per-thread workspace and the
// vectorized row loops. Internal to src/external.
#pragma once

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "external/arithmetic.h"
#include "external/attention.h"
#include "external/dnnl_common.h"

namespace stax::external::detail {

// A rank-4 operand with sizes padded to 4 (leading 1s) and stride 0 wherever its size is 1,
// so that indexing by the broadcast shape's coordinates needs no test.
struct View4 {
  std::array<int64_t, 4> size{};
  std::array<int64_t, 4> stride{};
  static View4 of(const StridedOperand& operand);
  int64_t at(int64_t b, int64_t h, int64_t i) const {
    return b * stride[0] + h * stride[1] + i * stride[2];
  }
};

// One block product c[m, n] = scale * a[m, k] b[k, n] (+ c when `sum`): a and b in the spec's
// dtype with the given strides, c float32 row-major with leading dimension c_ld.
struct GemmKey {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_rs = 0, a_cs = 0, b_rs = 0, b_cs = 0, c_ld = 0;
  float scale = 1.0f;
  bool sum = false;
  auto operator<=>(const GemmKey&) const = default;
};

// The descriptor of a block product's primitive: what GemmCache builds and what the packing
// decision (attention_packing.cpp) asks oneDNN about.
dnnl::matmul::primitive_desc block_product_desc(DType dtype, const GemmKey& key);
// Which size or stride of the product oneDNN's 32-bit arithmetic cannot take (spec_check.h),
// or empty: asked before block_product_desc, which may divide by zero on such sizes.
std::string block_product_over_32_bits(const GemmKey& key);

struct Gemm {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c, scratchpad;
  size_t scratchpad_bytes = 0;
};

// The block products of a plan, built for one thread (they run inside the plan's parallel
// region) on first use and kept; lookups are thread-safe. Where oneDNN has no kernel for the
// dtype but has float32's (bfloat16 on an AVX2-only CPU: arithmetic.h), the products take
// float32 copies of their operands, dense (widening.h's widen_matrix): run_gemm makes them.
class GemmCache {
 public:
  GemmCache(DType dtype, Arithmetic arithmetic, std::string what)
      : dtype_(arithmetic == Arithmetic::ThroughFloat32 ? DType::Float32 : dtype),
        widens_(arithmetic == Arithmetic::ThroughFloat32),
        what_(std::move(what)) {}
  // The product oneDNN computes for `key`: the same, or on the dense float32 copies.
  GemmKey library_key(const GemmKey& key) const;
  bool widens() const { return widens_; }
  // The primitive of library_key(key).
  const Gemm& get(const GemmKey& key);
  size_t max_scratchpad_bytes();

 private:
  DType dtype_;  // of the operands oneDNN reads
  bool widens_;
  std::string what_;
  std::mutex mutex_;
  std::map<GemmKey, std::unique_ptr<Gemm>> gemms_;
  size_t max_scratchpad_ = 0;
};

// Per-thread memory of a run: block buffers and the oneDNN scratchpad.
// A block product's arguments bound once per thread and run: the memory objects and the
// argument map oneDNN's execute takes, whose data handles each product only re-points.
// Building them per product (a map and three or four memory objects) cost more than a
// bfloat16 128x128x64 product itself on AMX.
struct BoundGemm {
  const Gemm* gemm = nullptr;
  dnnl::memory a, b, c, scratchpad;
  std::unordered_map<int, dnnl::memory> args;
};

struct Workspace {
  Buffer buffer;
  Buffer extra_scratchpad;  // only when a product built during the run needs more
  size_t scratchpad_bytes = 0;
  char* scratchpad = nullptr;
  Buffer widened;  // the float32 copies of a product's operands (GemmCache::widens)
  size_t widened_bytes = 0;
  std::vector<BoundGemm> bound;  // the products this thread ran in this run
};

// Runs one block product; a, b and c at element 0. k == 0 gives c = 0 (or leaves it when
// key.sum); m == 0 or n == 0 does nothing.
void run_gemm(GemmCache& cache, const GemmKey& key, const void* a, const void* b, float* c,
              Workspace& workspace);

// How an operand is used by the products: in place (unit column stride, rows apart by at
// least a row) or packed per block into the workspace; `pack` packs it whatever its layout
// (choose_attention_packing's decision).
struct Operand2 {
  bool packed = false;
  int64_t rs = 0, cs = 1;  // strides of the rows and columns of one [rows, cols] matrix
};
Operand2 operand_use(const View4& view, bool pack = false);

// Copies rows x cols of a strided matrix of `element` bytes into a dense row-major buffer.
void pack_matrix(const char* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols,
                 size_t element, char* dst);

// Rows [i0, i0 + rows) of (b, h) of `view` over `data`, as the products read them: in place,
// or packed into `scratch` when `use` says so.
inline const char* block_rows(const char* data, const View4& view, const Operand2& use, int64_t b,
                              int64_t h, int64_t i0, int64_t rows, int64_t cols, size_t element,
                              char* scratch) {
  const char* p = data + view.at(b, h, i0) * static_cast<int64_t>(element);
  if (!use.packed) return p;
  pack_matrix(p, view.stride[2], view.stride[3], rows, cols, element, scratch);
  return scratch;
}

// The vectorized row loops (attention_rows.cpp; several ISAs, chosen at load time).
// s[j] += mask[j * stride] for j < n (mask float32 or bfloat16 bits).
void add_mask_row(float* s, int64_t n, const void* mask, bool mask_is_16bit, int64_t stride);
float row_max(const float* s, int64_t n);
// s[j] = exp(s[j] - ref), returns the sum (in one order on every ISA); when p16 is given also
// writes the values rounded to bfloat16, and with keep_float false s may be left as it was
// (the forward reads only the 16-bit values: a store of the row saved).
float exp_row(float* s, int64_t n, float ref, uint16_t* p16, bool keep_float = true);
// Every form of exp_row this CPU runs (the portable clones; AVX-512 with AVX512-BF16 where
// present), by name, for the tests: each gives exp within its polynomial's error and the sum in
// the same order.
using ExpRowFn = float (*)(float* s, int64_t n, float ref, uint16_t* p16, bool keep_float);
std::vector<std::pair<std::string, ExpRowFn>> exp_row_forms();
// dp[j] = p[j] * (dp[j] - d); when ds16 is given also the values rounded to bfloat16.
void softmax_grad_row(float* dp, const float* p, int64_t n, float d, uint16_t* ds16);
void scale_row(float* x, int64_t n, float factor);
// The dot product of two rows of the dtype (16-bit: bfloat16 bits), in float32.
float dot_row(const void* x, int64_t xs, const void* y, int64_t ys, int64_t n, bool is_16bit);
// dst[c * stride] = src[c] * factor rounded to the dtype; src null: every element is factor.
void store_row(const float* src, int64_t n, float factor, void* dst, int64_t stride, bool is_16bit);
float exp_scalar(float x);

}  // namespace stax::external::detail

namespace stax::external {

struct AttentionPlan::Impl {
  AttentionSpec spec;
  AttentionBlocks blocks;
  bool backward = false;
  int64_t B = 0, Hq = 0, Hkv = 0, Lq = 0, Lk = 0, E = 0, Ev = 0;
  bool is_16bit = false;
  size_t element = 4;
  detail::View4 q, k, v, mask, out, lse, grad_out, out_in, lse_in, dq, dk, dv;
  bool has_mask = false;
  detail::Operand2 q_use, k_use, v_use, go_use;
  std::unique_ptr<detail::GemmCache> gemms;
  Arithmetic arithmetic = Arithmetic::Native;
  size_t workspace_bytes = 0;
  std::unique_ptr<detail::BufferPool> pool;

  int64_t query_blocks() const {
    return blocks.query_rows == 0 ? 0 : (Lq + blocks.query_rows - 1) / blocks.query_rows;
  }
  // Keys that some row of the block starting at i0 with m rows sees: causal stops at the
  // block's last row.
  int64_t key_end(int64_t i0, int64_t m) const { return spec.causal ? std::min(Lk, i0 + m) : Lk; }
  // Adds the mask and the causal -inf to the scores of query row i against keys j0..j0+n.
  void mask_row(float* s, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t n,
                const void* mask_data) const;
  // The workspace of one thread: fixed offsets into one buffer.
  struct Layout {
    size_t s = 0, p16 = 0, dp = 0, acc = 0, rows = 0, qpack = 0, kpack = 0, vpack = 0, gopack = 0,
           dkacc = 0, dvacc = 0, scratchpad = 0, total = 0;
  };
  Layout layout() const;
  // Runs body(item, workspace) for items 0..count on `threads` threads (attention.cpp); the
  // first exception is rethrown after the parallel region.
  template <typename Body>
  void parallel_items(int64_t count, int threads, Body body) const;
  void forward_item(int64_t item, const char* q_data, const char* k_data, const char* v_data,
                    const void* mask_data, char* out_data, float* lse_data,
                    detail::Workspace& ws) const;
  void backward_item(int64_t item, const char* go_data, const char* q_data, const char* k_data,
                     const char* v_data, const char* o_data, const float* lse_data,
                     const void* mask_data, char* dq_data, char* dk_data, char* dv_data,
                     detail::Workspace& ws) const;
};

}  // namespace stax::external
