// GraphRebuild (rebuild_graph.h).
#include "graph_passes/rebuild_graph.h"

#include <stdexcept>

#include "ir/op_schema.h"

namespace stax::graph_passes {

GraphRebuild::GraphRebuild(const ir::Graph& from, const std::map<std::string, int64_t>* bound_sizes)
    : from_(from), to_(from.name()), map_(from.values().size(), -1), bound_sizes_(bound_sizes) {
  if (!bound_sizes) {
    for (const auto& [name, facts] : from.size_symbols()) to_.declare_size_symbol(name, facts);
  }
  for (ir::ValueRef in : from.inputs()) {
    const ir::Value& v = from.value(in);
    ir::ValueRef made;
    if (!v.type.is_symbolic()) {
      made = to_.add_input(v.name, v.type.dtype, v.type.sizes, v.type.strides);
    } else if (!bound_sizes) {
      made = to_.add_symbolic_input(v.name, v.type.dtype, v.type.symbolic_sizes,
                                    v.type.symbolic_strides);
    } else {
      std::vector<int64_t> sizes, strides;
      for (const index::Expr& e : v.type.symbolic_sizes) {
        sizes.push_back(index::evaluate(e, *bound_sizes));
      }
      for (const index::Expr& e : v.type.symbolic_strides) {
        strides.push_back(index::evaluate(e, *bound_sizes));
      }
      made = to_.add_input(v.name, v.type.dtype, std::move(sizes), std::move(strides));
    }
    map_[static_cast<size_t>(in.index)] = made.index;
  }
}

ir::ValueRef GraphRebuild::operator[](ir::ValueRef old) const {
  const int to = map_.at(static_cast<size_t>(old.index));
  if (to < 0)
    throw std::logic_error("graph rebuild: " + from_.value(old).name + " used before it is copied");
  return ir::ValueRef{to};
}

void GraphRebuild::map(ir::ValueRef old, ir::ValueRef replacement) {
  map_.at(static_cast<size_t>(old.index)) = replacement.index;
}

ir::Arg GraphRebuild::mapped(const ir::Arg& arg) const {
  if (const auto* v = std::get_if<ir::ValueRef>(&arg)) return (*this)[*v];
  if (bound_sizes_ != nullptr) {
    if (const auto* s = std::get_if<ir::SymInt>(&arg))
      return index::evaluate(s->expr, *bound_sizes_);
    if (const auto* l = std::get_if<ir::SymIntList>(&arg)) {
      std::vector<int64_t> values;
      for (const index::Expr& e : l->items) values.push_back(index::evaluate(e, *bound_sizes_));
      return values;
    }
  }
  if (const auto* list = std::get_if<ir::TensorList>(&arg)) {
    ir::TensorList out;
    for (const auto& item : list->items) {
      out.items.push_back(item ? std::optional<ir::ValueRef>((*this)[*item]) : std::nullopt);
    }
    return out;
  }
  return arg;
}

size_t GraphRebuild::copy_node(size_t k) {
  const std::vector<ir::Node>& nodes = from_.nodes();
  const ir::Node& node = nodes.at(k);
  const ir::OpSchema* schema = ir::find_op_schema(node.op);
  if (schema == nullptr) throw std::logic_error("graph rebuild: unknown op " + node.op);
  // Keyword-only parameters bind by name; the rest by position.
  std::vector<ir::Arg> args;
  std::vector<std::pair<std::string, ir::Arg>> kwargs;
  for (size_t p = 0; p < node.args.size(); ++p) {
    if (schema->params.at(p).keyword_only) {
      kwargs.emplace_back(schema->params[p].name, mapped(node.args[p]));
    } else {
      args.push_back(mapped(node.args[p]));
    }
  }
  size_t last = k;
  while (last + 1 < nodes.size() && nodes[last + 1].result_index > 0) ++last;
  std::vector<ir::ValueRef> made;
  if (last > k) {
    std::vector<std::string> names;
    for (size_t j = k; j <= last; ++j) names.push_back(from_.value(nodes[j].output).name);
    made = to_.add_multi_result_node(node.op, std::move(args), std::move(kwargs), names);
  } else {
    made.push_back(
        to_.add_node(node.op, std::move(args), std::move(kwargs), from_.value(node.output).name));
  }
  for (size_t j = k; j <= last; ++j) {
    map(nodes[j].output, made[j - k]);
    if (!nodes[j].location.empty()) to_.set_location(made[j - k], nodes[j].location);
  }
  return last;
}

std::string GraphRebuild::fresh_name(const std::string& base) const {
  std::string name = base;
  for (int n = 1; from_.find_value(name) || to_.find_value(name); ++n) {
    name = base + "_" + std::to_string(n);
  }
  return name;
}

ir::ValueRef GraphRebuild::add(const std::string& op, std::vector<ir::Arg> args,
                               std::vector<std::pair<std::string, ir::Arg>> kwargs,
                               const std::string& name) {
  return to_.add_node(op, std::move(args), std::move(kwargs), name);
}

ir::Graph GraphRebuild::finish() {
  std::vector<ir::ValueRef> outputs;
  for (ir::ValueRef out : from_.outputs()) outputs.push_back((*this)[out]);
  to_.set_outputs(std::move(outputs));
  return std::move(to_);
}

}  // namespace stax::graph_passes
