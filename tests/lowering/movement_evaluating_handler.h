// Test utility: runs a lowered graph's loop bodies on host tensors, element by element, under
// an OpsHandler that evaluates what the body asks for — loads at their index expressions
// (through indirect index variables, skipped outside masks), the ops used by data movement,
// conversions and stores. It lets lowering be compared with the eager interpreter for every
// view and data-movement op before compiled kernels support masks and indirect loads.
// Reductions and most arithmetic are deliberately absent: a body using them throws.
#pragma once

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "lowering/lowering.h"
#include "runtime/tensor.h"

namespace stax::lowering::testing {

class MovementEvaluatingHandler final : public OpsHandler {
 public:
  std::map<std::string, Tensor> buffers;  // name -> storage (inputs and computed buffers)
  std::map<std::string, int64_t> vars;    // loop and indirect variables bound now
  // The size symbols' values (issue 33: a symbolic loop program run at one size).
  std::map<std::string, int64_t> symbols;

  OpsValue load(const std::string& buffer, const index::Expr& idx, DType dtype) override {
    if (masked_out()) return make(0.0, dtype);
    const Tensor& t = buffers.at(buffer);
    const int64_t offset = index::evaluate(idx, vars);
    const int64_t elements =
        static_cast<int64_t>(t.storage()->nbytes() / dtype_size(t.dtype())) - t.offset();
    if (offset < 0 || offset >= elements) {
      throw std::logic_error("load of " + buffer + " at " + std::to_string(offset) +
                             " outside its storage of " + std::to_string(elements));
    }
    return make(t.as_strided({}, {}, t.offset() + offset).get({}), dtype);
  }
  OpsValue constant(const ir::Scalar& value, DType dtype) override {
    return make(round(value.as_double(), dtype), dtype);
  }
  OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, DType result) override {
    auto a = [&](size_t k) { return values_.at(static_cast<size_t>(args[k].id)); };
    switch (op) {
      case PointwiseOp::Ge:
        return make(a(0) >= a(1) ? 1 : 0, result);
      case PointwiseOp::Lt:
        return make(a(0) < a(1) ? 1 : 0, result);
      case PointwiseOp::LogicalAnd:
        return make(a(0) != 0 && a(1) != 0 ? 1 : 0, result);
      case PointwiseOp::Where:
        return make(a(0) != 0 ? a(1) : a(2), result);
      case PointwiseOp::Add:
        return make(round(a(0) + a(1), result), result);
      case PointwiseOp::Mul:
        return make(round(a(0) * a(1), result), result);
      default:
        throw std::logic_error("EvaluatingHandler: op " + std::string(op_info(op).name) +
                               " is not evaluated");
    }
  }
  OpsValue to_dtype(OpsValue value, DType dtype) override {
    const double v = values_.at(static_cast<size_t>(value.id));
    if (dtype == DType::Bool) return make(v != 0 ? 1 : 0, dtype);
    if (is_integral(dtype)) return make(std::trunc(v), dtype);
    return make(round(v, dtype), dtype);
  }
  OpsValue index_value(const index::Expr& idx, DType dtype) override {
    return make(static_cast<double>(index::evaluate(idx, vars)), dtype);
  }
  index::Expr indirect_index(OpsValue value, const ir::IndexRule& rule) override {
    const std::string var = "ind" + std::to_string(indirect_count_++);
    auto v = static_cast<int64_t>(values_.at(static_cast<size_t>(value.id)));
    if (!masked_out()) {
      // As compiled kernels report it: the rule's message with the value, its class.
      if (!rule.accepts(v)) rule.fail(v);
      if (v < 0) v += rule.size;
    } else {
      v = 0;
    }
    vars[var] = v;
    return index::Expr::var(var);
  }
  void push_mask(OpsValue mask) override {
    masks_.push_back(values_.at(static_cast<size_t>(mask.id)) != 0);
  }
  void pop_mask() override {
    if (masks_.empty()) throw std::logic_error("pop_mask without push_mask");
    masks_.pop_back();
  }
  OpsValue reduction(ReductionType, OpsValue) override {
    throw std::logic_error("EvaluatingHandler: reductions are not evaluated");
  }
  void store(const std::string& buffer, const index::Expr& idx, OpsValue value) override {
    const Tensor& t = buffers.at(buffer);
    t.as_strided({}, {}, t.offset() + index::evaluate(idx, vars))
        .set({}, values_.at(static_cast<size_t>(value.id)));
  }
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {
    throw std::logic_error("EvaluatingHandler: reductions are not evaluated");
  }

  // Runs every buffer of `graph` on `inputs` (one per graph input) and returns its outputs.
  std::vector<Tensor> run(const LoweredGraph& graph, const std::vector<Tensor>& inputs) {
    for (size_t k = 0; k < graph.inputs.size(); ++k) buffers[graph.inputs[k].name] = inputs.at(k);
    for (const ComputedBuffer& buf : graph.buffers) {
      if (buf.is_reduction()) throw std::logic_error("EvaluatingHandler: reduction buffer");
      buffers[buf.name] = Tensor::empty_strided(buf.dtype, values(buf.sizes), values(buf.strides));
      const std::vector<int64_t> ranges = values(buf.ranges);
      int64_t n = 1;
      for (int64_t r : ranges) n *= r;
      std::vector<index::Expr> idx;
      for (size_t d = 0; d < buf.ranges.size(); ++d) {
        idx.push_back(index::Expr::var("i" + std::to_string(d)));
      }
      for (int64_t p = 0; p < n; ++p) {
        const std::vector<int64_t> at = unravel_index(p, ranges);
        vars = symbols;
        indirect_count_ = 0;
        for (size_t d = 0; d < at.size(); ++d) vars["i" + std::to_string(d)] = at[d];
        buf.run_body(*this, idx, {});
        if (!masks_.empty()) throw std::logic_error("unbalanced push_mask in " + buf.name);
      }
    }
    std::vector<Tensor> out;
    for (const OutputSpec& o : graph.outputs) {
      const Tensor& base = buffers.at(o.buffer);
      out.push_back(base.as_strided(values(o.sizes), values(o.strides),
                                    base.offset() + index::evaluate(o.offset, symbols)));
    }
    return out;
  }

 private:
  std::vector<int64_t> values(const std::vector<index::Expr>& exprs) const {
    std::vector<int64_t> out;
    for (const index::Expr& e : exprs) out.push_back(index::evaluate(e, symbols));
    return out;
  }
  bool masked_out() const {
    for (bool m : masks_) {
      if (!m) return true;
    }
    return false;
  }
  static double round(double v, DType dtype) {
    if (is_integral(dtype) || dtype == DType::Bool || dtype == DType::Float64) return v;
    Tensor scratch = Tensor::empty(dtype, {});
    scratch.set({}, v);
    return scratch.get({});
  }
  OpsValue make(double v, DType dtype) {
    values_.push_back(v);
    return {static_cast<int>(values_.size() - 1), dtype};
  }

  std::vector<double> values_;
  std::vector<bool> masks_;
  int indirect_count_ = 0;
};

}  // namespace stax::lowering::testing
