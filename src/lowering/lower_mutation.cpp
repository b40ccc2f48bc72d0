// Issue 16, point 6: copy_(input, value) lowered by renaming (Section 7.1). The value is
// computed by a buffer whose storage is the input's own memory, laid out with the input's
// strides, so nothing is copied back afterwards; the copy_'s result is the value itself (a
// later reader recomputes or loads it as any value, never the input's memory). Every node
// that reads the input's old contents is ordered before that buffer's node by a WeakDep
// (scheduler/dependencies.cpp).
//
// The write is in place only where every read of the input by the value is at the element
// being written (the read and write indices agree, the argument of Proposition 7.2: each
// element is read before it is overwritten, and no other is read). Otherwise, as for
// x.copy_(x.t()) or x[1:] = x[:-1], the value is stored apart first.
#include "lowering/load_recorder.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

namespace {

// Whether `load` reads `input` (laid out with `strides`) only at the element of `idx`.
bool reads_input_only_where_written(const Loader& load, const std::string& input,
                                    const std::vector<int64_t>& sizes,
                                    const std::vector<int64_t>& strides) {
  std::vector<Expr> idx;
  index::RangeMap ranges;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const std::string var = "i" + std::to_string(d);
    idx.push_back(Expr::var(var));
    ranges[var] = sizes[d];
  }
  LoadRecorder recorder;
  load(recorder, idx);
  const Expr written = index::simplify(strided_offset(idx, index::to_exprs(strides)), ranges);
  for (const auto& [buffer, at] : recorder.loads) {
    if (buffer != input) continue;
    if (recorder.indirect || index::simplify(at, ranges) != written) return false;
  }
  return true;
}

}  // namespace

LoweredValue Lowerer::lower_copy_in_place(const ir::Node& node, const ir::Value& out) {
  const auto self = std::get<ir::ValueRef>(node.args[0]);
  const ir::Value& input = graph_.value(self);
  LoweredValue v = computed_value(node, out);
  v.loader = operand(node, 1, out.type.dtype, sizes_of(out.type));
  v.stats = operand_stats(node);
  if (!reads_input_only_where_written(v.loader, input.name, input.type.sizes, input.type.strides)) {
    v = realize(v, "read from input " + input.name + " away from the element " +
                       ir::describe_node(graph_, node) +
                       " writes: stored apart so that no element is overwritten before it is "
                       "read");
  }
  ComputedBuffer buf = buffer_storing(v, strides_of(input.type));
  buf.origin = v.origin.empty() ? "copy_" : buf.origin;
  buf.mutated_input = input.name;
  result_.log.push_back(buf.name + " (" + buf.origin + "): written into input " + input.name +
                        "'s memory in place (" + ir::describe_node(graph_, node) + ")");
  add_buffer(std::move(buf), v.composed);
  return v;
}

void Lowerer::check_no_output_sees_mutated_input() const {
  // The rule the eager interpreter and the fuzzer's generator apply too (ir/eager_storage.h).
  ir::check_no_output_of_overwritten_input(graph_);
  // Lowering reads views through eager's layouts, so an output it keeps in a written input's
  // memory is one eager keeps there too; anything else would be a lowering bug returning
  // overwritten memory.
  for (size_t k = 0; k < result_.outputs.size(); ++k) {
    const OutputSpec& o = result_.outputs[k];
    if (!o.is_input) continue;
    for (const ComputedBuffer& b : result_.buffers) {
      if (b.mutated_input == o.buffer) {
        throw std::logic_error("lowering: graph output " + std::to_string(k) + " ('" +
                               graph_.value(graph_.outputs()[k]).name + "') lies in input '" +
                               o.buffer + "', which " + b.source +
                               " overwrites, though eager keeps it apart");
      }
    }
  }
}

}  // namespace stax::lowering
