// Test kernel exercising every operation of stax_kernel.h. Not built by CMake: the runtime
// tests JIT-compile it at each SIMD level and compare the results with std:: references.
// Loops follow the generated-code pattern: full vectors, then one masked tail.
#include "stax_kernel.h"

using V = stax::Vectorized<float>;
using M = stax::VecMask<float>;

namespace {

enum UnaryOp {
  kAbs,
  kNeg,
  kUnaryMinus,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kTanh,
  kSigmoid,
  kRelu,
};

enum BinaryOp { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kPowTensor };

enum CompareOp { kGt, kLt, kGe, kLe, kEq, kNe };

enum LogicalOp { kAnd, kOr, kXor, kNot, kAndNamed, kOrNamed, kXorNamed, kNotNamed, kWhereMask };

enum ReduceOp { kSum, kMax, kMin };

V unary_vec(int op, const V& x) {
  switch (op) {
    case kAbs:
      return stax::abs(x);
    case kNeg:
      return stax::neg(x);
    case kUnaryMinus:
      return -x;
    case kExp:
      return stax::exp(x);
    case kLog:
      return stax::log(x);
    case kSqrt:
      return stax::sqrt(x);
    case kRsqrt:
      return stax::rsqrt(x);
    case kTanh:
      return stax::tanh(x);
    case kSigmoid:
      return stax::sigmoid(x);
    case kRelu:
      return stax::relu(x);
  }
  return x;
}

float unary_scalar(int op, float x) {
  switch (op) {
    case kAbs:
      return stax::abs_f(x);
    case kNeg:
      return stax::neg_f(x);
    case kUnaryMinus:
      return -x;
    case kExp:
      return stax::exp_f(x);
    case kLog:
      return stax::log_f(x);
    case kSqrt:
      return stax::sqrt_f(x);
    case kRsqrt:
      return stax::rsqrt_f(x);
    case kTanh:
      return stax::tanh_f(x);
    case kSigmoid:
      return stax::sigmoid_f(x);
    case kRelu:
      return stax::relu_f(x);
  }
  return x;
}

V binary_vec(int op, const V& a, const V& b) {
  switch (op) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kMaximum:
      return stax::maximum(a, b);
    case kMinimum:
      return stax::minimum(a, b);
    case kPowTensor:
      return stax::pow(a, b);
  }
  return a;
}

// Same operations through the compound assignments.
V binary_vec_compound(int op, V a, const V& b) {
  switch (op) {
    case kAdd:
      return a += b;
    case kSub:
      return a -= b;
    case kMul:
      return a *= b;
    case kDiv:
      return a /= b;
  }
  return binary_vec(op, a, b);
}

float binary_scalar(int op, float a, float b) {
  switch (op) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kMaximum:
      return stax::maximum_f(a, b);
    case kMinimum:
      return stax::minimum_f(a, b);
    case kPowTensor:
      return stax::op_pow(a, b);
  }
  return a;
}

M compare_vec(int op, const V& a, const V& b) {
  switch (op) {
    case kGt:
      return stax::cmp_gt(a, b);
    case kLt:
      return stax::cmp_lt(a, b);
    case kGe:
      return stax::cmp_ge(a, b);
    case kLe:
      return stax::cmp_le(a, b);
    case kEq:
      return stax::cmp_eq(a, b);
    case kNe:
      return stax::cmp_ne(a, b);
  }
  return M(false);
}

M logical_vec(int op, const M& a, const M& b) {
  switch (op) {
    case kAnd:
      return a & b;
    case kOr:
      return a | b;
    case kXor:
      return a ^ b;
    case kNot:
      return !a;
    case kAndNamed:
      return stax::logical_and(a, b);
    case kOrNamed:
      return stax::logical_or(a, b);
    case kXorNamed:
      return stax::logical_xor(a, b);
    case kNotNamed:
      return stax::logical_not(a);
    case kWhereMask:
      return stax::where(a, b, !b);  // a ? b : !b  ==  a == b
  }
  return a;
}

}  // namespace

STAX_KERNEL_EXPORT int stax_test_width() {
  return V::size();
}
STAX_KERNEL_EXPORT int stax_test_mask_width() {
  return M::size();
}
STAX_KERNEL_EXPORT int stax_test_width_macro() {
  return STAX_SIMD_WIDTH_F32;
}

STAX_KERNEL_EXPORT void stax_test_unary(int op, const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) unary_vec(op, V::loadu(x + i)).store(out + i);
  if (i < n) unary_vec(op, V::loadu(x + i, n - i)).store(out + i, n - i);
}

STAX_KERNEL_EXPORT void stax_test_unary_scalar(int op, const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = unary_scalar(op, x[i]);
}

STAX_KERNEL_EXPORT void stax_test_binary(int op, int compound, const float* a, const float* b,
                                         float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) {
    const V x = V::loadu(a + i), y = V::loadu(b + i);
    (compound ? binary_vec_compound(op, x, y) : binary_vec(op, x, y)).store(out + i);
  }
  if (i < n) {
    const V x = V::loadu(a + i, n - i), y = V::loadu(b + i, n - i);
    (compound ? binary_vec_compound(op, x, y) : binary_vec(op, x, y)).store(out + i, n - i);
  }
}

STAX_KERNEL_EXPORT void stax_test_binary_scalar(int op, const float* a, const float* b, float* out,
                                                int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = binary_scalar(op, a[i], b[i]);
}

// Broadcast scalar operand: a[i] op s (implicit float -> Vectorized conversion).
STAX_KERNEL_EXPORT void stax_test_binary_broadcast(int op, const float* a, float s, float* out,
                                                   int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) binary_vec(op, V::loadu(a + i), s).store(out + i);
  if (i < n) binary_vec(op, V::loadu(a + i, n - i), s).store(out + i, n - i);
}

STAX_KERNEL_EXPORT void stax_test_pow(const float* x, float e, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) stax::pow(V::loadu(x + i), e).store(out + i);
  if (i < n) stax::pow(V::loadu(x + i, n - i), e).store(out + i, n - i);
}

STAX_KERNEL_EXPORT void stax_test_pow_scalar(const float* x, float e, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = stax::pow_f(x[i], e);
}

STAX_KERNEL_EXPORT void stax_test_compare(int op, const float* a, const float* b, bool* out,
                                          int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) {
    compare_vec(op, V::loadu(a + i), V::loadu(b + i)).store_bytes(out + i);
  }
  if (i < n) {
    compare_vec(op, V::loadu(a + i, n - i), V::loadu(b + i, n - i)).store_bytes(out + i, n - i);
  }
}

STAX_KERNEL_EXPORT void stax_test_where(const bool* mask, const float* a, const float* b,
                                        float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) {
    stax::where(M::load_bytes(mask + i), V::loadu(a + i), V::loadu(b + i)).store(out + i);
  }
  if (i < n) {
    const int64_t c = n - i;
    stax::where(M::load_bytes(mask + i, c), V::loadu(a + i, c), V::loadu(b + i, c))
        .store(out + i, c);
  }
}

STAX_KERNEL_EXPORT void stax_test_logical(int op, const bool* a, const bool* b, bool* out,
                                          int64_t n) {
  int64_t i = 0;
  for (; i + M::size() <= n; i += M::size()) {
    logical_vec(op, M::load_bytes(a + i), M::load_bytes(b + i)).store_bytes(out + i);
  }
  if (i < n) {
    const int64_t c = n - i;
    logical_vec(op, M::load_bytes(a + i, c), M::load_bytes(b + i, c)).store_bytes(out + i, c);
  }
}

// Vector accumulator, tail merged with set(); then a lane reduction.
STAX_KERNEL_EXPORT float stax_test_reduce(int op, const float* x, int64_t n) {
  const float init = op == kSum ? 0.0f : (op == kMax ? -__builtin_inff() : __builtin_inff());
  V acc(init);
  auto combine = [op](const V& a, const V& b) {
    return op == kSum ? a + b : (op == kMax ? stax::maximum(a, b) : stax::minimum(a, b));
  };
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) acc = combine(acc, V::loadu(x + i));
  if (i < n) acc = V::set(acc, combine(acc, V::loadu(x + i, n - i)), n - i);
  return op == kSum ? stax::vec_reduce_sum(acc)
                    : (op == kMax ? stax::vec_reduce_max(acc) : stax::vec_reduce_min(acc));
}

// Lane reduction of exactly one vector loaded from x[0..W).
STAX_KERNEL_EXPORT float stax_test_reduce_one(int op, const float* x) {
  const V v = V::loadu(x);
  return op == kSum ? stax::vec_reduce_sum(v)
                    : (op == kMax ? stax::vec_reduce_max(v) : stax::vec_reduce_min(v));
}

// out[i] = x[idx[i]] through from_lanes; the tail uses the count form, which must not
// call the lane function past n (idx may end at a guard page).
STAX_KERNEL_EXPORT void stax_test_gather(const float* x, const int64_t* idx, float* out,
                                         int64_t n) {
  int64_t i = 0;
  for (; i + V::size() <= n; i += V::size()) {
    V::from_lanes([&](int64_t l) { return x[idx[i + l]]; }).store(out + i);
  }
  if (i < n) V::from_lanes([&](int64_t l) { return x[idx[i + l]]; }, n - i).store(out + i, n - i);
}

// out[i] = x[i] > 0 through VecMask::from_lanes.
STAX_KERNEL_EXPORT void stax_test_mask_from_lanes(const float* x, bool* out, int64_t n) {
  int64_t i = 0;
  for (; i + M::size() <= n; i += M::size()) {
    M::from_lanes([&](int64_t l) { return x[i + l] > 0.0f; }).store_bytes(out + i);
  }
  if (i < n) {
    M::from_lanes([&](int64_t l) { return x[i + l] > 0.0f; }, n - i).store_bytes(out + i, n - i);
  }
}

// Single masked load + masked store of `count` lanes (count may be 0..W).
STAX_KERNEL_EXPORT void stax_test_copy_count(const float* src, float* dst, int64_t count) {
  V::loadu(src, count).store(dst, count);
}
STAX_KERNEL_EXPORT void stax_test_copy_bytes_count(const bool* src, bool* dst, int64_t count) {
  M::load_bytes(src, count).store_bytes(dst, count);
}
// Masked load into a full store: lanes >= count must read as 0 / false.
STAX_KERNEL_EXPORT void stax_test_load_count_full(const float* src, float* dst, int64_t count) {
  V::loadu(src, count).store(dst);
}
STAX_KERNEL_EXPORT void stax_test_load_bytes_count_full(const bool* src, bool* dst, int64_t count) {
  M::load_bytes(src, count).store_bytes(dst);
}

// out[0..W) = set(a, b, count).
STAX_KERNEL_EXPORT void stax_test_set(const float* a, const float* b, float* out, int64_t count) {
  V::set(V::loadu(a), V::loadu(b), count).store(out);
}

STAX_KERNEL_EXPORT void stax_test_index(int64_t a, int64_t b, int64_t* out) {
  out[0] = stax_floordiv(a, b);
  out[1] = stax_mod(a, b);
}

STAX_KERNEL_EXPORT void stax_test_half(const float* in, uint16_t* half_bits, float* half_back,
                                       uint16_t* bf16_bits, float* bf16_back, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const stax::Half h = in[i];
    const stax::BFloat16 b = in[i];
    half_bits[i] = h.bits;
    half_back[i] = h;
    bf16_bits[i] = b.bits;
    bf16_back[i] = b;
  }
}

STAX_KERNEL_EXPORT void stax_test_error(char* buf, int64_t cap, int value) {
  stax_set_error(buf, cap, "bad value %d in %s", value, "kernel");
}

// 1 when stax_alloc returns 64-byte aligned, writable memory.
STAX_KERNEL_EXPORT int stax_test_alloc(int64_t nbytes) {
  void* p = stax_alloc(nbytes);
  if (p == nullptr) return 0;
  const int aligned = reinterpret_cast<uintptr_t>(p) % 64 == 0;
  std::memset(p, 0x5A, static_cast<size_t>(nbytes));
  stax_free(p);
  return aligned;
}

// What a block freed by stax_free gives the next stax_alloc: 1 when a request of
// `same_bytes` returns the block of `nbytes` just freed, 0 when it returns other memory; the
// block of `nbytes` freed again before returning. -1 on an allocation failure.
STAX_KERNEL_EXPORT int stax_test_scratch_reuse(int64_t nbytes, int64_t same_bytes) {
  void* p = stax_alloc(nbytes);
  if (p == nullptr) return -1;
  stax_free(p);
  void* q = stax_alloc(same_bytes);
  if (q == nullptr) return -1;
  std::memset(q, 0x5A, static_cast<size_t>(same_bytes));
  const int reused = q == p;
  stax_free(q);
  return reused;
}

STAX_KERNEL_EXPORT void stax_test_tensor_arg(const StaxTensorArg* arg, int64_t* out) {
  out[0] = arg->ndim;
  out[1] = arg->ndim > 0 ? arg->sizes[arg->ndim - 1] : -1;
  out[2] = arg->ndim > 0 ? arg->strides[0] : -1;
  out[3] = static_cast<const int64_t*>(arg->data)[0];
}

STAX_KERNEL_EXPORT void stax_test_half_from_bits(const uint16_t* bits, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = stax::Half::from_bits(bits[i]);
}

STAX_KERNEL_EXPORT void stax_test_bf16_from_bits(const uint16_t* bits, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = stax::BFloat16::from_bits(bits[i]);
}
