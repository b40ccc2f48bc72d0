// The eager factory ops (issue 7, point 3): full, zeros, ones, full_like, zeros_like,
// ones_like, fill, scalar_tensor, arange and iota. What each produces is ir::factory_args (the
// rule type inference and lowering use); here a fill converts its value to the dtype with
// PyTorch's conversions (casts.cpp) and repeats it, and a range computes start + step * i in
// its arithmetic (int64 wrapping, double, or float) and converts that to the dtype.
//
// PyTorch's CPU kernel (torch 2.13.0) computes a range element in one fused multiply-add for
// the elements it does not vectorize, and a vectorized block restarts from its first element
// with multiples of the step; which elements take which path depends on the vector width and
// the thread count. Stax's kernels have no fused multiply-add, so Stax computes every element
// the same way, here and in compiled kernels alike: the product rounded, then the sum. Integer
// ranges and ranges of exactly representable values are equal to torch's; otherwise an f64
// element may differ from torch's by an ulp (about one in ten did on random short ranges), an
// f32 element rarely (the double result is rounded to float), f16/bf16 ones never did.
#include <cstring>

#include "eager/ops.h"
#include "ir/factory_args.h"

namespace stax::eager::detail {

namespace {

// The fill value as one element of `dtype`, converted as PyTorch converts a Scalar.
Tensor fill_element(const ir::Scalar& s, DType dtype) {
  Tensor element = Tensor::empty(dtype, {});
  if (is_integer_like(dtype)) {
    store_int(element, {}, scalar_to_int(s, dtype));
  } else {
    element.set({}, scalar_to_float(s, dtype));
  }
  return element;
}

void fill_range(const Tensor& out, const ir::FactoryArgs& a) {
  const int64_t length = out.numel();
  for (int64_t i = 0; i < length; ++i) {
    switch (a.arithmetic) {
      case ir::RangeArithmetic::Int64: {
        // Wrapping two's-complement arithmetic, as the int64 kernel's overflow behaves.
        const uint64_t v = static_cast<uint64_t>(a.int_start) +
                           static_cast<uint64_t>(a.int_step) * static_cast<uint64_t>(i);
        store_int(out, {i}, static_cast<int64_t>(v));
        break;
      }
      case ir::RangeArithmetic::Float64: {
        const double product = a.float_step * static_cast<double>(i);
        out.set({i}, float_to_float(a.float_start + product, out.dtype()));
        break;
      }
      case ir::RangeArithmetic::Float32: {
        const float product = static_cast<float>(a.float_step) * static_cast<float>(i);
        const float sum = static_cast<float>(a.float_start) + product;
        out.set({i}, float_to_float(sum, out.dtype()));
        break;
      }
    }
  }
}

}  // namespace

Tensor eval_factory(const Env& env, const ir::Node& node) {
  const ir::FactoryArgs a = ir::factory_args(env.graph, node);
  Tensor out = Tensor::empty(a.dtype, a.sizes);
  if (a.is_range) {
    fill_range(out, a);
    return out;
  }
  const Tensor element = fill_element(a.fill, a.dtype);
  const size_t width = dtype_size(a.dtype);
  char* data = static_cast<char*>(out.data());
  for (int64_t p = 0; p < out.numel(); ++p) {
    std::memcpy(data + static_cast<size_t>(p) * width, element.data(), width);
  }
  return out;
}

}  // namespace stax::eager::detail
