// A test-only OpsHandler that evaluates lowered loop bodies on concrete data, so that the
// lowering of an op can be checked against the eager interpreter (value by value, dtype by
// dtype) before the code generator supports it. Values are doubles rounded to their dtype
// after every op (float32 through float, f16/bf16 through a runtime tensor, integers wrapped);
// reductions accumulate in double and round once to their result dtype, which is what the
// code generator's accumulators approximate. Ops it does not know throw, naming the op.
#pragma once

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "index/expr.h"
#include "lowering/loop_ir.h"
#include "lowering/views.h"
#include "runtime/tensor.h"

namespace stax::lowering::testing {

// The value `value` takes in `dtype`: PyTorch's conversions (float to integer truncates,
// integers wrap, anything to bool is != 0, floats round to nearest even).
inline double round_to_dtype(double value, DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return value != 0.0 ? 1.0 : 0.0;
    case DType::Float64:
      return value;
    case DType::Float32:
      return static_cast<float>(value);
    case DType::Float16:
    case DType::BFloat16: {
      Tensor t = Tensor::empty(dtype, {});
      t.set({}, value);
      return t.get({});
    }
    default: {
      if (!std::isfinite(value)) return 0;  // only reachable through bad lowering; keeps it defined
      const auto wide = static_cast<int64_t>(std::trunc(value));
      switch (dtype) {
        case DType::UInt8:
          return static_cast<uint8_t>(wide);
        case DType::Int8:
          return static_cast<int8_t>(wide);
        case DType::Int16:
          return static_cast<int16_t>(wide);
        case DType::Int32:
          return static_cast<int32_t>(wide);
        default:
          return static_cast<double>(wide);
      }
    }
  }
}

class EvaluatingHandler final : public OpsHandler {
 public:
  // Storage of every buffer, by storage offset.
  std::map<std::string, std::vector<double>> storage;
  // (type, dtype of the reduced value) of every reduction() call, in order.
  std::vector<std::pair<ReductionType, DType>> reductions;
  // Set by the driver: position of the current element among the reduced elements.
  int64_t reduction_position = 0;
  // The size symbols' values (issue 33: a symbolic loop program evaluated at one size).
  std::map<std::string, int64_t> symbols;

  void begin_reduction() { state_ = {}; }

  OpsValue load(const std::string& buffer, const index::Expr& index, DType dtype) override {
    const auto& data = storage.at(buffer);
    const int64_t offset = index::evaluate(index, symbols);
    if (offset < 0 || offset >= static_cast<int64_t>(data.size())) {
      throw std::out_of_range("evaluating handler: load of " + buffer + " at " +
                              std::to_string(offset) + " is out of range");
    }
    return make(data[static_cast<size_t>(offset)], dtype);
  }
  OpsValue constant(const ir::Scalar& value, DType dtype) override {
    return make(value.as_double(), dtype);
  }
  OpsValue to_dtype(OpsValue value, DType dtype) override { return make(at(value), dtype); }
  OpsValue index_value(const index::Expr& index, DType dtype) override {
    return make(static_cast<double>(index::evaluate(index, symbols)), dtype);
  }
  index::Expr indirect_index(OpsValue, const ir::IndexRule& rule) override {
    throw std::logic_error("evaluating handler: indirect indices are not supported (" +
                           rule.message + ")");
  }
  void push_mask(OpsValue) override {
    throw std::logic_error("evaluating handler: masks are not supported");
  }
  void pop_mask() override {
    throw std::logic_error("evaluating handler: masks are not supported");
  }

  OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, DType result) override {
    auto a = [&](size_t i) { return at(args[i]); };
    double r = 0;
    switch (op) {
      case PointwiseOp::Add:
        r = a(0) + a(1);
        break;
      case PointwiseOp::Sub:
        r = a(0) - a(1);
        break;
      case PointwiseOp::Mul:
        r = a(0) * a(1);
        break;
      case PointwiseOp::Div:
        r = a(0) / a(1);
        break;
      case PointwiseOp::Neg:
        r = -a(0);
        break;
      case PointwiseOp::Exp:
        r = std::exp(a(0));
        break;
      case PointwiseOp::Log:
        r = std::log(a(0));
        break;
      case PointwiseOp::Sqrt:
        r = std::sqrt(a(0));
        break;
      case PointwiseOp::IsInf:
        r = std::isinf(a(0)) ? 1 : 0;
        break;
      case PointwiseOp::IsNan:
        r = std::isnan(a(0)) ? 1 : 0;
        break;
      case PointwiseOp::Where:
        r = a(0) != 0 ? a(1) : a(2);
        break;
      case PointwiseOp::Maximum:
        r = std::isnan(a(0)) || std::isnan(a(1)) ? NAN : std::max(a(0), a(1));
        break;
      case PointwiseOp::Eq:
        r = a(0) == a(1) ? 1 : 0;
        break;
      default:
        throw std::logic_error("evaluating handler: op " + std::string(op_info(op).name) +
                               " is not supported");
    }
    return make(r, result);
  }

  OpsValue reduction(ReductionType type, OpsValue value) override {
    reductions.emplace_back(type, value.dtype);
    const double v = at(value);
    State& s = state_;
    const bool first = s.count == 0;
    ++s.count;
    switch (type) {
      case ReductionType::Sum:
        s.acc = first ? v : s.acc + v;
        break;
      case ReductionType::Prod:
        s.acc = first ? v : s.acc * v;
        break;
      case ReductionType::Max:
      case ReductionType::Min:
      case ReductionType::ArgMax:
      case ReductionType::ArgMin: {
        const bool max = type == ReductionType::Max || type == ReductionType::ArgMax;
        const bool better = !std::isnan(s.acc) && (std::isnan(v) || (max ? v > s.acc : v < s.acc));
        if (first || better) {
          s.acc = v;
          s.position = reduction_position;
        }
        break;
      }
      case ReductionType::Any:
        s.acc = first ? v : (s.acc != 0 || v != 0);
        break;
      case ReductionType::All:
        s.acc = first ? v : (s.acc != 0 && v != 0);
        break;
      case ReductionType::WelfordMean:
      case ReductionType::WelfordM2: {
        const double delta = v - s.mean;
        s.mean += delta / static_cast<double>(s.count);
        s.m2 += delta * (v - s.mean);
        break;
      }
    }
    const DType dtype = reduction_result_dtype(type, value.dtype);
    switch (type) {
      case ReductionType::ArgMax:
      case ReductionType::ArgMin:
        return make(static_cast<double>(s.position), dtype);
      case ReductionType::WelfordMean:
        return make(s.mean, dtype);
      case ReductionType::WelfordM2:
        return make(s.m2, dtype);
      default:
        return make(s.acc, dtype);
    }
  }

  void store(const std::string& buffer, const index::Expr& index, OpsValue value) override {
    write(buffer, index, value);
  }
  void store_reduction(const std::string& buffer, const index::Expr& index,
                       OpsValue value) override {
    write(buffer, index, value);
  }

  // What a reduction over no elements stores (the accumulators' initial values).
  static double identity(ReductionType type) {
    switch (type) {
      case ReductionType::Prod:
      case ReductionType::All:
        return 1;
      case ReductionType::Max:
        return -INFINITY;
      case ReductionType::Min:
        return INFINITY;
      default:
        return 0;
    }
  }

  double at(OpsValue v) const { return values_.at(static_cast<size_t>(v.id)); }

 private:
  struct State {
    int64_t count = 0;
    double acc = 0;
    int64_t position = 0;
    double mean = 0;
    double m2 = 0;
  };

  OpsValue make(double value, DType dtype) {
    values_.push_back(round_to_dtype(value, dtype));
    return {static_cast<int>(values_.size() - 1), dtype};
  }
  void write(const std::string& buffer, const index::Expr& index, OpsValue value) {
    storage.at(buffer).at(static_cast<size_t>(index::evaluate(index, symbols))) = at(value);
  }

  std::vector<double> values_;
  State state_;
};

// Runs every buffer of `graph` on `inputs` (one per graph input, any layout; their elements
// are copied into storage with the declared strides) and returns each output's elements in
// row-major order. Sizes, strides and ranges are evaluated at h.symbols.
inline std::vector<std::vector<double>> evaluate_lowered(const LoweredGraph& graph,
                                                         const std::vector<Tensor>& inputs,
                                                         EvaluatingHandler& h) {
  auto values = [&](const std::vector<index::Expr>& exprs) {
    std::vector<int64_t> out;
    for (const index::Expr& e : exprs) out.push_back(index::evaluate(e, h.symbols));
    return out;
  };
  auto extent = [](const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    int64_t last = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) return int64_t{0};
      last += (sizes[d] - 1) * strides[d];
    }
    return last + 1;
  };
  auto for_each_index = [](const std::vector<int64_t>& sizes, auto&& f) {
    int64_t numel = 1;
    for (int64_t s : sizes) numel *= s;
    for (int64_t p = 0; p < numel; ++p) f(p, unravel_index(p, sizes));
  };
  auto exprs = [](const std::vector<int64_t>& idx) {
    return std::vector<index::Expr>(idx.begin(), idx.end());
  };
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const InputBuffer& in = graph.inputs[i];
    auto& data = h.storage[in.name];
    const std::vector<int64_t> sizes = values(in.sizes), strides = values(in.strides);
    data.assign(static_cast<size_t>(extent(sizes, strides)), 0.0);
    for_each_index(sizes, [&](int64_t, const std::vector<int64_t>& idx) {
      int64_t offset = 0;
      for (size_t d = 0; d < idx.size(); ++d) offset += idx[d] * strides[d];
      data[static_cast<size_t>(offset)] = inputs.at(i).get(idx);
    });
  }
  for (const ComputedBuffer& buf : graph.buffers) {
    h.storage[buf.name].assign(static_cast<size_t>(index::evaluate(buf.numel(), h.symbols)), 0.0);
    for_each_index(values(buf.ranges), [&](int64_t, const std::vector<int64_t>& idx) {
      if (!buf.is_reduction()) {
        buf.run_body(h, exprs(idx), {});
        return;
      }
      h.begin_reduction();
      const index::Expr out = buf.output_index(exprs(idx));
      h.storage[buf.name].at(static_cast<size_t>(index::evaluate(out, h.symbols))) =
          round_to_dtype(EvaluatingHandler::identity(*buf.reduction), buf.dtype);
      for_each_index(values(buf.reduction_ranges),
                     [&](int64_t p, const std::vector<int64_t>& ridx) {
                       h.reduction_position = p;
                       buf.run_body(h, exprs(idx), exprs(ridx));
                     });
    });
  }
  std::vector<std::vector<double>> outputs;
  for (const OutputSpec& out : graph.outputs) {
    const auto& data = h.storage.at(out.buffer);
    std::vector<double> elements;
    const std::vector<int64_t> strides = values(out.strides);
    for_each_index(values(out.sizes), [&](int64_t, const std::vector<int64_t>& idx) {
      int64_t offset = index::evaluate(out.offset, h.symbols);
      for (size_t d = 0; d < idx.size(); ++d) offset += idx[d] * strides[d];
      elements.push_back(data.at(static_cast<size_t>(offset)));
    });
    outputs.push_back(std::move(elements));
  }
  return outputs;
}

}  // namespace stax::lowering::testing
