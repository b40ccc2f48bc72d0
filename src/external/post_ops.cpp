// MatmulSpec::post_ops as oneDNN 2.6 post-ops (post_ops.h).
//
// oneDNN applies a matmul's post-ops in order to the float32 accumulator after its output
// scale (alpha), bias and sum post-op (beta * c), that is after eager's epilogue
// (matmul.cpp), and writes the float32 result once: each post-op rounds to float32 as the
// eager op does. Exact translations where eager's op is one IEEE operation:
// - Linear: eager's `x * alpha` and `x + beta` are binary mul and add post-ops with a scalar
//   constant the plan holds (two roundings, in that order, as eager's two ops). Not oneDNN's
//   eltwise linear: it is an fma (one rounding), and oneDNN 2.6's JIT kernels give every
//   eltwise post-op of one algorithm the alpha and beta of the first (measured: linear(2)
//   then linear(3) computed 4x; clip(0,1) then clip(2,4) computed clip(0,1)) -- refused below
//   for any algorithm used twice with different parameters. A factor of 1 and a term of 0
//   are left out, so Linear{1, 0} is the identity (eager's `x + 0.0` would also turn -0 into
//   +0: the scheduler does not hand an add of zero here).
// - Sub with operand_first (t - x) is a binary mul by the constant -1 (exact, signed zeros
//   kept) then a binary add: IEEE defines t - x as t + (-x). t / x has no exact form
//   (oneDNN's binary div computes x / t only): refused.
// Which kinds oneDNN computes as eager does, measured: kind_refusal.
#include "external/post_ops.h"

#include <cmath>
#include <tuple>

#include "external/spec_check.h"

namespace stax::external {

const char* PostOp::kind_name(Kind kind) {
  switch (kind) {
    case Kind::Relu:
      return "relu";
    case Kind::GeluErf:
      return "gelu_erf";
    case Kind::GeluTanh:
      return "gelu_tanh";
    case Kind::Tanh:
      return "tanh";
    case Kind::Sigmoid:
      return "sigmoid";
    case Kind::Silu:
      return "silu";
    case Kind::Exp:
      return "exp";
    case Kind::Abs:
      return "abs";
    case Kind::Square:
      return "square";
    case Kind::Sqrt:
      return "sqrt";
    case Kind::Linear:
      return "linear";
    case Kind::Clip:
      return "clip";
    case Kind::Add:
      return "add";
    case Kind::Sub:
      return "sub";
    case Kind::Mul:
      return "mul";
    case Kind::Div:
      return "div";
    case Kind::Maximum:
      return "maximum";
    case Kind::Minimum:
      return "minimum";
  }
  return "?";
}

namespace detail {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using Kind = PostOp::Kind;

constexpr size_t kMaxLibraryPostOps = 32;

// "" when oneDNN's post-op computes the kind as eager does, else why not. Measured with
// bench/gemm/post_ops_vs_eager.py on this machine (oneDNN 2.6.3's AVX-512 matmul kernels,
// torch 2.13.0) on 2^20 random float32 bit patterns plus specials and a dense sweep of
// [-110, 110]; "ulp" is the error in units of the last place of the exact (float64) result,
// counted where that result is a normal float32. Accepted:
// - abs, square, linear (binary mul and add with a constant), add, sub, mul, div: bit for bit
//   what eager's ops give, NaN, inf and signed zeros included (one IEEE operation each).
// - sqrt: correctly rounded (0.5 ulp; eager's is within 0.553, so 0.3% of the results on a
//   linear layer's outputs differ from eager's by 1 ulp, eager's being the less accurate).
// - tanh: within 1.21 ulp (eager's, Sleef's u10 class: 0.564), never more than 1 ulp worse
//   than eager at the same input; NaN, inf and signed zeros as eager. The tests hold it to
//   2 ulp: eager's accuracy class (1 ulp) plus the 1 ulp by which two results each within it
//   can differ.
// Refused (each is exact or accurate on ordinary values, but not everywhere):
const char* kind_refusal(Kind kind) {
  switch (kind) {
    case Kind::Relu:
      return "oneDNN 2.6's relu post-op gives 0 for NaN and +0 for -0 (eager: NaN, -0)";
    case Kind::Clip:
      return "oneDNN 2.6's clip post-op gives its lower bound for NaN and +0 for -0 at a "
             "bound of 0 (eager's clamp: NaN, -0)";
    case Kind::Maximum:
    case Kind::Minimum:
      return "oneDNN 2.6's binary max/min returns the tensor operand where the product is NaN "
             "(eager's maximum/minimum propagate NaN)";
    case Kind::GeluErf:
      return "oneDNN 2.6's gelu_erf post-op is up to 1.8e3 ulp from the exact value where "
             "eager's is within 4 (x < -3), and gives inf for gelu(inf) (eager: NaN), finite "
             "values where eager overflows, +0 where eager gives -0";
    case Kind::GeluTanh:
      return "oneDNN 2.6's gelu_tanh post-op is up to 7.9e3 ulp from the exact value where "
             "eager's is within 4 (its 1 + tanh cancels for x < -3), and gives other "
             "special values than eager";
    case Kind::Sigmoid:
    case Kind::Silu:
    case Kind::Exp:
      return "oneDNN 2.6's exp-based post-ops (logistic, swish, exp) flush to 0 for x < -87.3 "
             "results that eager gives as normal floats (sigmoid(-87) = 1.6e-38, silu(-87) = "
             "-1.4e-36), and its exp gives inf for NaN";
    default:
      return "";
  }
}

algorithm eltwise_algorithm(Kind kind) {
  switch (kind) {
    case Kind::Relu:
      return algorithm::eltwise_relu;
    case Kind::GeluErf:
      return algorithm::eltwise_gelu_erf;
    case Kind::GeluTanh:
      return algorithm::eltwise_gelu_tanh;
    case Kind::Tanh:
      return algorithm::eltwise_tanh;
    case Kind::Sigmoid:
      return algorithm::eltwise_logistic;
    case Kind::Silu:
      return algorithm::eltwise_swish;
    case Kind::Exp:
      return algorithm::eltwise_exp;
    case Kind::Abs:
      return algorithm::eltwise_abs;
    case Kind::Square:
      return algorithm::eltwise_square;
    case Kind::Sqrt:
      return algorithm::eltwise_sqrt;
    case Kind::Linear:
      return algorithm::eltwise_linear;
    case Kind::Clip:
      return algorithm::eltwise_clip;
    default:
      return algorithm::undef;
  }
}

algorithm binary_algorithm(Kind kind) {
  switch (kind) {
    case Kind::Add:
      return algorithm::binary_add;
    case Kind::Sub:
      return algorithm::binary_sub;
    case Kind::Mul:
      return algorithm::binary_mul;
    case Kind::Div:
      return algorithm::binary_div;
    case Kind::Maximum:
      return algorithm::binary_max;
    case Kind::Minimum:
      return algorithm::binary_min;
    default:
      return algorithm::undef;
  }
}

// The operand's sizes as oneDNN sees them: 1 where it broadcasts over c.
std::array<int64_t, 3> operand_sizes(const MatrixLayout& operand, const MatrixLayout& c) {
  std::array<int64_t, 3> sizes{};
  for (int d = 0; d < 3; ++d) sizes[d] = broadcasts(operand, d, c.sizes[d]) ? 1 : c.sizes[d];
  return sizes;
}

// Whether the operand's stored elements are row-major and dense over its non-broadcast
// dimensions (the batch too when `with_batch`). The plan describes an operand to oneDNN as
// dense (format tags ab / abc); a strided one could be described by its strides, but whether
// oneDNN 2.6's fast kernels honour those is not tested, so it is refused instead.
bool dense(const MatrixLayout& operand, const MatrixLayout& c, bool with_batch) {
  const auto sizes = operand_sizes(operand, c);
  const int64_t dense_strides[3] = {sizes[1] * sizes[2], sizes[2], 1};
  for (int d = with_batch ? 0 : 1; d < 3; ++d) {
    if (sizes[d] > 1 && operand.strides[d] != dense_strides[d]) return false;
  }
  return true;
}

// Float32 operands only: eager's float32 + bfloat16 is exact in float32 too, but oneDNN's
// bfloat16 operands are untested here (the scheduler hands float32 graphs to post-ops).
std::optional<memory::data_type> operand_library_dtype(DType dtype) {
  if (dtype == DType::Float32) return memory::data_type::f32;
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
             " operand (only float32 operands are given to oneDNN)";
    }
    if (!dense(*op.operand, spec.c, /*with_batch=*/true)) {
      return which +
             ": the operand is not dense row-major over its non-broadcast dimensions (oneDNN "
             "indexes binary post-op operands as dense)";
    }
  }
  // oneDNN 2.6 takes at most 32 post-ops (measured: the 33rd cannot be appended), the sum
  // post-op of a bias copied into c included (counted whenever there is a bias with beta != 0,
  // though a row bias with alpha == beta == 1 goes to the library's bias argument instead).
  size_t library_count = spec.bias && spec.beta != 0.0 ? 1 : 0;
  for (const PostOp& op : spec.post_ops) {
    if (op.kind == Kind::Linear) {
      library_count +=
          (static_cast<float>(op.alpha) != 1.0f) + (static_cast<float>(op.beta) != 0.0f);
    } else {
      library_count += op.kind == Kind::Sub && op.operand_first ? 2 : 1;
    }
  }
  if (library_count > kMaxLibraryPostOps) {
    return std::to_string(library_count) +
           " oneDNN post-ops (a Linear with a factor and a "
           "term and t - x are two each, a bias summed into c one): oneDNN 2.6 takes at most " +
           std::to_string(kMaxLibraryPostOps);
  }
  // oneDNN 2.6's JIT kernels use the parameters of the first eltwise post-op of an algorithm
  // for every later one (see the top of this file).
  dnnl::post_ops ops;
  append_post_ops(spec, false, ops);
  std::vector<std::tuple<algorithm, float, float>> seen;
  for (int i = 0; i < ops.len(); ++i) {
    if (ops.kind(i) != dnnl::primitive::kind::eltwise) continue;
    float scale = 0, alpha = 0, beta = 0;
    algorithm alg = algorithm::undef;
    ops.get_params_eltwise(i, scale, alg, alpha, beta);
    for (const auto& [seen_alg, seen_alpha, seen_beta] : seen) {
      if (seen_alg == alg && (seen_alpha != alpha || seen_beta != beta)) {
        return "two eltwise post-ops of one oneDNN algorithm with different parameters "
               "(oneDNN 2.6's kernels apply the first one's to both)";
      }
    }
    seen.emplace_back(alg, alpha, beta);
  }
  return "";
}

std::vector<BinaryArgument> append_post_ops(const MatmulSpec& spec, bool batched,
                                            dnnl::post_ops& ops) {
  std::vector<BinaryArgument> arguments;
  const memory::desc scalar =
      batched ? memory::desc({1, 1, 1}, memory::data_type::f32, memory::format_tag::abc)
              : memory::desc({1, 1}, memory::data_type::f32, memory::format_tag::ab);
  auto append_constant = [&](algorithm alg, float value) {
    ops.append_binary(alg, scalar);
    BinaryArgument argument;
    argument.library_index = ops.len() - 1;
    argument.desc = scalar;
    argument.constant = value;
    arguments.push_back(argument);
  };
  int operand = 0;
  for (const PostOp& op : spec.post_ops) {
    if (op.kind == Kind::Linear) {
      const float alpha = static_cast<float>(op.alpha), beta = static_cast<float>(op.beta);
      if (alpha != 1.0f) append_constant(algorithm::binary_mul, alpha);
      if (beta != 0.0f) append_constant(algorithm::binary_add, beta);
    } else if (op.kind == Kind::Clip) {
      ops.append_eltwise(1.0f, algorithm::eltwise_clip, static_cast<float>(op.alpha),
                         static_cast<float>(op.beta));
    } else if (op.kind == Kind::Silu) {  // swish(x) = x * sigmoid(alpha * x)
      ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
    } else if (!op.is_binary()) {
      ops.append_eltwise(1.0f, eltwise_algorithm(op.kind), 0.0f, 0.0f);
    } else {
      const auto sizes = operand_sizes(*op.operand, spec.c);
      const memory::data_type dt = *operand_library_dtype(op.operand_dtype);
      const memory::desc desc =
          batched ? memory::desc({sizes[0], sizes[1], sizes[2]}, dt, memory::format_tag::abc)
                  : memory::desc({sizes[1], sizes[2]}, dt, memory::format_tag::ab);
      algorithm alg = binary_algorithm(op.kind);
      if (op.kind == Kind::Sub && op.operand_first) {  // t - x = (x * -1) + t
        append_constant(algorithm::binary_mul, -1.0f);
        alg = algorithm::binary_add;
      }
      ops.append_binary(alg, desc);
      BinaryArgument argument;
      argument.library_index = ops.len() - 1;
      argument.desc = desc;
      argument.operand = operand++;
      argument.batch_stride_bytes = (sizes[0] == 1 ? 0 : op.operand->strides[0]) *
                                    static_cast<int64_t>(dtype_size(op.operand_dtype));
      arguments.push_back(argument);
    }
  }
  return arguments;
}

}  // namespace detail
}  // namespace stax::external
