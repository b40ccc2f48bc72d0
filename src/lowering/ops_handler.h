// The define-by-run interface between loop bodies and their consumers.
//
// A loop body (the inner function of a lowered buffer) is C++ code that, given symbolic index
// expressions, calls an OpsHandler: load a buffer element, apply a pointwise op, reduce, store.
// Running the same body under different handlers gives its reads and writes (the recording
// handler of Section 7.1), its cost (the materialization rule of lowering), or its C++ source
// (code generation). Values are opaque ids that only the handler that made them interprets.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "index/expr.h"
#include "ir/dtype.h"

namespace stax::lowering {

struct OpsValue {
  int id = -1;
  DType dtype = DType::Float32;
};

// Every pointwise operation a loop body may apply. The table in pointwise_ops.cpp gives
// each one its name, arity, cost class and result dtype rule.
enum class PointwiseOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Abs,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Relu,
  Maximum,
  Minimum,
  PowScalar,  // x ** attribute
  Where,      // (condition, a, b)
  Gt,
  Lt,
  Ge,
  Le,
  Eq,
  Ne,
};

enum class ReductionType : uint8_t { Sum, Max, Min };

// How expensive an op is to recompute, for the per-device materialization rule (Section 6.6).
enum class CostClass : uint8_t { Cheap, Moderate, Transcendental };

struct PointwiseOpInfo {
  PointwiseOp op;
  std::string_view name;
  int arity;
  CostClass cost;
  bool produces_bool;  // comparisons
};
const PointwiseOpInfo& op_info(PointwiseOp op);

std::string_view reduction_name(ReductionType type);
// The identity element of the reduction (0, -inf, +inf).
double reduction_identity(ReductionType type);

class OpsHandler {
 public:
  virtual ~OpsHandler() = default;
  virtual OpsValue load(const std::string& buffer, const index::Expr& index, DType dtype) = 0;
  virtual OpsValue constant(double value, DType dtype) = 0;
  // `attribute` carries the scalar parameter of ops that have one (PowScalar's exponent).
  virtual OpsValue compute(PointwiseOp op, std::span<const OpsValue> args, double attribute,
                           DType result) = 0;
  virtual OpsValue to_dtype(OpsValue value, DType dtype) = 0;
  // Reduces `value` over the reduction loop variables of the enclosing body.
  virtual OpsValue reduction(ReductionType type, OpsValue value) = 0;
  virtual void store(const std::string& buffer, const index::Expr& index, OpsValue value) = 0;
  // Stores the result of reduction() once the reduction loop is complete.
  virtual void store_reduction(const std::string& buffer, const index::Expr& index,
                               OpsValue value) = 0;
};

// Applies op to args: computes the result dtype (bool for comparisons, else the dtype of the
// first floating operand, else of the first operand) and forwards to handler.compute().
OpsValue apply(OpsHandler& handler, PointwiseOp op, std::initializer_list<OpsValue> args,
               double attribute = 0.0);

}  // namespace stax::lowering
