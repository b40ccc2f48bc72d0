// Every op, compiled vs the eager oracle, at sizes that hit every vector tail (W = 8 for
// AVX2, 16 for AVX-512): 1, 7, 15, 16, 17, 33, 1000, 2053 (large enough for two threads to
// split the loop) and [3, 17], [5, 33]. One graph per shape holds all pointwise ops as
// separate outputs; another holds the reductions.
#include <gtest/gtest.h>

#include "codegen_test_util.h"

namespace stax::codegen_test {
namespace {

const std::vector<std::vector<int64_t>>& shapes() {
  static const std::vector<std::vector<int64_t>> kShapes = {
      {1}, {7}, {15}, {16}, {17}, {33}, {1000}, {2053}, {3, 17}, {5, 33}};
  return kShapes;
}

// All pointwise ops of the text format, each a graph output.
std::string pointwise_graph(const std::vector<int64_t>& shape) {
  const std::string t = "f32" + dims(shape);
  return "def pointwise(x: " + t + ", y: " + t + R"():
    o_abs = abs(x)
    p = add(o_abs, 0.5)
    q = abs(y)
    d = add(q, 0.5)
    o_neg = neg(x)
    o_exp = exp(x)
    o_log = log(p)
    o_sqrt = sqrt(p)
    o_rsqrt = rsqrt(p)
    o_tanh = tanh(x)
    o_sigmoid = sigmoid(x)
    o_relu = relu(x)
    o_pow2 = pow(x, 2.0)
    o_pow3 = pow(x, 3.0)
    o_pow_half = pow(p, 0.5)
    o_pow_frac = pow(p, 1.7)
    o_pow_neg = pow(p, -1.5)
    o_pow_int = pow(x, 2)
    o_pow_one = pow(x, 1.0)
    o_pow_zero = pow(x, 0.0)
    o_pow_m1 = pow(p, -1.0)
    o_pow_m2 = pow(p, -2.0)
    o_pow_mhalf = pow(p, -0.5)
    o_add = add(x, y)
    o_sub = sub(x, y)
    o_sub_alpha = sub(x, y, alpha=2.0)
    o_add_alpha = add(x, y, alpha=-0.5)
    o_mul = mul(x, y)
    o_div = div(x, d)
    o_max = maximum(x, y)
    o_min = minimum(x, y)
    o_gt = gt(x, y)
    o_lt = lt(x, y)
    o_ge = ge(x, y)
    o_le = le(x, y)
    o_eq = eq(x, y)
    o_ne = ne(x, y)
    o_where = where(o_gt, x, y)
    o_add_s = add(x, 2.0)
    o_rsub_s = sub(1.0, x)
    o_mul_s = mul(x, -3.0)
    o_rdiv_s = div(1.0, d)
    o_gt_s = gt(x, 0.0)
    o_le_s = le(y, 0.25)
    o_where_s = where(o_le_s, 0.0, y)
    o_where_ss = where(o_gt_s, 1.0, -1.0)
    o_add_i = add(x, 1)
    o_mul_i = mul(3, x)
    o_sub_s_alpha = sub(x, 0.25, alpha=4.0)
    return o_abs, o_neg, o_exp, o_log, o_sqrt, o_rsqrt, o_tanh, o_sigmoid, o_relu, o_pow2, o_pow3, o_pow_half, o_pow_frac, o_pow_neg, o_pow_int, o_pow_one, o_pow_zero, o_pow_m1, o_pow_m2, o_pow_mhalf, o_add, o_sub, o_sub_alpha, o_add_alpha, o_mul, o_div, o_max, o_min, o_gt, o_lt, o_ge, o_le, o_eq, o_ne, o_where, o_add_s, o_rsub_s, o_mul_s, o_rdiv_s, o_gt_s, o_le_s, o_where_s, o_where_ss, o_add_i, o_mul_i, o_sub_s_alpha
)";
}

// Reductions of an input and of a pointwise expression, over the last dim, dim 0 and all dims,
// with and without keepdim.
std::string reduction_graph(const std::vector<int64_t>& shape) {
  const std::string t = "f32" + dims(shape);
  std::string body = "def reductions(x: " + t + ", y: " + t + R"():
    s_last = sum(x, dim=[-1])
    s_last_k = sum(x, dim=[-1], keepdim=True)
    m_last = mean(x, dim=[-1])
    mx_last = amax(x, dim=[-1])
    mn_last_k = amin(x, dim=[-1], keepdim=True)
    s_all = sum(x)
    m_all_k = mean(x, keepdim=True)
    xy = mul(x, y)
    dot = sum(xy, dim=[-1])
    e = exp(y)
    mx_exp = amax(e, dim=[-1], keepdim=True)
    m_exp = mean(e, dim=[-1])
)";
  std::string outs = "s_last, s_last_k, m_last, mx_last, mn_last_k, s_all, m_all_k, dot, mx_exp, m_exp";
  if (shape.size() == 2) {
    body += R"(    s_0 = sum(x, dim=[0])
    s_0_k = sum(x, dim=[0], keepdim=True)
    m_0 = mean(x, dim=[0])
    mx_0 = amax(x, dim=[0], keepdim=True)
    mn_0 = amin(x, dim=[0])
    mx_all = amax(x, dim=[0, 1])
    mn_all_k = amin(x, dim=[0, 1], keepdim=True)
    m_01 = mean(x, dim=[0, 1])
    z = add(x, y)
    s_z0 = sum(z, dim=[0])
)";
    outs += ", s_0, s_0_k, m_0, mx_0, mn_0, mx_all, mn_all_k, m_01, s_z0";
  }
  return body + "    return " + outs + "\n";
}

// y shares every third element with x, so eq/ne/ge/le also see equal operands.
Tensor partner(const Tensor& x, uint64_t seed) {
  Tensor y = random_f32(x.sizes(), seed);
  for (int64_t p = 0; p < y.numel(); p += 3) y.set_flat(p, x.get_flat(p));
  return y;
}

class Ops : public CodegenTest {};

TEST_P(Ops, PointwiseAtEveryVectorTail) {
  std::vector<Case> cases;
  uint64_t seed = 100;
  for (const auto& shape : shapes()) {
    Tensor x = random_f32(shape, seed++);
    Tensor y = partner(x, seed++);
    cases.push_back(make_case("pointwise " + shape_tag(shape), pointwise_graph(shape), {x, y}));
  }
  check_all(cases);
}

TEST_P(Ops, ReductionsAtEveryVectorTail) {
  std::vector<Case> cases;
  uint64_t seed = 200;
  for (const auto& shape : shapes()) {
    Tensor x = random_f32(shape, seed++);
    Tensor y = random_f32(shape, seed++);
    cases.push_back(make_case("reductions " + shape_tag(shape), reduction_graph(shape), {x, y}));
  }
  check_all(cases);
}

INSTANTIATE_TEST_SUITE_P(Levels, Ops, all_params(), param_name);

}  // namespace
}  // namespace stax::codegen_test
