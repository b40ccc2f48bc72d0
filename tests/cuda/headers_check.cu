// Compile check of the CUDA kernel headers (src/runtime/kernel_include_cuda/): kernels that
// call every function the CUDA printer may call, for every element type it accepts, and check
// each result's type, so that compiling this file (NVRTC: --std=c++17 -default-device
// --gpu-architecture=sm_80 / sm_90, with the headers as the only include path) catches any
// missing or ill-typed definition. Every op of src/lowering/ops_handler.h for the types of
// its OperandKinds (pointwise_ops.cpp), every conversion pair, the 16-bit loads and stores,
// and every warp / block all-reduce.
//
// The kernels also run: each thread writes its results to 8-byte slots of `out` (kSlots per
// thread), so a device test may launch them and compare against eager.
#include "stax_cuda.cuh"

namespace check {

using stax::bf16;
using stax::f16;
using stax::i16;
using stax::i32;
using stax::i64;
using stax::i8;
using stax::u8;

constexpr int kSlots = 128;

// Writes v to the next 8-byte slot of this thread's results, after checking its type.
struct Sink {
  char* base;
  int k;
  template <class Expected, class Actual>
  __device__ void put(Actual v) {
    static_assert(stax::detail::kSame<Expected, Actual>, "unexpected result type");
    *reinterpret_cast<Actual*>(base + 8 * (k++ % kSlots)) = v;
  }
};

__device__ Sink sink_for(void* out) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  return Sink{static_cast<char*>(out) + i * 8 * kSlots, 0};
}

// OperandKinds::Any: every value type.
template <class T>
__device__ void ops_any(T a, T b, bool c, Sink& s) {
  s.put<T>(stax::op_maximum(a, b));
  s.put<T>(stax::op_minimum(a, b));
  s.put<bool>(stax::op_logical_and(a, b));
  s.put<bool>(stax::op_logical_or(a, b));
  s.put<bool>(stax::op_logical_xor(a, b));
  s.put<bool>(stax::op_logical_not(a));
  s.put<bool>(stax::op_eq(a, b));
  s.put<bool>(stax::op_ne(a, b));
  s.put<bool>(stax::op_lt(a, b));
  s.put<bool>(stax::op_le(a, b));
  s.put<bool>(stax::op_gt(a, b));
  s.put<bool>(stax::op_ge(a, b));
  s.put<bool>(stax::op_isnan(a));
  s.put<bool>(stax::op_isinf(a));
  s.put<T>(stax::op_where(c, a, b));
}

// OperandKinds::Numeric: every value type but bool.
template <class T>
__device__ void ops_numeric(T a, T b, Sink& s) {
  s.put<T>(stax::op_add(a, b));
  s.put<T>(stax::op_sub(a, b));
  s.put<T>(stax::op_mul(a, b));
  s.put<T>(stax::op_truncdiv(a, b));
  s.put<T>(stax::op_floordiv(a, b));
  s.put<T>(stax::op_remainder(a, b));
  s.put<T>(stax::op_fmod(a, b));
  s.put<T>(stax::op_pow(a, b));
  s.put<T>(stax::op_neg(a));
  s.put<T>(stax::op_abs(a));
  s.put<T>(stax::op_sign(a));
  s.put<T>(stax::op_fmax(a, b));
  s.put<T>(stax::op_fmin(a, b));
  s.put<T>(stax::op_relu(a));
  s.put<T>(stax::op_floor(a));
  s.put<T>(stax::op_ceil(a));
  s.put<T>(stax::op_round(a));
  s.put<T>(stax::op_trunc(a));
}

// OperandKinds::Floating: float and double.
template <class T>
__device__ void ops_floating(T a, T b, Sink& s) {
  s.put<T>(stax::op_div(a, b));
  s.put<T>(stax::op_reciprocal(a));
  s.put<T>(stax::op_atan2(a, b));
  s.put<T>(stax::op_hypot(a, b));
  s.put<T>(stax::op_copysign(a, b));
  s.put<T>(stax::op_exp(a));
  s.put<T>(stax::op_exp2(a));
  s.put<T>(stax::op_expm1(a));
  s.put<T>(stax::op_log(a));
  s.put<T>(stax::op_log2(a));
  s.put<T>(stax::op_log10(a));
  s.put<T>(stax::op_log1p(a));
  s.put<T>(stax::op_sqrt(a));
  s.put<T>(stax::op_rsqrt(a));
  s.put<T>(stax::op_sin(a));
  s.put<T>(stax::op_cos(a));
  s.put<T>(stax::op_tan(a));
  s.put<T>(stax::op_asin(a));
  s.put<T>(stax::op_acos(a));
  s.put<T>(stax::op_atan(a));
  s.put<T>(stax::op_sinh(a));
  s.put<T>(stax::op_cosh(a));
  s.put<T>(stax::op_tanh(a));
  s.put<T>(stax::op_asinh(a));
  s.put<T>(stax::op_acosh(a));
  s.put<T>(stax::op_atanh(a));
  s.put<T>(stax::op_erf(a));
  s.put<T>(stax::op_erfc(a));
  s.put<T>(stax::op_erfinv(a));
  s.put<T>(stax::op_sigmoid(a));
}

// OperandKinds::IntegerBool: the integers and bool.
template <class T>
__device__ void ops_integer_bool(T a, T b, Sink& s) {
  s.put<T>(stax::op_bitwise_and(a, b));
  s.put<T>(stax::op_bitwise_or(a, b));
  s.put<T>(stax::op_bitwise_xor(a, b));
  s.put<T>(stax::op_bitwise_not(a));
}

// OperandKinds::Integer: the integers.
template <class T>
__device__ void ops_integer(T a, T b, Sink& s) {
  s.put<T>(stax::op_shift_left(a, b));
  s.put<T>(stax::op_shift_right(a, b));
}

// x converted to every element type.
template <class From>
__device__ void convert_to_all(From x, Sink& s) {
  s.put<bool>(stax::convert<bool>(x));
  s.put<i8>(stax::convert<i8>(x));
  s.put<u8>(stax::convert<u8>(x));
  s.put<i16>(stax::convert<i16>(x));
  s.put<i32>(stax::convert<i32>(x));
  s.put<i64>(stax::convert<i64>(x));
  s.put<float>(stax::convert<float>(x));
  s.put<double>(stax::convert<double>(x));
  s.put<bf16>(stax::convert<bf16>(x));
  s.put<f16>(stax::convert<f16>(x));
}

// Warp all-reduces at every width, and block all-reduces through one scratch array.
template <class T>
__device__ void reductions(T v, T* scratch, Sink& s) {
  s.put<T>(stax::combine_sum(v, v));
  s.put<T>(stax::combine_prod(v, v));
  s.put<T>(stax::combine_max(v, v));
  s.put<T>(stax::combine_min(v, v));
  for (int width = 1; width <= 32; width *= 2) {
    s.put<T>(stax::warp_allreduce_sum(v, width));
    s.put<T>(stax::warp_allreduce_prod(v, width));
    s.put<T>(stax::warp_allreduce_max(v, width));
    s.put<T>(stax::warp_allreduce_min(v, width));
  }
  s.put<T>(stax::block_allreduce_sum(v, scratch));
  s.put<T>(stax::block_allreduce_prod(v, scratch));
  s.put<T>(stax::block_allreduce_max(v, scratch));
  s.put<T>(stax::block_allreduce_min(v, scratch));
}

}  // namespace check

using namespace check;

extern "C" __global__ void stax_check_ops_float(const float* a, const float* b, const bool* c,
                                                void* out) {
  const int i = threadIdx.x;
  Sink s = sink_for(out);
  ops_any(a[i], b[i], c[i], s);
  ops_numeric(a[i], b[i], s);
  ops_floating(a[i], b[i], s);
}
extern "C" __global__ void stax_check_ops_double(const double* a, const double* b, const bool* c,
                                                 void* out) {
  const int i = threadIdx.x;
  Sink s = sink_for(out);
  ops_any(a[i], b[i], c[i], s);
  ops_numeric(a[i], b[i], s);
  ops_floating(a[i], b[i], s);
}

#define STAX_CHECK_INTEGER_OPS(T)                                                      \
  extern "C" __global__ void stax_check_ops_##T(const T* a, const T* b, const bool* c, \
                                                void* out) {                           \
    const int i = threadIdx.x;                                                         \
    Sink s = sink_for(out);                                                            \
    ops_any(a[i], b[i], c[i], s);                                                      \
    ops_numeric(a[i], b[i], s);                                                        \
    ops_integer_bool(a[i], b[i], s);                                                   \
    ops_integer(a[i], b[i], s);                                                        \
  }
STAX_CHECK_INTEGER_OPS(i8)
STAX_CHECK_INTEGER_OPS(u8)
STAX_CHECK_INTEGER_OPS(i16)
STAX_CHECK_INTEGER_OPS(i32)
STAX_CHECK_INTEGER_OPS(i64)
#undef STAX_CHECK_INTEGER_OPS

extern "C" __global__ void stax_check_ops_bool(const bool* a, const bool* b, const bool* c,
                                               void* out) {
  const int i = threadIdx.x;
  Sink s = sink_for(out);
  ops_any(a[i], b[i], c[i], s);
  ops_integer_bool(a[i], b[i], s);
}

// Every conversion pair: from each element type to each.
#define STAX_CHECK_CONVERT(T)                                                \
  extern "C" __global__ void stax_check_convert_##T(const T* x, void* out) { \
    Sink s = sink_for(out);                                                  \
    convert_to_all(x[threadIdx.x], s);                                       \
  }
STAX_CHECK_CONVERT(bool)
STAX_CHECK_CONVERT(i8)
STAX_CHECK_CONVERT(u8)
STAX_CHECK_CONVERT(i16)
STAX_CHECK_CONVERT(i32)
STAX_CHECK_CONVERT(i64)
STAX_CHECK_CONVERT(float)
STAX_CHECK_CONVERT(double)
STAX_CHECK_CONVERT(bf16)
STAX_CHECK_CONVERT(f16)
#undef STAX_CHECK_CONVERT

// 16-bit loads, stores and conversions: y = round(x) through float, both ways.
extern "C" __global__ void stax_check_half(const bf16* xb, const f16* xh, bf16* yb, f16* yh,
                                           float* f) {
  const int i = threadIdx.x;
  const float b = stax::load_float(xb + i);
  const float h = stax::load_float(xh + i);
  stax::store_float(yb + i, h);
  stax::store_float(yh + i, b);
  const bf16 rb = stax::from_float<bf16>(b);
  const f16 rh = stax::from_float<f16>(h);
  f[2 * i] = stax::to_float(rb);
  f[2 * i + 1] = stax::to_float(rh);
}

// Reductions: one block of blockDim.x (a multiple of 32) threads per launch.
#define STAX_CHECK_REDUCE(T)                                                \
  extern "C" __global__ void stax_check_reduce_##T(const T* x, void* out) { \
    __shared__ T scratch[32];                                               \
    Sink s = sink_for(out);                                                 \
    reductions(x[blockIdx.x * blockDim.x + threadIdx.x], scratch, s);       \
  }
STAX_CHECK_REDUCE(float)
STAX_CHECK_REDUCE(double)
STAX_CHECK_REDUCE(i64)
STAX_CHECK_REDUCE(i32)
STAX_CHECK_REDUCE(bool)
#undef STAX_CHECK_REDUCE
