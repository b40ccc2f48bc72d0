// The up-front limits of a `stax run` (see run_limits.h): memory, eager work, outputs-file size.
// Arithmetic saturates at int64's maximum: a size too large to count is too large to allocate.
#include "cli/run_limits.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>

#include "eager/tensor_io.h"
#include "ir/attention_args.h"
#include "ir/contraction_args.h"
#include "ir/convolution_args.h"
#include "ir/op_schema.h"
#include "ir/pooling_args.h"
#include "runtime/tensor.h"

namespace stax::cli {

namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

int64_t add_saturating(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}

int64_t mul_saturating(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}

// Storage bytes of a tensor of this type: up to its farthest element.
int64_t storage_bytes(const ir::TensorType& type) {
  int64_t last = 0;
  for (size_t d = 0; d < type.sizes.size(); ++d) {
    if (type.sizes[d] == 0) return 0;
    last = add_saturating(last, mul_saturating(type.sizes[d] - 1, type.strides[d]));
  }
  return mul_saturating(add_saturating(last, 1), static_cast<int64_t>(dtype_size(type.dtype)));
}

int64_t element_count(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n = mul_saturating(n, s);
  return n;
}

int64_t contiguous_bytes(const ir::TensorType& type) {
  return mul_saturating(element_count(type.sizes), static_cast<int64_t>(dtype_size(type.dtype)));
}

std::string count(int64_t n) {
  return n == kSaturated ? std::string("more than 2^63") : std::to_string(n);
}

struct Largest {
  std::string what;  // "output 'z' (f32[2, 3])"
  int64_t bytes = -1;
};

std::string kind_of(const ir::Graph& graph, ir::ValueRef ref) {
  for (ir::ValueRef out : graph.outputs()) {
    if (out.index == ref.index) return "output";
  }
  for (ir::ValueRef in : graph.inputs()) {
    if (in.index == ref.index) return "input";
  }
  return "value";
}

void note(Largest& largest, const ir::Graph& graph, ir::ValueRef ref, int64_t bytes) {
  if (bytes <= largest.bytes) return;
  const ir::Value& v = graph.value(ref);
  largest = {kind_of(graph, ref) + " '" + v.name + "' (" + std::string(dtype_name(v.type.dtype)) +
                 shape_to_string(v.type.sizes) + ")",
             bytes};
}

}  // namespace

int64_t available_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  int64_t bytes = pages > 0 && page_size > 0 ? mul_saturating(pages, page_size) : kSaturated;
  // cgroup v2 limit ("max" when there is none).
  std::ifstream limit_file("/sys/fs/cgroup/memory.max");
  int64_t limit = 0;
  if (limit_file >> limit && limit > 0) bytes = std::min(bytes, limit);
  return bytes;
}

void check_run_fits_in_memory(const ir::Graph& graph, const scheduler::Schedule& schedule,
                              int64_t budget_bytes) {
  Largest largest;
  int64_t inputs = 0;
  for (ir::ValueRef ref : graph.inputs()) {
    const int64_t bytes = storage_bytes(graph.value(ref).type);
    inputs = add_saturating(inputs, bytes);
    note(largest, graph, ref, bytes);
  }
  int64_t eager = 0;
  for (const ir::Node& node : graph.nodes()) {
    const ir::OpSchema* schema = ir::find_op_schema(node.op);
    if (schema != nullptr && schema->category == ir::OpCategory::View) continue;
    const int64_t bytes = contiguous_bytes(graph.value(node.output).type);
    eager = add_saturating(eager, bytes);
    note(largest, graph, node.output, bytes);
  }
  int64_t compiled = 0;
  for (const scheduler::BufferPlan& plan : schedule.buffers) {
    if (schedule.is_allocated(plan.buffer)) compiled = add_saturating(compiled, plan.bytes);
  }
  const int64_t total = add_saturating(add_saturating(inputs, eager), compiled);
  if (total <= budget_bytes) return;
  throw std::runtime_error("graph '" + graph.name() + "' is too large to run: " + largest.what +
                           " needs " + count(largest.bytes) + " bytes; the inputs (" +
                           count(inputs) + " bytes), the compiled graph's buffers (" +
                           count(compiled) + " bytes) and the eager interpreter's values (" +
                           count(eager) + " bytes) need " + count(total) +
                           " bytes together, more than the " + std::to_string(budget_bytes) +
                           " bytes of memory available");
}

void check_eager_work(const ir::Graph& graph, int64_t max_steps) {
  int64_t total = 0;
  int64_t most = -1;
  std::string most_what;
  for (const ir::Node& node : graph.nodes()) {
    const ir::OpSchema* schema = ir::find_op_schema(node.op);
    if (schema != nullptr && schema->category == ir::OpCategory::View) continue;
    const bool reduction = schema != nullptr && schema->category == ir::OpCategory::Reduction;
    const ir::TensorType& iterated =
        reduction ? ir::tensor_arg(graph, node, 0).type : graph.value(node.output).type;
    int64_t steps = element_count(iterated.sizes);
    // Steps per output element beyond one, named in the refusal (the size behind the work).
    int64_t per_element = 0;
    const char* per_element_what = "";
    // A contraction takes K multiply-adds per output element (at least one step for each).
    if (schema != nullptr && schema->category == ir::OpCategory::Contraction) {
      per_element = ir::contraction_args(graph, node).k;
      per_element_what = " products summed per element (K)";
    }
    // A convolution, C_in/groups * prod(kernel) per output element.
    if (schema != nullptr && schema->category == ir::OpCategory::Convolution) {
      per_element = ir::convolution_products_per_element(graph, node);
      per_element_what = " products summed per element";
    }
    // A pooling, the elements of its window per output element.
    if (schema != nullptr && schema->category == ir::OpCategory::Pooling) {
      per_element = ir::pooling_args(graph, node).window_elements();
      per_element_what = " elements per window";
    }
    // Attention (its first result; the others are written by the same call): every query row
    // takes a score (head size multiply-adds) and a weighted value row for every key.
    if (ir::is_attention_op(node.op) && node.result_index == 0) {
      const ir::AttentionArgs a = ir::attention_args(graph, node);
      const int64_t value_head_size = graph.value(a.value).type.sizes.back();
      steps = mul_saturating(mul_saturating(a.batch, a.query_heads), a.query_length);
      per_element = mul_saturating(a.key_length, add_saturating(a.head_size, value_head_size));
      per_element_what = " multiply-adds per query row (keys times head sizes)";
    }
    steps = mul_saturating(steps, std::max<int64_t>(1, per_element));
    total = add_saturating(total, steps);
    if (steps > most) {
      most = steps;
      most_what = "'" + graph.value(node.output).name + "' (" + node.op + " " +
                  (reduction ? "of " : "to ") + std::string(dtype_name(iterated.dtype)) +
                  shape_to_string(iterated.sizes) +
                  (per_element > 1 ? ", " + count(per_element) + per_element_what : "") + ")";
    }
  }
  if (total <= max_steps) return;
  throw std::runtime_error("graph '" + graph.name() + "' is too large to check: the eager " +
                           "interpreter would take " + count(total) + " element steps, " +
                           count(most) + " of them for " + most_what + "; stax run attempts " +
                           std::to_string(max_steps) + " at most");
}

void check_outputs_fit_json(const ir::Graph& graph, const std::string& path) {
  for (ir::ValueRef ref : graph.outputs()) {
    const ir::Value& v = graph.value(ref);
    const int64_t n = element_count(v.type.sizes);
    if (n > eager::kMaxJsonElements) {
      throw std::invalid_argument(path + ": output '" + v.name + "' has " + count(n) +
                                  " elements (sizes " + shape_to_string(v.type.sizes) +
                                  "), more than the " + std::to_string(eager::kMaxJsonElements) +
                                  " that --outputs writes as JSON");
    }
  }
}

}  // namespace stax::cli
