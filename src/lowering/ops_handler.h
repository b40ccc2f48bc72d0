// The define-by-run interface between loop bodies and their consumers.
//
// A loop body (the inner function of a lowered buffer) is C++ code that, given symbolic index
// expressions, calls an OpsHandler: load a buffer element, apply a pointwise op, reduce, store.
// Running the same body under different handlers gives its reads and writes (the recording
// handler of Section 7.1), its cost (the materialization rule of lowering), or its kernel IR
// (code generation). Values are opaque ids that only the handler that made them interprets.
//
// The op vocabulary is deliberately primitive and strictly typed, so that every consumer
// (kernel IR, printer, kernel headers, cost model) handles one small set:
//  * operands of an op all have the same dtype (lowering converts them first, with PyTorch's
//    type promotion); the result has that dtype, except the ops marked `produces_bool`
//    (comparisons, logical ops, isnan/isinf) and Where (cond is bool, the result is the dtype
//    of the two branches);
//  * ops never see float16/bfloat16: lowering computes those in float32 and rounds back to
//    the 16-bit dtype after every ATen op (to_dtype there and back), so fused results equal
//    eager's;
//  * composite ATen ops (gelu, silu, softplus, clamp, lerp, ...) are decomposed by lowering
//    into these primitives in the computation dtype.
// The kernel headers implement every op as `stax::op_<name>` (the `name` of op_info) for each
// C++ element type and for Vectorized<T>; their semantics are PyTorch's (see pointwise_ops.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "index/expr.h"
#include "ir/dtype.h"
#include "ir/index_rule.h"
#include "ir/scalar.h"

namespace stax::lowering {

struct OpsValue {
  int id = -1;
  DType dtype = DType::Float32;
};

// Every pointwise operation a loop body may apply. The table in pointwise_ops.cpp gives
// each one its name, arity, cost class, result rule and the dtypes it accepts.
enum class PointwiseOp : uint8_t {
  // Arithmetic. Integer add/sub/mul/neg wrap (two's complement), as PyTorch's kernels do.
  Add,
  Sub,
  Mul,
  Div,        // true division; floating operands only
  TruncDiv,   // rounds toward zero; integers: division by zero sets the error flag
  FloorDiv,   // Python //: integers floor; floats as torch.div(rounding_mode="floor")
  Remainder,  // Python %: the result has the sign of the divisor (torch.remainder)
  Fmod,       // C fmod: the result has the sign of the dividend (torch.fmod)
  Pow,        // torch.pow; integer exponents of integer bases exact (negative -> error as torch)
  Neg,
  Abs,
  Sign,
  Reciprocal,  // floating only
  Maximum,     // NaN-propagating (torch.maximum)
  Minimum,     // NaN-propagating (torch.minimum)
  Fmax,        // NaN-ignoring (torch.fmax)
  Fmin,
  Atan2,
  Hypot,
  Copysign,
  // Bitwise (integers and bool) and shifts (integers; shift counts >= the bit width or
  // negative give PyTorch's results: 0 for <<, 0 or -1 for >>).
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  BitwiseNot,
  ShiftLeft,
  ShiftRight,
  // Logical: any dtype in, bool out (nonzero is true).
  LogicalAnd,
  LogicalOr,
  LogicalXor,
  LogicalNot,
  // Comparisons: bool out.
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // Floating math (float32 / float64).
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Asinh,
  Acosh,
  Atanh,
  Erf,
  Erfc,
  Erfinv,
  Sigmoid,
  Relu,
  // Rounding: identity on integers.
  Floor,
  Ceil,
  Round,  // half to even (torch.round)
  Trunc,
  // Classification: bool out (false for integers).
  IsNan,
  IsInf,
  // (cond, a, b): cond is bool.
  Where,
};
inline constexpr int kPointwiseOpCount = static_cast<int>(PointwiseOp::Where) + 1;

// Reductions over the reduction loop variables of a body.
//  * Sum, Prod: in the value's dtype (lowering widens integer sums to int64 first);
//  * Max, Min: NaN-propagating;
//  * ArgMax, ArgMin: int64 result, the linear index (row-major over the reduction variables)
//    of the first extreme element; a NaN is the extreme, its first occurrence wins;
//  * Any, All: bool result, over a bool value;
//  * WelfordMean, WelfordM2: mean and sum of squared deviations from the mean, by Welford's
//    update (floating). Both over the same value share one accumulator triple.
enum class ReductionType : uint8_t {
  Sum,
  Prod,
  Max,
  Min,
  ArgMax,
  ArgMin,
  Any,
  All,
  WelfordMean,
  WelfordM2,
};
inline constexpr int kReductionTypeCount = static_cast<int>(ReductionType::WelfordM2) + 1;

// How expensive an op is to recompute, for the per-device materialization rule (Section 6.6).
enum class CostClass : uint8_t { Cheap, Moderate, Transcendental };

// Which operand dtypes an op accepts (checked by the kernel IR verifier).
enum class OperandKinds : uint8_t {
  Any,          // every dtype
  Numeric,      // not bool
  Floating,     // float32 / float64
  IntegerBool,  // integers and bool (bitwise)
  Integer,      // integers (shifts)
};

struct PointwiseOpInfo {
  PointwiseOp op;
  std::string_view name;  // also the kernel-header function: stax::op_<name>
  int arity;
  CostClass cost;
  bool produces_bool;  // comparisons, logical ops, isnan/isinf
  OperandKinds operands;
};
const PointwiseOpInfo& op_info(PointwiseOp op);
// Whether `dtype` is a valid operand dtype of `op` (float16/bfloat16 never are).
bool op_accepts(PointwiseOp op, DType dtype);

std::string_view reduction_name(ReductionType type);
// The dtype a reduction of a value of `value` dtype produces.
DType reduction_result_dtype(ReductionType type, DType value);

class OpsHandler {
 public:
  virtual ~OpsHandler() = default;
  virtual OpsValue load(const std::string& buffer, const index::Expr& index, DType dtype) = 0;
  // `value` converted to `dtype` by ir::convert_scalar (PyTorch's conversion; float16 and
  // bfloat16 through float32): exact for every int64, so `constant(INT64_MAX, Int64)` is
  // INT64_MAX. A C++ literal converts implicitly by its kind (2, 2.0, true).
  virtual OpsValue constant(const ir::Scalar& value, DType dtype) = 0;
  virtual OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, DType result) = 0;
  // Conversion with PyTorch's semantics: floating to integer truncates toward zero (values out
  // of range as PyTorch on x86), anything to bool is `!= 0`, to float16/bfloat16 rounds to
  // nearest even.
  virtual OpsValue to_dtype(OpsValue value, DType dtype) = 0;
  // The value of an index expression over the loop variables, as `dtype` (an integer dtype).
  virtual OpsValue index_value(const index::Expr& index, DType dtype) = 0;
  // An index variable that takes the value of the integer `value`, for indirect loads
  // (gather, index_select, embedding, index.Tensor), validated by `rule` (the op's, as
  // PyTorch's): a negative value wraps once (+ size) when the rule wraps; a value the rule
  // refuses sets the kernel's error flag, and the run throws the rule's error (its message,
  // prefixed by the node, with the value; its Python class). The returned variable ranges
  // over [0, rule.size) and may appear in the index of later loads.
  virtual index::Expr indirect_index(OpsValue value, const ir::IndexRule& rule) = 0;
  // Between push_mask(m) and the matching pop_mask(), loads and error checks happen only
  // where m is true (elsewhere loads read zero and checks pass): the operand regions of cat
  // and constant_pad_nd, combined afterwards with Where. Masks nest (their conjunction).
  virtual void push_mask(OpsValue mask) = 0;
  virtual void pop_mask() = 0;
  // Reduces `value` over the reduction loop variables of the enclosing body.
  virtual OpsValue reduction(ReductionType type, OpsValue value) = 0;
  virtual void store(const std::string& buffer, const index::Expr& index, OpsValue value) = 0;
  // Stores the result of reduction() once the reduction loop is complete.
  virtual void store_reduction(const std::string& buffer, const index::Expr& index,
                               OpsValue value) = 0;
};

// Applies op to args: checks arity, that the operands share one dtype the op accepts
// (Where: a bool condition and two equal branch dtypes), computes the result dtype, and
// forwards to handler.compute(). Throws std::logic_error naming the op otherwise: lowering
// must have converted the operands.
OpsValue apply(OpsHandler& handler, PointwiseOp op, std::initializer_list<OpsValue> args);

}  // namespace stax::lowering
