// The attention ops' arguments, checked as torch 2.13.0's CPU flash-attention kernel checks
// them (messages probed; see attention_args.h).
#include "ir/attention_args.h"

#include <cmath>
#include <string>

#include "ir/op_schema.h"
#include "ir/text_format.h"
#include "ir/view_layout.h"

namespace stax::ir {

namespace {

constexpr const char* kForward = "_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBackward = "_scaled_dot_product_flash_attention_for_cpu_backward";
constexpr const char* kWrittenOut = "softmax_attention";
// Eager's messages start with the kernel's name.
constexpr const char* kKernel = "scaled_dot_product_attention_flash_attention: ";

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw GraphError(node.op + ": " + message);
}

std::string shape_of(const Value& v) {
  return v.name + " " + format_sizes(v.type.sizes);
}

}  // namespace

bool is_attention_op(const std::string& op) {
  return op == kForward || op == kBackward || op == kWrittenOut;
}

AttentionArgs attention_args(const Graph& graph, const Node& node) {
  if (!is_attention_op(node.op)) throw GraphError(node.op + " is not an attention op");
  AttentionArgs a;
  a.backward = node.op == kBackward;
  a.written_out = node.op == kWrittenOut;
  // Positions in the schema: the backward's grad_out, then query, key, value as the
  // forward's; out and logsumexp after them.
  const size_t q = a.backward ? 1 : 0;
  auto ref = [&](size_t pos) { return std::get<ValueRef>(node.args.at(pos)); };
  a.query = ref(q);
  a.key = ref(q + 1);
  a.value = ref(q + 2);
  size_t next = q + 3;
  if (a.backward) {
    a.grad_out = ref(0);
    a.out = ref(next++);
    a.logsumexp = ref(next++);
  }
  // softmax_attention has neither dropout nor is_causal.
  const double dropout = a.written_out ? 0.0 : scalar_arg(node, next++).as_double();
  a.causal = a.written_out ? false : bool_arg(node, next++);
  if (is_tensor_arg(node, next)) a.mask = ref(next);
  ++next;
  const Arg& scale = node.args.at(next);

  const Value& query = graph.value(a.query);
  const Value& key = graph.value(a.key);
  const Value& value = graph.value(a.value);
  for (const Value* v : {&query, &key, &value}) {
    if (v->type.sizes.size() != 4) {
      fail(node, std::string(kKernel) + "Accept only 4 dims inputs shape of {B, H, T, K} (" +
                     shape_of(*v) + ")");
    }
  }
  a.dtype = query.type.dtype;
  if (!is_floating(a.dtype)) {
    fail(node, "attention takes floating-point tensors (query is " +
                   std::string(dtype_name(a.dtype)) + ")");
  }
  for (const Value* v : {&key, &value}) {
    if (v->type.dtype != a.dtype) {
      fail(node, "expected scalar type " + std::string(dtype_name(a.dtype)) + " but found " +
                     std::string(dtype_name(v->type.dtype)) + " (" + v->name + ")");
    }
  }
  const auto& qs = query.type.sizes;
  const auto& ks = key.type.sizes;
  const auto& vs = value.type.sizes;
  if (qs[3] != ks[3] || qs[3] != vs[3]) {
    fail(node, std::string(kKernel) + "Q/K/V should have the same head size (" + shape_of(query) +
                   ", " + shape_of(key) + ", " + shape_of(value) + ")");
  }
  // Eager's kernel reads out of bounds for these instead of refusing them.
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != vs[1] || ks[2] != vs[2]) {
    fail(node, "key and value must have the query's batch size and the same heads and length (" +
                   shape_of(query) + ", " + shape_of(key) + ", " + shape_of(value) + ")");
  }
  if (ks[1] == 0 ? qs[1] != 0 : qs[1] % ks[1] != 0) {
    fail(node, "the query's heads must be a multiple of the key's and value's (" + shape_of(query) +
                   ", " + shape_of(key) + ")");
  }
  if (dropout != 0.0) fail(node, std::string(kKernel) + "Currently do not support dropout > 0");
  a.batch = qs[0];
  a.query_heads = qs[1];
  a.kv_heads = ks[1];
  a.query_length = qs[2];
  a.key_length = ks[2];
  a.head_size = qs[3];
  if (std::holds_alternative<Scalar>(scale)) {
    a.scale = std::get<Scalar>(scale).as_double();
  } else if (std::holds_alternative<None>(scale)) {
    a.scale = 1.0 / std::sqrt(static_cast<double>(a.head_size));
  } else {
    fail(node, "scale must be a number or None");
  }

  if (a.mask) {
    const Value& mask = graph.value(*a.mask);
    a.mask_dtype = mask.type.dtype;
    // Probed: a mask of the query's dtype, or float32 for a bfloat16 query.
    if (a.mask_dtype != a.dtype &&
        !(a.dtype == DType::BFloat16 && a.mask_dtype == DType::Float32)) {
      fail(node, std::string(kKernel) + "Attention mask is the same data type as query (mask " +
                     std::string(dtype_name(a.mask_dtype)) + ", query " +
                     std::string(dtype_name(a.dtype)) + ")");
    }
    const auto& ms = mask.type.sizes;
    if (ms.size() != 2 && ms.size() != 4) {
      fail(node, std::string(kKernel) + "Attention mask dim in {2, 4} (" + shape_of(mask) + ")");
    }
    const std::vector<int64_t> target = {a.batch, a.query_heads, a.query_length, a.key_length};
    std::vector<int64_t> as4 = ms;
    if (ms.size() == 2) as4 = {1, 1, ms[0], ms[1]};
    for (size_t d = 0; d < 4; ++d) {
      if (as4[d] != 1 && as4[d] != target[d]) {
        fail(node, "The expanded size of the tensor (" + std::to_string(target[d]) +
                       ") must match the existing size (" + std::to_string(as4[d]) +
                       ") at non-singleton dimension " + std::to_string(d) + ".  Target sizes: " +
                       format_sizes(target) + ".  Tensor sizes: " + format_sizes(as4));
      }
    }
  }

  if (a.backward) {
    const Value& grad = graph.value(a.grad_out);
    const Value& out = graph.value(a.out);
    const Value& lse = graph.value(a.logsumexp);
    const std::vector<int64_t> out_sizes = {a.batch, a.query_heads, a.query_length, a.head_size};
    const std::vector<int64_t> lse_sizes = {a.batch, a.query_heads, a.query_length};
    for (const Value* v : {&grad, &out}) {
      if (v->type.sizes != out_sizes || v->type.dtype != a.dtype) {
        fail(node, v->name + " must be the forward's output, " + format_sizes(out_sizes) + " " +
                       std::string(dtype_name(a.dtype)) + " (got " + format_sizes(v->type.sizes) +
                       " " + std::string(dtype_name(v->type.dtype)) + ")");
      }
    }
    if (lse.type.sizes != lse_sizes || lse.type.dtype != a.stats_dtype()) {
      fail(node, lse.name + " must be the forward's logsumexp, " + format_sizes(lse_sizes) + " " +
                     std::string(dtype_name(a.stats_dtype())) + " (got " +
                     format_sizes(lse.type.sizes) + " " + std::string(dtype_name(lse.type.dtype)) +
                     ")");
    }
  }
  return a;
}

std::vector<int64_t> AttentionArgs::mask_dims(const Graph& graph) const {
  const auto& ms = graph.value(*mask).type.sizes;
  const std::vector<int64_t> target = {batch, query_heads, query_length, key_length};
  std::vector<int64_t> dims(4, -1);
  const int64_t shift = 4 - static_cast<int64_t>(ms.size());
  for (int64_t d = shift; d < 4; ++d) {
    const int64_t k = d - shift;
    if (ms[static_cast<size_t>(k)] == target[static_cast<size_t>(d)] &&
        target[static_cast<size_t>(d)] != 1) {
      dims[static_cast<size_t>(d)] = k;
    }
  }
  return dims;
}

TensorType AttentionArgs::result_type(const Graph& graph, int k) const {
  TensorType t;
  t.dtype = dtype;
  if (!backward) {
    if (k == 0) {
      t.sizes = {batch, query_heads, query_length, head_size};
    } else {
      t.dtype = stats_dtype();
      t.sizes = {batch, query_heads, query_length};
    }
    return t;
  }
  const ValueRef of = k == 0 ? query : k == 1 ? key : value;
  t.sizes = graph.value(of).type.sizes;
  return t;
}

std::vector<int64_t> AttentionArgs::result_strides(
    const Graph& graph, int k, const std::vector<int64_t>& query_strides) const {
  const std::vector<int64_t> sizes = result_type(graph, k).sizes;
  // softmax_attention's output is contiguous, as the batched product it replaces gives.
  if (written_out) return contiguous_strides(sizes);
  if (!backward && k == 0) return preserved_strides(sizes, query_strides);
  // [B, H, L(, E)] stored as [B, L, H(, E)].
  const int64_t inner = sizes.size() == 4 ? sizes[3] : 1;
  std::vector<int64_t> strides = {sizes[2] * sizes[1] * inner, inner, sizes[1] * inner};
  if (sizes.size() == 4) strides.push_back(1);
  return strides;
}

}  // namespace stax::ir
