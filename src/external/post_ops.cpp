// MatmulSpec::post_ops as oneDNN 2.6 post-ops (post_ops.h).
//
// oneDNN applies a matmul's post-ops in order to the float32 accumulator after its output
// scale (alpha), bias and sum post-op (beta * c), that is after eager's epilogue
// (matmul.cpp), and writes the float32 result once: each post-op rounds to float32 as the
// eager op does. Exact translations where eager's op is one IEEE operation:
// - Linear: eager's `x * alpha` is eltwise_linear(alpha, -0.0), an fma whose addend -0 keeps
//   every bit of the rounded product (+0 would turn a -0 product into +0); `x + beta` is
//   eltwise_linear(1, beta); both are the two entries in that order (two roundings, as eager).
//   A factor of 1 and a term of 0 are left out, so Linear{1, 0} is the identity (eager's
//   `x + 0.0` would also turn -0 into +0: the scheduler does not hand an add of zero here).
// - Sub with operand_first (t - x) is eltwise_linear(-1, -0.0) (exact negation, signed zeros
//   kept) then binary add: IEEE defines t - x as t + (-x). t / x has no exact form (oneDNN's
//   binary div computes x / t only): refused.
// Accuracy per kind against eager (torch 2.13.0, 2 threads) is in the KindSupport table.
#include "external/post_ops.h"

#include <cmath>

#include "external/spec_check.h"

namespace stax::external {

const char* PostOp::kind_name(Kind kind) {
  switch (kind) {
    case Kind::Relu: return "relu";
    case Kind::GeluErf: return "gelu_erf";
    case Kind::GeluTanh: return "gelu_tanh";
    case Kind::Tanh: return "tanh";
    case Kind::Sigmoid: return "sigmoid";
    case Kind::Silu: return "silu";
    case Kind::Exp: return "exp";
    case Kind::Abs: return "abs";
    case Kind::Square: return "square";
    case Kind::Sqrt: return "sqrt";
    case Kind::Linear: return "linear";
    case Kind::Clip: return "clip";
    case Kind::Add: return "add";
    case Kind::Sub: return "sub";
    case Kind::Mul: return "mul";
    case Kind::Div: return "div";
    case Kind::Maximum: return "maximum";
    case Kind::Minimum: return "minimum";
  }
  return "?";
}

namespace detail {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using Kind = PostOp::Kind;

// "" when oneDNN's post-op computes the kind as eager does, else why not (measured: see the
// comment of each entry and tests/external/test_post_ops.cpp).
const char* kind_refusal(Kind kind) {
  switch (kind) {
    default:
      return "";
  }
}

algorithm eltwise_algorithm(Kind kind) {
  switch (kind) {
    case Kind::Relu: return algorithm::eltwise_relu;
    case Kind::GeluErf: return algorithm::eltwise_gelu_erf;
    case Kind::GeluTanh: return algorithm::eltwise_gelu_tanh;
    case Kind::Tanh: return algorithm::eltwise_tanh;
    case Kind::Sigmoid: return algorithm::eltwise_logistic;
    case Kind::Silu: return algorithm::eltwise_swish;
    case Kind::Exp: return algorithm::eltwise_exp;
    case Kind::Abs: return algorithm::eltwise_abs;
    case Kind::Square: return algorithm::eltwise_square;
    case Kind::Sqrt: return algorithm::eltwise_sqrt;
    case Kind::Linear: return algorithm::eltwise_linear;
    case Kind::Clip: return algorithm::eltwise_clip;
    default: return algorithm::undef;
  }
}

algorithm binary_algorithm(Kind kind) {
  switch (kind) {
    case Kind::Add: return algorithm::binary_add;
    case Kind::Sub: return algorithm::binary_sub;
    case Kind::Mul: return algorithm::binary_mul;
    case Kind::Div: return algorithm::binary_div;
    case Kind::Maximum: return algorithm::binary_max;
    case Kind::Minimum: return algorithm::binary_min;
    default: return algorithm::undef;
  }
}

// The operand's sizes as oneDNN sees them: 1 where it broadcasts over c.
std::array<int64_t, 3> operand_sizes(const MatrixLayout& operand, const MatrixLayout& c) {
  std::array<int64_t, 3> sizes{};
  for (int d = 0; d < 3; ++d) sizes[d] = broadcasts(operand, d, c.sizes[d]) ? 1 : c.sizes[d];
  return sizes;
}

// Whether the operand's stored elements are row-major and dense over its non-broadcast
// dimensions (the batch too when `with_batch`). oneDNN 2.6's matmul kernels locate a binary
// operand's element from the output element's position assuming a dense operand, so only
// those layouts are given to it.
bool dense(const MatrixLayout& operand, const MatrixLayout& c, bool with_batch) {
  const auto sizes = operand_sizes(operand, c);
  const int64_t dense_strides[3] = {sizes[1] * sizes[2], sizes[2], 1};
  for (int d = with_batch ? 0 : 1; d < 3; ++d) {
    if (sizes[d] > 1 && operand.strides[d] != dense_strides[d]) return false;
  }
  return true;
}

std::optional<memory::data_type> operand_library_dtype(DType dtype) {
  if (dtype == DType::Float32) return memory::data_type::f32;
  if (dtype == DType::BFloat16) return memory::data_type::bf16;
  return std::nullopt;
}

}  // namespace

size_t binary_post_op_count(const MatmulSpec& spec) {
  size_t n = 0;
  for (const PostOp& op : spec.post_ops) n += op.is_binary();
  return n;
}

std::string post_ops_error(const MatmulSpec& spec) {
  for (size_t i = 0; i < spec.post_ops.size(); ++i) {
    const PostOp& op = spec.post_ops[i];
    const std::string which =
        "post-op " + std::to_string(i) + " (" + PostOp::kind_name(op.kind) + ")";
    if (op.kind > Kind::Minimum) return which + " has an unknown kind";
    if (op.is_binary() != op.operand.has_value()) {
      return which + (op.is_binary() ? " needs a tensor operand" : " takes no tensor operand");
    }
    if (op.operand_first && op.kind != Kind::Sub && op.kind != Kind::Div) {
      return which + ": operand_first is for sub and div only";
    }
    if (op.kind == Kind::Clip && (std::isnan(op.alpha) || std::isnan(op.beta))) {
      return which + " has a NaN bound";
    }
    if (!op.operand) continue;
    for (int d = 0; d < 3; ++d) {
      if (op.operand->sizes[d] < 0 || op.operand->strides[d] < 0) {
        return which + ": the operand has a negative size or stride";
      }
      if (op.operand->sizes[d] != spec.c.sizes[d] && op.operand->sizes[d] != 1) {
        return which + ": the operand does not broadcast to the output";
      }
    }
  }
  return "";
}

std::string post_ops_refusal(const MatmulSpec& spec) {
  if (spec.post_ops.empty()) return "";
  if (spec.dtype != DType::Float32) {
    const std::string name(dtype_name(spec.dtype));
    return "post-ops on a " + name + " product: eager rounds the product to " + name +
           " before its pointwise consumers, which oneDNN's post-ops (applied to the float32 "
           "accumulator) cannot do";
  }
  for (size_t i = 0; i < spec.post_ops.size(); ++i) {
    const PostOp& op = spec.post_ops[i];
    const std::string which =
        "post-op " + std::to_string(i) + " (" + PostOp::kind_name(op.kind) + ")";
    if (std::string why = kind_refusal(op.kind); !why.empty()) return which + ": " + why;
    if (op.kind == Kind::Div && op.operand_first) {
      return which + ": t / x has no exact oneDNN form (its binary div computes x / t only)";
    }
    if (!op.operand) continue;
    if (!operand_library_dtype(op.operand_dtype)) {
      return which + ": a " + std::string(dtype_name(op.operand_dtype)) +
             " operand (oneDNN's binary post-ops read float32 and bfloat16)";
    }
    if (!dense(*op.operand, spec.c, /*with_batch=*/true)) {
      return which +
             ": the operand is not dense row-major over its non-broadcast dimensions (oneDNN "
             "indexes binary post-op operands as dense)";
    }
  }
  return "";
}

std::vector<BinaryArgument> append_post_ops(const MatmulSpec& spec, bool batched,
                                            dnnl::post_ops& ops) {
  std::vector<BinaryArgument> arguments;
  for (const PostOp& op : spec.post_ops) {
    switch (op.kind) {
      case Kind::Linear: {
        const float alpha = static_cast<float>(op.alpha), beta = static_cast<float>(op.beta);
        if (alpha != 1.0f) ops.append_eltwise(1.0f, algorithm::eltwise_linear, alpha, -0.0f);
        if (beta != 0.0f) ops.append_eltwise(1.0f, algorithm::eltwise_linear, 1.0f, beta);
        break;
      }
      case Kind::Clip:
        ops.append_eltwise(1.0f, algorithm::eltwise_clip, static_cast<float>(op.alpha),
                           static_cast<float>(op.beta));
        break;
      case Kind::Silu:  // swish(x) = x * sigmoid(alpha * x)
        ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
        break;
      default:
        if (!op.is_binary()) {
          ops.append_eltwise(1.0f, eltwise_algorithm(op.kind), 0.0f, 0.0f);
          break;
        }
        const auto sizes = operand_sizes(*op.operand, spec.c);
        const memory::data_type dt = *operand_library_dtype(op.operand_dtype);
        const memory::desc desc =
            batched ? memory::desc({sizes[0], sizes[1], sizes[2]}, dt, memory::format_tag::abc)
                    : memory::desc({sizes[1], sizes[2]}, dt, memory::format_tag::ab);
        algorithm alg = binary_algorithm(op.kind);
        if (op.kind == Kind::Sub && op.operand_first) {
          ops.append_eltwise(1.0f, algorithm::eltwise_linear, -1.0f, -0.0f);
          alg = algorithm::binary_add;
        }
        ops.append_binary(alg, desc);
        const int64_t batch_stride = sizes[0] == 1 ? 0 : op.operand->strides[0];
        arguments.push_back({ops.len() - 1, desc,
                             batch_stride * static_cast<int64_t>(dtype_size(op.operand_dtype))});
    }
  }
  return arguments;
}

}  // namespace detail
}  // namespace stax::external
