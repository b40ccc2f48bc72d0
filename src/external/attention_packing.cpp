// How the attention's block products read each operand: in place, or copied per block into
// dense rows. A query, key or value read in place out of a fused projection (BERT's q, k and v
// are column slices of one [tokens, 3 * hidden] product, or heads of a [tokens, hidden] one)
// has rows `hidden` elements apart rather than `head dim`. oneDNN 2.6 runs its AMX (brgemm)
// matmul only on dense leading dimensions: measured on a Xeon with AMX-BF16, a 128x64 @ 64x128
// bfloat16 block product takes 5.4 us on dense rows (brg:avx512_core_amx_bf16) and 95 us with
// rows 768 apart (gemm:jit), while copying the 16 KiB block costs about a microsecond (float32:
// brg:avx512_core 13.3 us against gemm:jit 14.5, about even with the copy). So an
// operand is packed exactly where oneDNN would run another kernel on it in place than on
// dense rows: the rule asks oneDNN, not the CPU's name, and holds on every CPU kind.
#include <string>

#include "external/attention_internal.h"

namespace stax::external {

namespace {

struct Candidate {
  const char* name;
  bool* packed;
  int64_t rs;                // the row stride the products would read in place
  int64_t cols;              // a dense row's length
  detail::GemmKey in_place;  // the representative product reading this operand in place
  detail::GemmKey dense;     // the same product reading it from dense rows
};

// Appends `item` to a `separator`-separated list.
void append(std::string& list, const char* separator, const std::string& item) {
  list += (list.empty() ? "" : separator) + item;
}

// oneDNN's implementation for a block product, or why it has none.
std::string implementation(DType dtype, const detail::GemmKey& key) {
  try {
    return detail::block_product_desc(dtype, key).impl_info_str();
  } catch (const dnnl::error& e) {
    return std::string("none (") + e.what() + ")";
  }
}

}  // namespace

AttentionPacking choose_attention_packing(const AttentionSpec& spec, bool backward) {
  AttentionPacking packing;
  if (spec.query.sizes.size() != 4 || spec.key.sizes.size() != 4 || spec.value.sizes.size() != 4 ||
      !detail::library_dtype(spec.dtype)) {
    return packing;
  }
  const detail::View4 q = detail::View4::of(spec.query), k = detail::View4::of(spec.key),
                      v = detail::View4::of(spec.value);
  const AttentionBlocks blocks = choose_attention_blocks(spec);
  const int64_t m = std::min(blocks.query_rows, q.size[2]), n = std::min(blocks.keys, k.size[2]);
  const int64_t e = q.size[3], ev = v.size[3];
  if (m <= 0 || n <= 0 || e <= 0 || ev <= 0) return packing;
  const detail::Operand2 q_use = detail::operand_use(q), k_use = detail::operand_use(k),
                         v_use = detail::operand_use(v);
  packing.query = q_use.packed;
  packing.key = k_use.packed;
  packing.value = v_use.packed;
  std::string layout_packed;
  for (const auto& [name, packed] :
       {std::pair{"query", packing.query}, std::pair{"key", packing.key},
        std::pair{"value", packing.value}}) {
    if (packed) append(layout_packed, ", ", name);
  }
  const auto scale = static_cast<float>(spec.scale);
  // Each operand is judged with the others dense: S = scale Q K^T reads the query and the key,
  // O += P V the value, dP = dO V^T the gradient of the output.
  std::vector<Candidate> candidates = {
      {"query",
       &packing.query,
       q_use.rs,
       e,
       {m, n, e, q_use.rs, 1, 1, e, n, scale, false},
       {m, n, e, e, 1, 1, e, n, scale, false}},
      {"key",
       &packing.key,
       k_use.rs,
       e,
       {m, n, e, e, 1, 1, k_use.rs, n, scale, false},
       {m, n, e, e, 1, 1, e, n, scale, false}},
      {"value",
       &packing.value,
       v_use.rs,
       ev,
       {m, ev, n, n, 1, v_use.rs, 1, ev, 1.0f, false},
       {m, ev, n, n, 1, ev, 1, ev, 1.0f, false}},
  };
  detail::Operand2 go_use;
  if (backward && spec.grad_out.sizes.size() == 4) {
    const detail::View4 go = detail::View4::of(spec.grad_out);
    go_use = detail::operand_use(go);
    packing.grad_out = go_use.packed;
    if (go_use.packed) append(layout_packed, ", ", "grad_out");
    candidates.push_back({"grad_out",
                          &packing.grad_out,
                          go_use.rs,
                          ev,
                          {m, n, ev, go_use.rs, 1, 1, ev, n, 1.0f, false},
                          {m, n, ev, ev, 1, 1, ev, n, 1.0f, false}});
  }
  std::string reason;
  if (AttentionPlan::arithmetic(spec.dtype) == Arithmetic::ThroughFloat32) {
    // The products read float32 copies of the operands, dense whatever their layout: oneDNN's
    // kernel choice does not see it.
    reason = "the products read dense float32 copies of the operands (bf16 through float32)";
    if (!layout_packed.empty()) {
      reason = layout_packed + " packed per block (columns not contiguous or rows overlapping); " +
               reason;
    }
    packing.reason = reason;
    return packing;
  }
  detail::OmpThreads one(
      1);  // as the products are built: one thread each, inside the plan's region
  for (const Candidate& c : candidates) {
    if (*c.packed || c.rs == c.cols) continue;  // packed by layout, or dense already
    // Sizes oneDNN cannot take are refused with their own message when the plan is built.
    if (!detail::block_product_over_32_bits(c.in_place).empty()) continue;
    const std::string in_place = implementation(spec.dtype, c.in_place);
    const std::string dense = implementation(spec.dtype, c.dense);
    if (in_place == dense) {
      append(reason, "; ",
             std::string(c.name) + " read in place (rows " + std::to_string(c.rs) +
                 " apart: oneDNN runs " + dense + " either way)");
      continue;
    }
    *c.packed = true;
    append(reason, "; ",
           std::string(c.name) + " packed per block: oneDNN runs " + dense + " on dense rows, " +
               in_place + " on rows " + std::to_string(c.rs) + " apart");
  }
  if (!layout_packed.empty()) {
    reason = layout_packed + " packed per block (columns not contiguous or rows overlapping)" +
             (reason.empty() ? "" : "; " + reason);
  }
  packing.reason = reason.empty() ? "every operand read in place (dense rows)" : reason;
  return packing;
}

}  // namespace stax::external
