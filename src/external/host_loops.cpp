// Element loops of a matmul plan (host_loops.h): c = beta * bias, zeros, or a bias copy, over
// {batch, rows} in parallel on the caller's OpenMP runtime, columns innermost.
#include "external/host_loops.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace stax::external::detail {

uint16_t float_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // NaN: keep sign, make quiet
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // to nearest, ties to even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

namespace {

// Calls body(c_offset, bias_offset) for every element of c (offsets in elements), parallel
// over the batch and rows.
template <class Body>
void for_each_element(const MatmulSpec& spec, bool with_bias, int num_threads, Body body) {
  const auto& c = spec.c;
  const std::array<int64_t, 3> none{};
  const auto& bias_strides = with_bias ? spec.bias->strides : none;
  const auto& bias_sizes = with_bias ? spec.bias->sizes : c.sizes;
  // A bias dimension of size 1 broadcasts like a stride of 0.
  std::array<int64_t, 3> bs{};
  for (int d = 0; d < 3; ++d) bs[d] = bias_sizes[d] == 1 ? 0 : bias_strides[d];
  const int64_t batch = c.sizes[0], rows = c.sizes[1], cols = c.sizes[2];
#pragma omp parallel for collapse(2) num_threads(num_threads) schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t c_row = b * c.strides[0] + i * c.strides[1];
      const int64_t bias_row = b * bs[0] + i * bs[1];
      for (int64_t j = 0; j < cols; ++j) body(c_row + j * c.strides[2], bias_row + j * bs[2]);
    }
  }
}

}  // namespace

void fill_scaled_bias(const MatmulSpec& spec, const void* bias, void* c, int num_threads) {
  const bool with_bias = spec.bias.has_value() && spec.beta != 0.0;
  if (spec.dtype == DType::Float32) {
    const float beta = static_cast<float>(spec.beta);
    const auto* in = static_cast<const float*>(bias);
    auto* out = static_cast<float*>(c);
    for_each_element(spec, with_bias, num_threads,
                     [&](int64_t co, int64_t bo) { out[co] = with_bias ? beta * in[bo] : 0.0f; });
  } else {  // BFloat16 (supported() admits no other dtype)
    const float beta = bf16_to_float(float_to_bf16(static_cast<float>(spec.beta)));
    const auto* in = static_cast<const uint16_t*>(bias);
    auto* out = static_cast<uint16_t*>(c);
    for_each_element(spec, with_bias, num_threads, [&](int64_t co, int64_t bo) {
      out[co] = with_bias ? float_to_bf16(beta * bf16_to_float(in[bo])) : uint16_t{0};
    });
  }
}

void copy_bias(const MatmulSpec& spec, const void* bias, void* c, int num_threads) {
  const size_t size = dtype_size(spec.dtype);
  const auto* in = static_cast<const char*>(bias);
  auto* out = static_cast<char*>(c);
  for_each_element(spec, true, num_threads, [&](int64_t co, int64_t bo) {
    std::memcpy(out + co * static_cast<int64_t>(size), in + bo * static_cast<int64_t>(size), size);
  });
}

void zero_scaled_product_epilogue(const MatmulSpec& spec, const float* product, const void* bias,
                                  void* c, int num_threads) {
  const bool with_bias = spec.bias.has_value() && spec.beta != 0.0;
  const auto beta = static_cast<float>(spec.beta);
  if (spec.dtype == DType::Float32) {
    const auto* in = static_cast<const float*>(bias);
    auto* out = static_cast<float*>(c);
    for_each_element(spec, with_bias, num_threads, [&](int64_t co, int64_t bo) {
      const float scaled = 0.0f * product[co];
      out[co] = with_bias ? std::fma(beta, in[bo], scaled) : scaled;
    });
  } else {  // BFloat16
    const auto* in = static_cast<const uint16_t*>(bias);
    auto* out = static_cast<uint16_t*>(c);
    for_each_element(spec, with_bias, num_threads, [&](int64_t co, int64_t bo) {
      const float scaled = 0.0f * product[co];
      out[co] = float_to_bf16(with_bias ? std::fma(beta, bf16_to_float(in[bo]), scaled) : scaled);
    });
  }
}

}  // namespace stax::external::detail
