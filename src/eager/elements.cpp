// Element helpers of the eager interpreter: argument lookup, exact integer loads/stores,
// rounding a double to a dtype, and the operands of the pointwise element loop.
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "eager/element_access.h"
#include "eager/elementwise.h"
#include "eager/ops.h"
#include "ir/op_schema.h"

namespace stax::eager::detail {

const Tensor& Env::tensor(const ir::Node& node, size_t position) const {
  if (!ir::is_tensor_arg(node, position)) {
    throw std::logic_error("eager: argument " + std::to_string(position) + " of " + node.op +
                           " is not a tensor");
  }
  const ir::ValueRef ref = std::get<ir::ValueRef>(node.args.at(position));
  const Tensor& t = values.at(static_cast<size_t>(ref.index));
  if (!t.defined()) {
    throw std::logic_error("eager: value '" + graph.value(ref).name + "' used before definition");
  }
  return t;
}

const ir::TensorType& Env::result_type(const ir::Node& node) const {
  return graph.value(node.output).type;
}

bool is_integer_like(DType dtype) {
  return dtype == DType::Bool || is_integral(dtype);
}

namespace {

const char* element_address(const Tensor& t, const std::vector<int64_t>& index) {
  if (index.size() != t.dim()) throw std::logic_error("eager: index rank mismatch");
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= t.sizes()[i])
      throw std::logic_error("eager: index out of range");
    offset += index[i] * t.strides()[i];
  }
  return static_cast<const char*>(t.data()) + offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

}  // namespace

int64_t load_int(const Tensor& t, const std::vector<int64_t>& index) {
  return load_int_at(t.dtype(), element_address(t, index));
}

void store_int(const Tensor& t, const std::vector<int64_t>& index, int64_t value) {
  store_int_at(t.dtype(), const_cast<char*>(element_address(t, index)), value);
}

double round_to(DType dtype, double value) {
  switch (dtype) {
    case DType::Float64:
      return value;
    case DType::Float32:
      return static_cast<float>(value);
    default: {
      // One scratch element per dtype and thread; Tensor::set/get do the exact conversion.
      thread_local Tensor scratch[10];
      Tensor& s = scratch[static_cast<size_t>(dtype)];
      if (!s.defined()) s = Tensor::empty(dtype, {});
      s.set({}, value);
      return s.get({});
    }
  }
}

double round_to_opmath(DType dtype, double value) {
  if (dtype == DType::Float64) return value;
  return static_cast<float>(value);
}

int64_t scalar_to_int(const ir::Scalar& scalar, DType to) {
  return *ir::convert_scalar(scalar, to).as_exact_int64();
}

double scalar_to_float(const ir::Scalar& scalar, DType to) {
  if (to == DType::Float16 || to == DType::BFloat16) {
    return round_to(to, ir::convert_scalar(scalar, DType::Float32).float_value());
  }
  return ir::convert_scalar(scalar, to).float_value();
}

}  // namespace stax::eager::detail

// ---- ElementOperand (elementwise.h) ----

namespace stax::eager::detail {

ElementOperand::ElementOperand(const Env& env, const ir::Node& node, size_t position,
                               const std::vector<int64_t>& sizes, DType compute, bool opmath)
    : compute_(compute) {
  if (ir::is_tensor_arg(node, position)) {
    const Tensor& t = env.tensor(node, position);
    tensor_ = broadcast_to(t, sizes);
    opmath_ = opmath;
  } else {
    is_scalar_ = true;
    scalar_ = ir::scalar_arg(node, position);
    opmath_ = opmath;
  }
  // Only 16-bit compute dtypes have an opmath type other than themselves.
  if (!is_16bit_float(compute)) opmath_ = false;
}

int64_t ElementOperand::as_int(const std::vector<int64_t>& index) const {
  if (is_scalar_) {
    return scalar_to_int(scalar_, compute_);
  }
  if (is_floating(tensor_.dtype())) return float_to_int(tensor_.get(index), compute_);
  return wrap_int(load_int(tensor_, index), compute_);
}

double ElementOperand::as_float(const std::vector<int64_t>& index) const {
  const DType to = opmath_ ? DType::Float32 : compute_;
  if (is_scalar_) {
    return scalar_to_float(scalar_, to);
  }
  if (is_floating(tensor_.dtype())) return float_to_float(tensor_.get(index), to);
  return int_to_float(load_int(tensor_, index), to);
}

}  // namespace stax::eager::detail
