// C++ emission of loop bodies, scalar and vectorized.
#include "codegen/body_emitter.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace stax::codegen {

using lowering::OpsValue;
using lowering::PointwiseOp;

namespace {

const char* kVec = "stax::Vectorized<float>";
const char* kMask = "stax::VecMask<float>";

void require_supported(DType dtype) {
  if (dtype != DType::Float32 && dtype != DType::Bool) {
    throw std::invalid_argument("code generation supports float32 and bool values so far, not " +
                                std::string(dtype_name(dtype)));
  }
}

}  // namespace

std::string float_literal(double value) {
  // The literal is a float: a finite double beyond the float range is an infinity.
  const float f = static_cast<float>(value);
  if (std::isnan(f)) return "__builtin_nanf(\"\")";
  if (std::isinf(f)) return f > 0 ? "__builtin_inff()" : "(-__builtin_inff())";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9gf", static_cast<double>(static_cast<float>(value)));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s.insert(s.size() - 1, ".0");
  return s;
}

std::string BodyEmitter::pointer_name(const std::string& buffer, bool is_input) {
  return is_input ? "in_" + buffer : buffer;
}

std::string BodyEmitter::ptr(const std::string& buffer) const {
  return pointer_name(buffer, config_.input_buffers.count(buffer) > 0);
}

std::string BodyEmitter::index_cpp(const index::Expr& e) const {
  return index::to_cpp(index::simplify(e, config_.ranges), config_.ranges);
}

index::Expr BodyEmitter::access_index(const std::string& buffer, const index::Expr& e) const {
  const index::Expr simplified = index::simplify(e, config_.ranges);
  if (!config_.localized_buffers.count(buffer)) return simplified;
  return index::simplify(index::substitute(simplified, config_.zero_outer), config_.ranges);
}

std::string BodyEmitter::lane_index_cpp(const index::Expr& simplified) const {
  const index::Expr lane = index::substitute(
      simplified,
      {{config_.vector_var, index::Expr::var(config_.vector_var) + index::Expr::var("lane")}});
  index::RangeMap with_lane = config_.ranges;
  with_lane["lane"] = 64;  // at most 64 lanes (AVX-512 with 1-byte elements)
  return index::to_cpp(lane, with_lane);
}

OpsValue BodyEmitter::define(const std::string& expr, bool vector, DType dtype) {
  const std::string key = std::string(vector ? "v" : "s") + std::string(dtype_name(dtype)) + expr;
  if (auto it = cse_.find(key); it != cse_.end()) return {it->second, dtype};
  const int id = static_cast<int>(values_.size());
  const std::string name = "tmp" + std::to_string(id);
  values_.push_back({name, vector, dtype});
  body_ += "auto " + name + " = " + expr + ";\n";
  cse_[key] = id;
  return {id, dtype};
}

std::string BodyEmitter::as_vector(const OpsValue& v) {
  const Emitted& e = values_.at(static_cast<size_t>(v.id));
  if (e.vector) return e.name;
  return std::string(e.dtype == DType::Bool ? kMask : kVec) + "(" + e.name + ")";
}

OpsValue BodyEmitter::load(const std::string& buffer, const index::Expr& idx, DType dtype) {
  require_supported(dtype);
  if (config_.elided_buffers.count(buffer)) {
    auto it = elided_values_.find(buffer);
    if (it == elided_values_.end()) {
      throw std::logic_error("elided buffer " + buffer + " read before it is computed");
    }
    return it->second;
  }
  const index::Expr simplified = access_index(buffer, idx);
  const std::string p = ptr(buffer);
  if (!config_.vectorized || !index::depends_on(simplified, config_.vector_var)) {
    return define(p + "[" + index_cpp(simplified) + "]", false, dtype);
  }
  if (auto tile = config_.tiled_loads.find(buffer + "@" + index::to_string(simplified));
      tile != config_.tiled_loads.end()) {
    const std::string& a = config_.tile_outer_var;
    const std::string& v = config_.vector_var;
    const std::string at = tile->second + " + (" + a + " - " + a + "_tile) * " +
                           std::to_string(config_.tile_size) + " + (" + v + " - " + v + "_tile)";
    return define(std::string(kVec) + "::loadu(" + at + ")", true, dtype);
  }
  const auto stride = index::stride(simplified, config_.vector_var, config_.ranges);
  const bool is_bool = dtype == DType::Bool;
  if (stride && *stride == 1) {
    const std::string at = p + " + " + index_cpp(simplified);
    const std::string count = config_.full_vector ? "" : ", " + config_.count;
    if (is_bool)
      return define(std::string(kMask) + "::load_bytes(" + at + count + ")", true, dtype);
    return define(std::string(kVec) + "::loadu(" + at + count + ")", true, dtype);
  }
  // Gather: lane l reads the element of iteration vector_var + l.
  const std::string element = p + "[" + lane_index_cpp(simplified) + "]";
  const std::string count = config_.full_vector ? "" : ", " + config_.count;
  return define(std::string(is_bool ? kMask : kVec) + "::from_lanes([&](int64_t lane) { return " +
                    element + "; }" + count + ")",
                true, dtype);
}

OpsValue BodyEmitter::constant(double value, DType dtype) {
  require_supported(dtype);
  if (dtype == DType::Bool) return define(value != 0.0 ? "true" : "false", false, dtype);
  return define(float_literal(value), false, dtype);
}

OpsValue BodyEmitter::compute(PointwiseOp op, std::span<const OpsValue> args, DType result) {
  require_supported(result);
  bool vector = false;
  for (const OpsValue& a : args) vector = vector || values_.at(static_cast<size_t>(a.id)).vector;
  std::vector<std::string> x;
  for (const OpsValue& a : args) {
    x.push_back(vector ? as_vector(a) : values_.at(static_cast<size_t>(a.id)).name);
  }
  auto infix = [&](const char* sym) { return "(" + x[0] + " " + sym + " " + x[1] + ")"; };
  auto call = [&](const std::string& vector_fn, const std::string& scalar_fn) {
    std::string out = (vector ? "stax::" + vector_fn : "stax::" + scalar_fn) + "(";
    for (size_t k = 0; k < x.size(); ++k) out += (k ? ", " : "") + x[k];
    return out + ")";
  };
  auto compare = [&](const char* name, const char* sym) {
    return vector ? "stax::cmp_" + std::string(name) + "(" + x[0] + ", " + x[1] + ")" : infix(sym);
  };
  std::string expr;
  switch (op) {
    case PointwiseOp::Add:
      expr = infix("+");
      break;
    case PointwiseOp::Sub:
      expr = infix("-");
      break;
    case PointwiseOp::Mul:
      expr = infix("*");
      break;
    case PointwiseOp::Div:
      expr = infix("/");
      break;
    case PointwiseOp::Neg:
      expr = "(-" + x[0] + ")";
      break;
    case PointwiseOp::Abs:
      expr = call("abs", "abs_f");
      break;
    case PointwiseOp::Exp:
      expr = call("exp", "exp_f");
      break;
    case PointwiseOp::Log:
      expr = call("log", "log_f");
      break;
    case PointwiseOp::Sqrt:
      expr = call("sqrt", "sqrt_f");
      break;
    case PointwiseOp::Rsqrt:
      expr = call("rsqrt", "rsqrt_f");
      break;
    case PointwiseOp::Tanh:
      expr = call("tanh", "tanh_f");
      break;
    case PointwiseOp::Sigmoid:
      expr = call("sigmoid", "sigmoid_f");
      break;
    case PointwiseOp::Relu:
      expr = call("relu", "relu_f");
      break;
    case PointwiseOp::Maximum:
      expr = call("maximum", "maximum_f");
      break;
    case PointwiseOp::Minimum:
      expr = call("minimum", "minimum_f");
      break;
    case PointwiseOp::Pow: {
      // A uniform exponent stays a scalar, so the vector pow takes its special cases.
      const std::string exponent = values_.at(static_cast<size_t>(args[1].id)).name;
      expr = (vector ? "stax::pow(" : "stax::pow_f(") + x[0] + ", " + exponent + ")";
      break;
    }
    case PointwiseOp::Where:
      expr = vector ? "stax::where(" + x[0] + ", " + x[1] + ", " + x[2] + ")"
                    : "(" + x[0] + " ? " + x[1] + " : " + x[2] + ")";
      break;
    case PointwiseOp::Gt:
      expr = compare("gt", ">");
      break;
    case PointwiseOp::Lt:
      expr = compare("lt", "<");
      break;
    case PointwiseOp::Ge:
      expr = compare("ge", ">=");
      break;
    case PointwiseOp::Le:
      expr = compare("le", "<=");
      break;
    case PointwiseOp::Eq:
      expr = compare("eq", "==");
      break;
    case PointwiseOp::Ne:
      expr = compare("ne", "!=");
      break;
    default:
      throw std::invalid_argument("code generation does not support " +
                                  std::string(lowering::op_info(op).name) + " so far");
  }
  if (vector && args.size() > 1) {
    for (const OpsValue& a : args) {
      if (a.dtype != DType::Float32 && !(op == PointwiseOp::Where && &a == &args[0]) &&
          !(op == PointwiseOp::Where && a.dtype == DType::Bool)) {
        throw std::invalid_argument("vectorized " + std::string(lowering::op_info(op).name) +
                                    " on " + std::string(dtype_name(a.dtype)) +
                                    " operands is not supported yet");
      }
    }
  }
  return define(expr, vector, result);
}

OpsValue BodyEmitter::to_dtype(OpsValue value, DType dtype) {
  require_supported(dtype);
  if (value.dtype == dtype) return value;
  const Emitted& e = values_.at(static_cast<size_t>(value.id));
  if (dtype == DType::Float32) {  // from bool
    if (e.vector) {
      return define(
          "stax::where(" + e.name + ", " + std::string(kVec) + "(1.0f), " + kVec + "(0.0f))", true,
          dtype);
    }
    return define("static_cast<float>(" + e.name + ")", false, dtype);
  }
  if (e.vector) return define("stax::cmp_ne(" + e.name + ", " + kVec + "(0.0f))", true, dtype);
  return define("(" + e.name + " != 0.0f)", false, dtype);
}

OpsValue BodyEmitter::index_value(const index::Expr&, DType dtype) {
  throw std::invalid_argument("code generation supports no index values of " +
                              std::string(dtype_name(dtype)) + " so far");
}

index::Expr BodyEmitter::indirect_index(OpsValue, int64_t, const std::string& what) {
  throw std::invalid_argument("code generation supports no indirect loads so far (" + what + ")");
}

void BodyEmitter::push_mask(OpsValue) {
  throw std::invalid_argument("code generation supports no masked loads so far");
}

void BodyEmitter::pop_mask() {
  throw std::invalid_argument("code generation supports no masked loads so far");
}

namespace {
double reduction_identity(lowering::ReductionType type) {
  switch (type) {
    case lowering::ReductionType::Sum:
      return 0.0;
    case lowering::ReductionType::Max:
      return -HUGE_VAL;
    case lowering::ReductionType::Min:
      return HUGE_VAL;
    default:
      throw std::invalid_argument("code generation supports no " +
                                  std::string(lowering::reduction_name(type)) +
                                  " reductions so far");
  }
}
}  // namespace

OpsValue BodyEmitter::reduction(lowering::ReductionType type, OpsValue value) {
  if (value.dtype != DType::Float32) {
    throw std::invalid_argument("reductions of " + std::string(dtype_name(value.dtype)) +
                                " are not supported yet");
  }
  const std::string acc = "acc" + std::to_string(reductions_++) + config_.name_suffix;
  accumulator_types_[acc] = type;
  const std::string init = float_literal(reduction_identity(type));
  auto combine = [&](const std::string& a, const std::string& b, bool vector) {
    switch (type) {
      case lowering::ReductionType::Sum:
        return "(" + a + " + " + b + ")";
      case lowering::ReductionType::Max:
        return (vector ? "stax::maximum(" : "stax::maximum_f(") + a + ", " + b + ")";
      case lowering::ReductionType::Min:
        return (vector ? "stax::minimum(" : "stax::minimum_f(") + a + ", " + b + ")";
      default:
        return std::string();
    }
    return std::string();
  };
  const std::string lane_reduce = type == lowering::ReductionType::Sum   ? "stax::vec_reduce_sum"
                                  : type == lowering::ReductionType::Max ? "stax::vec_reduce_max"
                                                                         : "stax::vec_reduce_min";
  // A blocked sum adds into <acc>_blk; block_end() adds each block into <acc>_outer (double).
  const bool blocked = config_.cascade && type == lowering::ReductionType::Sum;
  const std::string blk = acc + "_blk";
  const std::string outer = acc + "_outer";
  if (config_.vector_over_pointwise) {
    const std::string vacc = acc + "_vec";
    before_ += std::string(kVec) + " " + vacc + "(" + init + ");\n";
    const std::string target = blocked ? blk : vacc;
    body_ += target + " = " + combine(target, as_vector(value), true) + ";\n";
    if (blocked) {
      before_ += std::string(kVec) + " " + blk + "(0.0f);\nstax::VecSumOuter " + outer + ";\n";
      block_end_ += outer + ".fold(" + blk + ");\n";
      after_ += vacc + " = " + outer + ".lanes();\n";
    }
    const int id = static_cast<int>(values_.size());
    values_.push_back({vacc, true, DType::Float32});
    return {id, DType::Float32};
  }
  before_ += "float " + acc + " = " + init + ";\n";
  if (config_.vectorized) {
    const std::string vacc = acc + "_vec";
    if (!blocked) before_ += std::string(kVec) + " " + vacc + "(" + init + ");\n";
    const std::string target = blocked ? blk : vacc;
    const std::string v = as_vector(value);
    if (config_.full_vector) {
      body_ += target + " = " + combine(target, v, true) + ";\n";
    } else {
      body_ += target + " = " + kVec + "::set(" + target + ", " + combine(target, v, true) + ", " +
               config_.count + ");\n";
    }
    if (blocked) {
      before_ += std::string(kVec) + " " + blk + "(0.0f);\nstax::VecSumOuter " + outer + ";\n";
      block_end_ += outer + ".fold(" + blk + ");\n";
      after_ += acc + " = " + outer + ".total();\n";
    } else {
      after_ += acc + " = " + combine(acc, lane_reduce + "(" + vacc + ")", false) + ";\n";
    }
  } else {
    const std::string target = blocked ? blk : acc;
    body_ += target + " = " +
             combine(target, values_.at(static_cast<size_t>(value.id)).name, false) + ";\n";
    if (blocked) {
      before_ += "float " + blk + " = 0.0f;\ndouble " + outer + " = 0.0;\n";
      block_end_ += "stax::cascade_fold(" + outer + ", " + blk + ");\n";
      after_ += acc + " = static_cast<float>(" + outer + ");\n";
    }
  }
  // The accumulator is a scalar available after the reduction loop.
  const int id = static_cast<int>(values_.size());
  values_.push_back({acc, false, DType::Float32});
  return {id, DType::Float32};
}

void BodyEmitter::store(const std::string& buffer, const index::Expr& idx, OpsValue value) {
  if (config_.elided_buffers.count(buffer)) {
    elided_values_[buffer] = value;
    return;
  }
  body_ += store_code(buffer, idx, value);
}

void BodyEmitter::store_reduction(const std::string& buffer, const index::Expr& idx,
                                  OpsValue value) {
  if (config_.partial_prefix.empty()) {
    after_ += store_code(buffer, idx, value);
    return;
  }
  const std::string acc = values_.at(static_cast<size_t>(value.id)).name;
  const std::string partials = config_.partial_prefix + acc;
  const lowering::ReductionType type = accumulator_types_.at(acc);
  preamble_ += "float " + partials + "[STAX_MAX_THREADS];\n";
  after_ += partials + "[omp_get_thread_num()] = " + acc + ";\n";
  const std::string out = ptr(buffer) + "[" + index_cpp(index::simplify(idx, config_.ranges)) + "]";
  const std::string team = "for (int t = 0; t < omp_get_num_threads(); ++t) ";
  if (type == lowering::ReductionType::Sum) {
    // The partials of any number of threads are added in double (cascade_sum.h).
    final_ += "{\ndouble " + acc + " = 0.0;\n" + team + acc + " += " + partials + "[t];\n" + out +
              " = static_cast<float>(" + acc + ");\n}\n";
    return;
  }
  const std::string combined = type == lowering::ReductionType::Max
                                   ? "stax::maximum_f(" + acc + ", " + partials + "[t])"
                                   : "stax::minimum_f(" + acc + ", " + partials + "[t])";
  final_ += "{\nfloat " + acc + " = " + float_literal(reduction_identity(type)) + ";\n" +
            team + acc + " = " + combined + ";\n" + out + " = " + acc + ";\n}\n";
}

std::string BodyEmitter::store_code(const std::string& buffer, const index::Expr& idx,
                                    const OpsValue& value) {
  const Emitted& e = values_.at(static_cast<size_t>(value.id));
  const index::Expr simplified = access_index(buffer, idx);
  const std::string p = ptr(buffer);
  const bool is_bool = value.dtype == DType::Bool;
  if (!config_.vectorized || !index::depends_on(simplified, config_.vector_var)) {
    if (e.vector) throw std::logic_error("vector value stored at a scalar position of " + buffer);
    return p + "[" + index_cpp(simplified) + "] = " + e.name + ";\n";
  }
  const std::string v = as_vector(value);
  const auto stride = index::stride(simplified, config_.vector_var, config_.ranges);
  const std::string count = config_.full_vector ? "" : ", " + config_.count;
  if (stride && *stride == 1) {
    return v + (is_bool ? ".store_bytes(" : ".store(") + p + " + " + index_cpp(simplified) + count +
           ");\n";
  }
  // Scatter lane by lane (each lane writes its own iteration's element).
  const std::string type = is_bool ? kMask : kVec;
  const std::string lanes = config_.full_vector ? type + "::size()" : config_.count;
  return "{\n" + std::string(is_bool ? "bool" : "float") + " lanes[" + type + "::size()];\n" + v +
         (is_bool ? ".store_bytes(lanes);\n" : ".store(lanes);\n") +
         "for (int64_t lane = 0; lane < " + lanes + "; ++lane) " + p + "[" +
         lane_index_cpp(simplified) + "] = lanes[lane];\n}\n";
}

}  // namespace stax::codegen
