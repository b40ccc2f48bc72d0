// A test-only OpsHandler that evaluates lowered loop bodies on concrete tensors, with each
// primitive's PyTorch semantics (the element functions of eager/scalar_ops.h and the x86
// casts of eager/casts.cpp, so that a lowered body reproduces eager exactly when lowering
// converts and decomposes correctly). to_dtype is one direct conversion, as a kernel's is:
// float64 -> float16 rounds once, so a lowering that skips PyTorch's step through float32
// shows. It checks what the code generator relies on: every load and store has the buffer's
// dtype, and every compute() result has the dtype apply() gave it.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "eager/ops.h"
#include "eager/scalar_ops.h"
#include "lowering/lowering.h"
#include "runtime/tensor.h"

namespace stax::lowering::testing {

class PointwiseEvaluatingHandler final : public OpsHandler {
 public:
  // Buffers by name: 1-D views over their storage, indexed by the body's storage offsets.
  std::map<std::string, Tensor> storage;
  std::map<std::string, int64_t> vars;  // the loop variables' current values

  OpsValue load(const std::string& buffer, const index::Expr& index, DType dtype) override {
    const Tensor& t = storage.at(buffer);
    if (t.dtype() != dtype) throw std::logic_error("load of " + buffer + " with another dtype");
    const std::vector<int64_t> at{index::evaluate(index, vars)};
    if (is_floating(dtype)) return make_float(dtype, t.get(at));
    return make_int(dtype, eager::detail::load_int(t, at));
  }
  OpsValue constant(const ir::Scalar& value, DType dtype) override {
    if (dtype == DType::Float16 || dtype == DType::BFloat16) {
      throw std::logic_error("a 16-bit constant: lowering computes those in float32");
    }
    const ir::Scalar v = ir::convert_scalar(value, dtype);
    if (is_floating(dtype)) return make_float(dtype, v.float_value());
    return make_int(dtype, *v.as_exact_int64());
  }
  OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, DType result) override;
  OpsValue to_dtype(OpsValue value, DType dtype) override {
    const Elem& e = elems_.at(static_cast<size_t>(value.id));
    namespace d = eager::detail;
    if (is_floating(e.dtype)) {
      if (!is_floating(dtype)) return make_int(dtype, d::float_to_int(e.f, dtype));
      return make_float(dtype, d::round_to(dtype, e.f));
    }
    if (!is_floating(dtype)) return make_int(dtype, d::wrap_int(e.i, dtype));
    if (dtype == DType::Float32) return make_float(dtype, static_cast<float>(e.i));
    return make_float(dtype, d::round_to(dtype, static_cast<double>(e.i)));
  }
  OpsValue index_value(const index::Expr& index, DType dtype) override {
    return make_int(dtype, index::evaluate(index, vars));
  }
  index::Expr indirect_index(OpsValue, const ir::IndexRule&) override {
    throw std::logic_error("indirect_index is not used by pointwise bodies");
  }
  void push_mask(OpsValue) override { throw std::logic_error("masks are not used here"); }
  void pop_mask() override { throw std::logic_error("masks are not used here"); }
  OpsValue reduction(ReductionType, OpsValue) override {
    throw std::logic_error("reductions are not evaluated by this handler");
  }
  void store(const std::string& buffer, const index::Expr& index, OpsValue value) override {
    const Tensor& t = storage.at(buffer);
    const Elem& e = elems_.at(static_cast<size_t>(value.id));
    if (e.dtype != t.dtype()) {
      throw std::logic_error("store of a " + std::string(dtype_name(e.dtype)) + " value into " +
                             std::string(dtype_name(t.dtype())) + " buffer " + buffer);
    }
    const std::vector<int64_t> at{index::evaluate(index, vars)};
    if (is_floating(e.dtype)) {
      t.set(at, e.f);
    } else {
      eager::detail::store_int(t, at, e.i);
    }
  }
  void store_reduction(const std::string&, const index::Expr&, OpsValue) override {
    throw std::logic_error("reductions are not evaluated by this handler");
  }

 private:
  struct Elem {
    DType dtype;
    double f = 0;
    int64_t i = 0;
  };
  std::vector<Elem> elems_;

  OpsValue make_float(DType dtype, double v) {
    if (dtype == DType::Float32) v = static_cast<float>(v);
    elems_.push_back({dtype, v, 0});
    return {static_cast<int>(elems_.size() - 1), dtype};
  }
  OpsValue make_int(DType dtype, int64_t v) {
    elems_.push_back({dtype, 0, eager::detail::wrap_int(v, dtype)});
    return {static_cast<int>(elems_.size() - 1), dtype};
  }
  template <typename T>
  OpsValue float_op(PointwiseOp op, const std::vector<T>& x, DType dtype);
  OpsValue int_op(PointwiseOp op, const std::vector<int64_t>& x, DType dtype);
};

}  // namespace stax::lowering::testing
