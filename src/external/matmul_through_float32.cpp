// A matmul plan through a float32 plan of the same layouts (matmul_through_float32.h).
#include "external/matmul_through_float32.h"

#include "external/dnnl_common.h"
#include "external/host_loops.h"
#include "external/widening.h"

namespace stax::external::detail {

MatmulSpec float32_spec(const MatmulSpec& spec, bool product_only) {
  MatmulSpec spec32 = spec;
  spec32.dtype = DType::Float32;
  if (product_only) {
    spec32.alpha = 1.0;
    spec32.beta = 0.0;
    spec32.bias.reset();
    spec32.alpha_zero_skips_product = false;
    spec32.post_ops.clear();
  }
  return spec32;
}

namespace {

// `data`'s elements widened into a float32 buffer spanning the layout (the buffer is
// returned; `widened` points at its first element).
Buffer widened_copy(const MatrixLayout& layout, const void* data, int threads,
                    const void** widened) {
  const int64_t extent = strided_extent(layout.sizes, layout.strides);
  Buffer buffer = allocate(static_cast<size_t>(extent) * sizeof(float));
  widen_bf16(layout.sizes, layout.strides, static_cast<const uint16_t*>(data),
             static_cast<float*>(buffer.get()), threads);
  *widened = buffer.get();
  return buffer;
}

}  // namespace

void run_through_float32(const MatmulSpec& spec, const MatmulPlan& plan32, bool product_only,
                         const void* a, const void* b, const void* bias, void* c, int threads,
                         std::span<const void* const> post_operands) {
  const MatmulSpec& spec32 = plan32.spec();
  const bool widen = spec.dtype != DType::Float32;
  Buffer a32, b32, bias32, c32;
  const void* a_in = a;
  const void* b_in = b;
  const void* bias_in = spec32.bias && spec32.beta != 0.0 ? bias : nullptr;
  void* c_out = c;  // float32 c: the float32 plan writes it, then the epilogue reads it
  if (widen) {
    a32 = widened_copy(spec.a, a, threads, &a_in);
    b32 = widened_copy(spec.b, b, threads, &b_in);
    if (bias_in != nullptr) bias32 = widened_copy(*spec.bias, bias, threads, &bias_in);
    c32 =
        allocate(static_cast<size_t>(strided_extent(spec.c.sizes, spec.c.strides)) * sizeof(float));
    c_out = c32.get();
  }
  plan32.run(a_in, b_in, bias_in, c_out, threads, post_operands);
  if (product_only) {
    zero_scaled_product_epilogue(spec, static_cast<const float*>(c_out), bias, c, threads);
  } else if (widen) {
    narrow_to_bf16(spec.c.sizes, spec.c.strides, static_cast<const float*>(c_out),
                   static_cast<uint16_t*>(c), threads);
  }
}

}  // namespace stax::external::detail
