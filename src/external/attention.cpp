// AttentionPlan (attention.h): the spec checks, the blocking, the cache of oneDNN block
// products, the vectorized row loops and the forward. The backward is attention_backward.cpp.
//
// Forward, per work item (batch b, query head h, block of query rows i0..i0+m):
//   for each block of keys j0..j0+n (n <= blocks.keys; causal: only keys some row sees)
//     S = scale * Q K^T               oneDNN, float32 [m, n], in the thread's workspace
//     S += mask; causal: S_ij = -inf for j > i
//     row max M' = max(M, max_j S_ij); ref = M' (0 when M' is -inf: the row has no key yet)
//     P = exp(S - ref) (float32, summed in float32; 16-bit: P rounded to the dtype)
//     acc = acc * exp(M - ref) + P V  oneDNN (its sum post-op), float32 [m, Ev]
//   out = acc / sum rounded once; lse = M + log(sum); a row with M = -inf: out 0, lse 0.
// One key block holding every key is the plain softmax. The scores of a block stay in cache:
// choose_attention_blocks sizes the block from the L2 size.
//
// The row loops (mask, max, exp, stores) are attention_rows.cpp.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "external/attention_internal.h"
#include "external/matmul.h"  // LibraryError
#include "external/spec_check.h"
#include "external/widening.h"

namespace stax::external {

namespace detail {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

View4 View4::of(const StridedOperand& operand) {
  View4 v;
  const size_t rank = operand.sizes.size();
  for (int d = 0; d < 4; ++d) {
    v.size[d] = 1;
    v.stride[d] = 0;
  }
  for (size_t d = 0; d < rank && d < 4; ++d) {
    const size_t to = 4 - rank + d;
    v.size[to] = operand.sizes[d];
    v.stride[to] = operand.sizes[d] == 1 ? 0 : operand.strides[d];
  }
  return v;
}

Operand2 operand_use(const View4& view, bool pack) {
  Operand2 use;
  const int64_t rows = view.size[2], cols = view.size[3];
  use.rs = view.stride[2];
  use.cs = view.stride[3];
  if (cols <= 1) use.cs = 1;
  if (rows <= 1) use.rs = cols;
  use.packed = pack || use.cs != 1 || use.rs < cols;
  if (use.packed) {
    use.rs = cols;
    use.cs = 1;
  }
  return use;
}

namespace {

template <typename T>
void pack_strided(const T* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols, T* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[r * rs + c * cs];
  }
}

}  // namespace

void pack_matrix(const char* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols,
                 size_t element, char* dst) {
  // Whole rows where they are contiguous (heads of a [B, L, H, E] tensor: rows H * E apart),
  // else element by element in the element's own type. A memcpy call per 2-byte element
  // was over half of a bfloat16 forward's time on such heads.
  if (cs == 1) {
    const auto row_bytes = static_cast<size_t>(cols) * element;
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dst + static_cast<size_t>(r) * row_bytes,
                  src + r * rs * static_cast<int64_t>(element), row_bytes);
    }
  } else if (element == 2) {
    pack_strided(reinterpret_cast<const uint16_t*>(src), rs, cs, rows, cols,
                 reinterpret_cast<uint16_t*>(dst));
  } else if (element == 4) {
    pack_strided(reinterpret_cast<const uint32_t*>(src), rs, cs, rows, cols,
                 reinterpret_cast<uint32_t*>(dst));
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        std::memcpy(dst + (r * cols + c) * element, src + (r * rs + c * cs) * element, element);
      }
    }
  }
}

namespace {

// A [rows, cols] matrix's descriptor; size-1 dims get the strides of a dense layout.
dnnl::memory::desc matrix_desc(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                               dnnl::memory::data_type dt) {
  if (cols == 1) cs = 1;
  if (rows == 1) rs = cs == 1 ? cols : 1;
  return dnnl::memory::desc({rows, cols}, dt, {rs, cs});
}

}  // namespace

std::string block_product_over_32_bits(const GemmKey& key) {
  const int64_t a_sizes[] = {key.m, key.k}, a_strides[] = {key.a_rs, key.a_cs};
  const int64_t b_sizes[] = {key.k, key.n}, b_strides[] = {key.b_rs, key.b_cs};
  const int64_t c_sizes[] = {key.m, key.n}, c_strides[] = {key.c_ld, 1};
  std::string over = detail::over_32_bits("a", a_sizes, a_strides);
  if (over.empty()) over = detail::over_32_bits("b", b_sizes, b_strides);
  if (over.empty()) over = detail::over_32_bits("c", c_sizes, c_strides);
  return over;
}

dnnl::matmul::primitive_desc block_product_desc(DType dtype, const GemmKey& key) {
  using dt = dnnl::memory::data_type;
  const dt operand = *library_dtype(dtype);
  const dnnl::memory::desc a = matrix_desc(key.m, key.k, key.a_rs, key.a_cs, operand);
  const dnnl::memory::desc b = matrix_desc(key.k, key.n, key.b_rs, key.b_cs, operand);
  const dnnl::memory::desc c = matrix_desc(key.m, key.n, key.c_ld, 1, dt::f32);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key.scale != 1.0f) attr.set_output_scales(0, {key.scale});
  if (key.sum) {
    dnnl::post_ops post_ops;
    post_ops.append_sum(1.0f);
    attr.set_post_ops(post_ops);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, cpu_engine());
}

GemmKey GemmCache::library_key(const GemmKey& key) const {
  if (!widens_) return key;
  GemmKey dense = key;
  std::tie(dense.a_rs, dense.a_cs) = dense_strides(key.m, key.k, key.a_rs, key.a_cs);
  std::tie(dense.b_rs, dense.b_cs) = dense_strides(key.k, key.n, key.b_rs, key.b_cs);
  return dense;
}

const Gemm& GemmCache::get(const GemmKey& given) {
  const GemmKey key = library_key(given);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = gemms_[key];
  if (slot) return *slot;
  OmpThreads one(1);  // the products run inside the plan's parallel region, one per thread
  // Before any question to oneDNN, which may divide by zero on these sizes (spec_check.h).
  const std::string over = block_product_over_32_bits(key);
  if (!over.empty()) {
    throw LibraryError(what_ + ": its block product " + std::to_string(key.m) + "x" +
                       std::to_string(key.k) + " @ " + std::to_string(key.k) + "x" +
                       std::to_string(key.n) + ": " + detail::library_size_refusal("matmul", over));
  }
  auto gemm = std::make_unique<Gemm>();
  try {
    const dnnl::matmul::primitive_desc pd = block_product_desc(dtype_, key);
    gemm->a = pd.src_desc();
    gemm->b = pd.weights_desc();
    gemm->c = pd.dst_desc();
    if (detail::is_reference(pd.impl_info_str())) {
      throw LibraryError(what_ + ": oneDNN has only its reference kernel for the block product " +
                         std::to_string(key.m) + "x" + std::to_string(key.k) + " @ " +
                         std::to_string(key.k) + "x" + std::to_string(key.n));
    }
    gemm->scratchpad = pd.scratchpad_desc();
    gemm->scratchpad_bytes = gemm->scratchpad.get_size();
    gemm->primitive = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    throw LibraryError(what_ + ": oneDNN refuses a block product (" + e.what() + ")");
  }
  max_scratchpad_ = std::max(max_scratchpad_, gemm->scratchpad_bytes);
  slot = std::move(gemm);
  return *slot;
}

size_t GemmCache::max_scratchpad_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_scratchpad_;
}

void run_gemm(GemmCache& cache, const GemmKey& key, const void* a, const void* b, float* c,
              Workspace& workspace) {
  if (key.m == 0 || key.n == 0) return;
  if (key.k == 0) {
    if (!key.sum) {
      for (int64_t r = 0; r < key.m; ++r) std::fill(c + r * key.c_ld, c + r * key.c_ld + key.n, 0);
    }
    return;
  }
  const Gemm& gemm = cache.get(key);
  if (cache.widens()) {
    // The float32 copies the product reads (arithmetic.h): a [m, k], then b [k, n].
    const auto bytes = static_cast<size_t>(key.m * key.k + key.k * key.n) * sizeof(float);
    if (bytes > workspace.widened_bytes) {
      workspace.widened = allocate(bytes);
      workspace.widened_bytes = bytes;
    }
    auto* a32 = static_cast<float*>(workspace.widened.get());
    float* b32 = a32 + key.m * key.k;
    widen_matrix(key.m, key.k, static_cast<const uint16_t*>(a), key.a_rs, key.a_cs, a32);
    widen_matrix(key.k, key.n, static_cast<const uint16_t*>(b), key.b_rs, key.b_cs, b32);
    a = a32;
    b = b32;
  }
  if (gemm.scratchpad_bytes > workspace.scratchpad_bytes) {
    workspace.extra_scratchpad = allocate(gemm.scratchpad_bytes);
    workspace.scratchpad = static_cast<char*>(workspace.extra_scratchpad.get());
    workspace.scratchpad_bytes = gemm.scratchpad_bytes;
    for (BoundGemm& bound : workspace.bound) {
      if (bound.gemm->scratchpad_bytes > 0) bound.scratchpad.set_data_handle(workspace.scratchpad);
    }
  }
  BoundGemm* bound = nullptr;
  for (BoundGemm& candidate : workspace.bound) {
    if (candidate.gemm == &gemm) bound = &candidate;
  }
  const dnnl::engine& engine = cpu_engine();
  if (bound == nullptr) {
    BoundGemm& fresh = workspace.bound.emplace_back();
    fresh.gemm = &gemm;
    fresh.a = dnnl::memory(gemm.a, engine, const_cast<void*>(a));
    fresh.b = dnnl::memory(gemm.b, engine, const_cast<void*>(b));
    fresh.c = dnnl::memory(gemm.c, engine, c);
    fresh.args = {{DNNL_ARG_SRC, fresh.a}, {DNNL_ARG_WEIGHTS, fresh.b}, {DNNL_ARG_DST, fresh.c}};
    if (gemm.scratchpad_bytes > 0) {
      fresh.scratchpad = dnnl::memory(gemm.scratchpad, engine, workspace.scratchpad);
      fresh.args.emplace(DNNL_ARG_SCRATCHPAD, fresh.scratchpad);
    }
    bound = &fresh;
  } else {
    bound->a.set_data_handle(const_cast<void*>(a));
    bound->b.set_data_handle(const_cast<void*>(b));
    bound->c.set_data_handle(c);
  }
  gemm.primitive.execute(thread_stream(), bound->args);
}

}  // namespace detail

namespace {

using detail::View4;

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t d = 0; d < sizes.size(); ++d) text += (d ? ", " : "") + std::to_string(sizes[d]);
  return text + "]";
}

// Whether oneDNN multiplies this dtype natively on this CPU (a 2x2 product, asked once per
// dtype).
std::string native_refusal(DType dtype) {
  static detail::ProbeAnswers<DType> answers;
  return answers.get(dtype, [dtype]() -> std::string {
    if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) {
      return "attention takes f32, bf16 or f16, not " + std::string(dtype_name(dtype));
    }
    try {
      const auto dt = *detail::library_dtype(dtype);
      dnnl::memory::desc a({2, 2}, dt, {2, 1}), c({2, 2}, dnnl::memory::data_type::f32, {2, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, a, c), detail::cpu_engine());
      if (detail::is_reference(pd.impl_info_str())) {
        return detail::library_version() + " has only its reference (slow) " +
               std::string(dtype_name(dtype)) + " matmul on this CPU";
      }
    } catch (const dnnl::error& e) {
      return detail::library_version() + " has no " + std::string(dtype_name(dtype)) +
             " matmul on this CPU (" + e.what() + ")";
    }
    return "";
  });
}

}  // namespace

std::string AttentionSpec::describe() const {
  std::ostringstream text;
  text << "attention q " << sizes_text(query.sizes) << " k " << sizes_text(key.sizes) << " v "
       << sizes_text(value.sizes);
  if (mask) text << " mask " << sizes_text(mask->sizes) << " " << dtype_name(mask_dtype);
  if (causal) text << " causal";
  if (masked_rows_nan) text << " masked-rows-nan";
  text << " scale " << scale << " " << dtype_name(dtype);
  return text.str();
}

AttentionBlocks choose_attention_blocks(const AttentionSpec& spec) {
  AttentionBlocks blocks;
  const int64_t lq = spec.query.sizes.size() == 4 ? spec.query.sizes[2] : 0;
  const int64_t lk = spec.key.sizes.size() == 4 ? spec.key.sizes[2] : 0;
  const int64_t e = spec.query.sizes.size() == 4 ? spec.query.sizes[3] : 0;
  const int64_t ev = spec.value.sizes.size() == 4 ? spec.value.sizes[3] : 0;
  const auto element = static_cast<int64_t>(dtype_size(spec.dtype));
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const bool l2_known = l2 > 0;
  if (!l2_known) l2 = 1 << 20;
  l2 = std::clamp<long>(l2, 256 << 10, 4 << 20);
  // Query rows: 128 amortizes a product's fixed cost (oneDNN's repacking of the key block)
  // over enough rows (measured at E = 64, L = 512, 2 threads: 5-10% faster than 64, 32 is
  // slower still) and keeps the accumulator [rows, Ev] small.
  blocks.query_rows = std::max<int64_t>(1, std::min<int64_t>(lq, 128));
  // Keys: the block's working set -- scores (float32, and the backward's dP), the 16-bit P,
  // the key and value rows -- within 3/4 of L2, the rest for the accumulators and Q.
  const int64_t per_key = blocks.query_rows * (8 + (element == 2 ? 2 : 0)) + (e + ev) * element;
  const int64_t budget = l2 / 4 * 3;
  int64_t keys = std::max<int64_t>(64, budget / std::max<int64_t>(per_key, 1) / 64 * 64);
  std::string why;
  if (lk <= keys) {
    keys = std::max<int64_t>(lk, 1);
    why = "every key fits (one block: plain softmax)";
  } else {
    why = "the scores of all " + std::to_string(lk) + " keys do not fit (online softmax)";
  }
  blocks.keys = keys;
  if (spec.block_query_rows > 0) blocks.query_rows = spec.block_query_rows;
  if (spec.block_keys > 0) blocks.keys = spec.block_keys;
  blocks.reason = std::to_string(blocks.query_rows) + " query rows x " +
                  std::to_string(blocks.keys) + " keys per block: 3/4 of L2 (" +
                  std::to_string(l2 >> 10) + " KiB" + (l2_known ? "" : ", assumed") + ") holds " +
                  std::to_string(budget / std::max<int64_t>(per_key, 1)) +
                  " keys of a block's scores and K/V rows; " + why;
  if (spec.block_query_rows > 0 || spec.block_keys > 0) blocks.reason += " (forced by the spec)";
  return blocks;
}

std::optional<std::string> attention_spec_problem(const AttentionSpec& spec, bool backward) {
  auto layout_problem = [](const char* name, const StridedOperand& o,
                           size_t rank) -> std::optional<std::string> {
    if (o.sizes.size() != rank) {
      return std::string(name) + " has rank " + std::to_string(o.sizes.size()) + ", not " +
             std::to_string(rank);
    }
    if (o.strides.size() != o.sizes.size()) {
      return std::string(name) + " has " + std::to_string(o.strides.size()) + " strides for " +
             std::to_string(o.sizes.size()) + " sizes";
    }
    for (size_t d = 0; d < rank; ++d) {
      if (o.sizes[d] < 0 || o.strides[d] < 0) {
        return std::string(name) + " has a negative size or stride";
      }
    }
    return std::nullopt;
  };
  auto expect = [](const char* name, const StridedOperand& o,
                   const std::vector<int64_t>& sizes) -> std::optional<std::string> {
    if (o.sizes != sizes) {
      return std::string(name) + " is " + sizes_text(o.sizes) + ", not " + sizes_text(sizes);
    }
    return std::nullopt;
  };
  auto output_overlaps = [](const char* name,
                            const StridedOperand& o) -> std::optional<std::string> {
    if (detail::elements_overlap(o.sizes, o.strides)) {
      return std::string(name) + "'s elements overlap (a stride too small for its size)";
    }
    return std::nullopt;
  };
  for (auto [name, o] : {std::pair{"query", &spec.query}, std::pair{"key", &spec.key},
                         std::pair{"value", &spec.value}, std::pair{"out", &spec.out}}) {
    if (auto p = layout_problem(name, *o, 4)) return p;
  }
  const auto& q = spec.query.sizes;
  const auto& k = spec.key.sizes;
  const auto& v = spec.value.sizes;
  if (k[0] != q[0] || v[0] != q[0]) {
    return "the batch sizes differ: query " + sizes_text(q) + ", key " + sizes_text(k) +
           ", value " + sizes_text(v);
  }
  if (k[1] != v[1]) {
    return "key and value have different head counts: key " + sizes_text(k) + ", value " +
           sizes_text(v);
  }
  if (k[1] == 0 ? q[1] != 0 : q[1] % k[1] != 0) {
    return "the query heads (" + std::to_string(q[1]) + ") are not a multiple of the key/value " +
           "heads (" + std::to_string(k[1]) + ")";
  }
  if (k[3] != q[3]) {
    return "query and key have different embedding sizes: query " + sizes_text(q) + ", key " +
           sizes_text(k);
  }
  if (k[2] != v[2]) {
    return "key and value have different lengths: key " + sizes_text(k) + ", value " +
           sizes_text(v);
  }
  const std::vector<int64_t> out_sizes{q[0], q[1], q[2], v[3]};
  const std::vector<int64_t> lse_sizes{q[0], q[1], q[2]};
  if (auto p = expect("out", spec.out, out_sizes)) return p;
  if (auto p = output_overlaps("out", spec.out)) return p;
  if (!spec.lse.sizes.empty()) {
    if (auto p = layout_problem("lse", spec.lse, 3)) return p;
    if (auto p = expect("lse", spec.lse, lse_sizes)) return p;
    if (auto p = output_overlaps("lse", spec.lse)) return p;
  }
  if (spec.mask) {
    const StridedOperand& m = *spec.mask;
    if (m.sizes.size() > 4 || m.strides.size() != m.sizes.size()) {
      return "the mask " + sizes_text(m.sizes) + " is not a rank <= 4 layout";
    }
    const std::vector<int64_t> full{q[0], q[1], q[2], k[2]};
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      const int64_t want = full[4 - m.sizes.size() + d];
      if ((m.sizes[d] != want && m.sizes[d] != 1) || m.strides[d] < 0) {
        return "the mask " + sizes_text(m.sizes) + " does not broadcast to " + sizes_text(full);
      }
    }
    if (spec.mask_dtype != DType::Float32 && spec.mask_dtype != spec.dtype) {
      return "the mask is " + std::string(dtype_name(spec.mask_dtype)) +
             ": it must be f32 or the " + "query's dtype (" + std::string(dtype_name(spec.dtype)) +
             ")";
    }
  }
  if (std::string why; !AttentionPlan::arithmetic(spec.dtype, &why)) return why;
  if (!backward) return std::nullopt;
  for (auto [name, o] :
       {std::pair{"grad_out", &spec.grad_out}, std::pair{"out_in", &spec.out_in},
        std::pair{"grad_query", &spec.grad_query}, std::pair{"grad_key", &spec.grad_key},
        std::pair{"grad_value", &spec.grad_value}}) {
    if (auto p = layout_problem(name, *o, 4)) return p;
  }
  if (auto p = layout_problem("lse_in", spec.lse_in, 3)) return p;
  if (auto p = expect("grad_out", spec.grad_out, out_sizes)) return p;
  if (auto p = expect("out_in", spec.out_in, out_sizes)) return p;
  if (auto p = expect("lse_in", spec.lse_in, lse_sizes)) return p;
  if (auto p = expect("grad_query", spec.grad_query, q)) return p;
  if (auto p = expect("grad_key", spec.grad_key, k)) return p;
  if (auto p = expect("grad_value", spec.grad_value, v)) return p;
  for (auto [name, o] :
       {std::pair{"grad_query", &spec.grad_query}, std::pair{"grad_key", &spec.grad_key},
        std::pair{"grad_value", &spec.grad_value}}) {
    if (auto p = output_overlaps(name, *o)) return p;
  }
  return std::nullopt;
}

// ---- The plan ----

void AttentionPlan::Impl::mask_row(float* s, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t n,
                                   const void* mask_data) const {
  if (has_mask) {
    const int64_t offset = mask.at(b, h, i) + j0 * mask.stride[3];
    const size_t esize = spec.mask_dtype == DType::Float32 ? 4 : 2;
    detail::add_mask_row(s, n, static_cast<const char*>(mask_data) + offset * esize, esize == 2,
                         mask.stride[3]);
  }
  if (spec.causal && j0 + n - 1 > i) {
    std::fill(s + std::max<int64_t>(i + 1 - j0, 0), s + n, -detail::kInf);
  }
}

AttentionPlan::Impl::Layout AttentionPlan::Impl::layout() const {
  Layout l;
  const auto qr = static_cast<size_t>(blocks.query_rows);
  const auto kb = static_cast<size_t>(blocks.keys);
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t start = at;
    at += (bytes + 63) / 64 * 64;
    return start;
  };
  l.s = take(qr * kb * 4);
  l.p16 = take(is_16bit ? qr * kb * 2 : 0);
  l.dp = take(backward ? qr * kb * 4 : 0);
  l.acc = take(qr * static_cast<size_t>(std::max(E, Ev)) * 4);
  l.rows = take(qr * 2 * 4);
  l.qpack = take(q_use.packed ? qr * E * element : 0);
  l.kpack = take(k_use.packed ? kb * E * element : 0);
  l.vpack = take(v_use.packed ? kb * Ev * element : 0);
  l.gopack = take(backward && go_use.packed ? qr * Ev * element : 0);
  l.dkacc = take(backward ? static_cast<size_t>(Lk * E) * 4 : 0);
  l.dvacc = take(backward ? static_cast<size_t>(Lk * Ev) * 4 : 0);
  l.scratchpad = take(0);
  l.total = at;
  return l;
}

void AttentionPlan::Impl::forward_item(int64_t item, const char* q_data, const char* k_data,
                                       const char* v_data, const void* mask_data, char* out_data,
                                       float* lse_data, detail::Workspace& ws) const {
  const int64_t nqb = query_blocks();
  const int64_t qb = item % nqb, h = item / nqb % Hq, b = item / nqb / Hq;
  const int64_t g = h / (Hq / Hkv);
  const int64_t qr = blocks.query_rows, kb = blocks.keys;
  const int64_t i0 = qb * qr, m = std::min(qr, Lq - i0);
  const Layout l = layout();
  char* base = static_cast<char*>(ws.buffer.get());
  auto* s = reinterpret_cast<float*>(base + l.s);
  auto* p16 = is_16bit ? reinterpret_cast<uint16_t*>(base + l.p16) : nullptr;
  auto* acc = reinterpret_cast<float*>(base + l.acc);
  auto* row_max = reinterpret_cast<float*>(base + l.rows);
  float* row_sum = row_max + qr;
  const char* qp = detail::block_rows(q_data, q, q_use, b, h, i0, m, E, element, base + l.qpack);
  const int64_t kend = key_end(i0, m);
  std::fill(row_max, row_max + m, -detail::kInf);
  std::fill(row_sum, row_sum + m, 0.0f);
  const auto scale = static_cast<float>(spec.scale);
  for (int64_t j0 = 0; j0 < kend; j0 += kb) {
    const int64_t n = std::min(kb, kend - j0);
    const char* kp = detail::block_rows(k_data, k, k_use, b, g, j0, n, E, element, base + l.kpack);
    const char* vp = detail::block_rows(v_data, v, v_use, b, g, j0, n, Ev, element, base + l.vpack);
    detail::run_gemm(*gemms, {m, n, E, q_use.rs, 1, 1, k_use.rs, n, scale, false}, qp, kp, s, ws);
    for (int64_t r = 0; r < m; ++r) {
      float* row = s + r * n;
      mask_row(row, b, h, i0 + r, j0, n, mask_data);
      const float old_max = row_max[r];
      const float new_max = std::max(old_max, detail::row_max(row, n));
      const float ref = new_max == -detail::kInf ? 0.0f : new_max;
      const float sum = detail::exp_row(row, n, ref, p16 ? p16 + r * n : nullptr, false);
      if (j0 == 0) {
        row_sum[r] = sum;
      } else {
        const float alpha = detail::exp_scalar(old_max - ref);
        row_sum[r] = row_sum[r] * alpha + sum;
        if (alpha != 1.0f) detail::scale_row(acc + r * Ev, Ev, alpha);
      }
      row_max[r] = new_max;
    }
    detail::run_gemm(*gemms, {m, Ev, n, n, 1, v_use.rs, 1, Ev, 1.0f, j0 > 0},
                     p16 ? static_cast<const void*>(p16) : s, vp, acc, ws);
  }
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = i0 + r;
    char* o = out_data + out.at(b, h, i) * element;
    const bool empty = row_max[r] == -detail::kInf;
    const float empty_value =
        spec.masked_rows_nan && kend > 0 ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    detail::store_row(empty ? nullptr : acc + r * Ev, Ev, empty ? empty_value : 1.0f / row_sum[r],
                      o, out.stride[3], is_16bit);
    if (lse_data != nullptr) {
      lse_data[lse.stride[1] * b + lse.stride[2] * h + lse.stride[3] * i] =
          empty ? 0.0f : row_max[r] + std::log(row_sum[r]);
    }
  }
}

std::optional<Arithmetic> AttentionPlan::arithmetic(DType dtype, std::string* why) {
  return arithmetic_for(dtype, native_refusal, why);
}

Arithmetic AttentionPlan::arithmetic() const {
  return impl_->arithmetic;
}

AttentionPlan::AttentionPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AttentionPlan::~AttentionPlan() = default;
const AttentionSpec& AttentionPlan::spec() const {
  return impl_->spec;
}
const AttentionBlocks& AttentionPlan::blocks() const {
  return impl_->blocks;
}

std::unique_ptr<AttentionPlan> AttentionPlan::create(const AttentionSpec& spec, bool backward,
                                                     int num_threads) {
  if (auto problem = attention_spec_problem(spec, backward)) {
    throw std::invalid_argument(spec.describe() + ": " + *problem);
  }
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  p.spec = spec;
  p.backward = backward;
  p.blocks = choose_attention_blocks(spec);
  p.B = spec.query.sizes[0];
  p.Hq = spec.query.sizes[1];
  p.Lq = spec.query.sizes[2];
  p.E = spec.query.sizes[3];
  p.Hkv = spec.key.sizes[1];
  p.Lk = spec.key.sizes[2];
  p.Ev = spec.value.sizes[3];
  p.is_16bit = spec.dtype != DType::Float32;
  p.element = dtype_size(spec.dtype);
  p.q = View4::of(spec.query);
  p.k = View4::of(spec.key);
  p.v = View4::of(spec.value);
  p.out = View4::of(spec.out);
  p.lse = View4::of(spec.lse);
  p.has_mask = spec.mask.has_value();
  if (p.has_mask) p.mask = View4::of(*spec.mask);
  // Packed where the layout or oneDNN's kernel choice asks for it (attention_packing.cpp).
  const AttentionPacking packing = choose_attention_packing(spec, backward);
  p.q_use = detail::operand_use(p.q, packing.query);
  p.k_use = detail::operand_use(p.k, packing.key);
  p.v_use = detail::operand_use(p.v, packing.value);
  if (backward) {
    p.grad_out = View4::of(spec.grad_out);
    p.out_in = View4::of(spec.out_in);
    p.lse_in = View4::of(spec.lse_in);
    p.dq = View4::of(spec.grad_query);
    p.dk = View4::of(spec.grad_key);
    p.dv = View4::of(spec.grad_value);
    p.go_use = detail::operand_use(p.grad_out, packing.grad_out);
  }
  p.arithmetic = *arithmetic(spec.dtype);
  p.gemms = std::make_unique<detail::GemmCache>(spec.dtype, p.arithmetic, spec.describe());
  // The block products a run makes, built now (a run builds any other on first use). Their
  // keys differ only in the first key block, a full one and the last, and in the row block
  // (full or the last; a causal mask ends each one's keys elsewhere): the first 1024 row
  // blocks and the last stand for all, so that 2^32 rows take no 2^50 steps here.
  detail::Workspace none;
  const int64_t qr = p.blocks.query_rows, kb = p.blocks.keys;
  const auto scale = static_cast<float>(spec.scale);
  std::set<detail::GemmKey> keys;
  if (p.B > 0 && p.Hq > 0 && p.E > 0 && p.Ev > 0 && p.Lq > 0) {
    const int64_t row_blocks = (p.Lq + qr - 1) / qr;
    std::set<int64_t> row_starts = {(row_blocks - 1) * qr};
    for (int64_t r = 0; r < std::min<int64_t>(row_blocks, 1024); ++r) row_starts.insert(r * qr);
    for (const int64_t i0 : row_starts) {
      const int64_t m = std::min(qr, p.Lq - i0), kend = p.key_end(i0, m);
      if (kend <= 0) continue;
      const std::set<int64_t> key_starts = {0, kb < kend ? kb : 0, (kend - 1) / kb * kb};
      for (const int64_t j0 : key_starts) {
        const int64_t n = std::min(kb, kend - j0);
        keys.insert({m, n, p.E, p.q_use.rs, 1, 1, p.k_use.rs, n, scale, false});
        if (!backward) {
          keys.insert({m, p.Ev, n, n, 1, p.v_use.rs, 1, p.Ev, 1.0f, j0 > 0});
        } else {
          keys.insert({n, p.Ev, m, 1, n, p.go_use.rs, 1, p.Ev, 1.0f, true});
          keys.insert({m, n, p.Ev, p.go_use.rs, 1, 1, p.v_use.rs, n, 1.0f, false});
          keys.insert({m, p.E, n, n, 1, p.k_use.rs, 1, p.E, scale, j0 > 0});
          keys.insert({n, p.E, m, 1, n, p.q_use.rs, 1, p.E, scale, true});
        }
      }
    }
  }
  (void)num_threads;
  for (const detail::GemmKey& key : keys) p.gemms->get(key);
  const Impl::Layout l = p.layout();
  p.workspace_bytes = l.total + p.gemms->max_scratchpad_bytes();
  p.pool = std::make_unique<detail::BufferPool>(p.workspace_bytes);
  return std::unique_ptr<AttentionPlan>(new AttentionPlan(std::move(impl)));
}

// Runs body(item, workspace) for items 0..count on `threads` threads; the first exception
// (in item order of discovery) is rethrown after the region.
template <typename Body>
void AttentionPlan::Impl::parallel_items(int64_t count, int threads, Body body) const {
  using detail::thread_stream;
  using detail::Workspace;
  const Impl& p = *this;
  if (count <= 0) return;
  const int used = static_cast<int>(std::min<int64_t>(std::max(threads, 1), count));
  std::exception_ptr error;
  std::mutex error_mutex;
  const size_t scratchpad_at = p.layout().total;
#pragma omp parallel num_threads(used)
  {
    // Each product runs on the thread of its item. oneDNN's GEMM-based kernels (its float32
    // matmul on CPUs without AVX-512) read the thread count when they run, not when they are
    // built, and a team of one thread is no active parallel region to them: with one thread
    // they would spread a product over the caller's omp max-threads and split its sums over
    // K, so that dk and dv differed in their last bits between 1 and 2 threads (measured on an
    // AVX2-only AMD Zen 2).
    detail::OmpThreads one_per_product(1);
    Workspace ws;
    try {
      ws.buffer = p.pool->take();
      ws.scratchpad = static_cast<char*>(ws.buffer.get()) + scratchpad_at;
      ws.scratchpad_bytes = p.workspace_bytes - scratchpad_at;
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < count; ++item) {
      if (!ws.buffer) continue;
      try {
        body(item, ws);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    try {
      thread_stream().wait();
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
    ws.buffer.reset();
  }
  if (error) std::rethrow_exception(error);
}

void AttentionPlan::run_forward(const void* query, const void* key, const void* value,
                                const void* mask, void* out, float* lse, int num_threads) const {
  const Impl& p = *impl_;
  const int threads = detail::resolve_threads(num_threads);
  const int64_t items = p.B * p.Hq * p.query_blocks();
  try {
    p.parallel_items(items, threads, [&](int64_t item, detail::Workspace& ws) {
      p.forward_item(item, static_cast<const char*>(query), static_cast<const char*>(key),
                     static_cast<const char*>(value), mask, static_cast<char*>(out), lse, ws);
    });
  } catch (const dnnl::error& e) {
    throw LibraryError(p.spec.describe() + ": oneDNN failed: " + e.what());
  }
}

void AttentionPlan::run_backward(const void* grad_out, const void* query, const void* key,
                                 const void* value, const void* out, const float* lse,
                                 const void* mask, void* grad_query, void* grad_key,
                                 void* grad_value, int num_threads) const {
  const Impl& p = *impl_;
  if (!p.backward) throw std::logic_error(p.spec.describe() + ": a forward plan run backward");
  const int threads = detail::resolve_threads(num_threads);
  try {
    p.parallel_items(p.B * p.Hkv, threads, [&](int64_t item, detail::Workspace& ws) {
      p.backward_item(item, static_cast<const char*>(grad_out), static_cast<const char*>(query),
                      static_cast<const char*>(key), static_cast<const char*>(value),
                      static_cast<const char*>(out), lse, mask, static_cast<char*>(grad_query),
                      static_cast<char*>(grad_key), static_cast<char*>(grad_value), ws);
    });
  } catch (const dnnl::error& e) {
    throw LibraryError(p.spec.describe() + ": oneDNN failed: " + e.what());
  }
}

}  // namespace stax::external
