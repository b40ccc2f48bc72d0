// Tests of the text format: the shared examples parse with the expected types, printing is
// canonical, and print/parse round-trips for the examples and for a program using every op
// and every literal kind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/op_schema.h"
#include "ir/text_format.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using testing::type;

std::string example(const char* name) {
  return std::string(STAX_EXAMPLES_DIR) + "/" + name;
}

const TensorType& type_of(const Graph& g, const std::string& name) {
  return g.value(*g.find_value(name)).type;
}

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> names;
  for (ValueRef r : g.outputs()) names.push_back(g.value(r).name);
  return names;
}

void expect_round_trip(const Graph& g) {
  const std::string text = print_graph(g);
  Graph again = parse_graph(text, "printed.stax");
  EXPECT_TRUE(again == g) << text;
  EXPECT_EQ(print_graph(again), text);
}

TEST(ExamplesTest, Example_1_1) {
  Graph g = parse_graph_file(example("example_1_1.stax"));
  EXPECT_EQ(g.name(), "example_1_1");
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(type_of(g, "x"), type(DType::Float32, {64, 128}));
  EXPECT_EQ(type_of(g, "y"), type(DType::Float32, {64, 128}));
  EXPECT_EQ(type_of(g, "p"), type(DType::Float32, {64, 128}));
  EXPECT_EQ(type_of(g, "s"), type(DType::Float32, {64}));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op, "mul");
  EXPECT_EQ(g.nodes()[1].op, "sum");
  EXPECT_EQ(g.nodes()[1].args[1], Arg(std::vector<int64_t>{-1}));
  EXPECT_EQ(output_names(g), (std::vector<std::string>{"s"}));
  EXPECT_EQ(print_graph(g),
            "def example_1_1(x: f32[64, 128], y: f32[64, 128]):\n"
            "    p = mul(x, y)\n"
            "    s = sum(p, dim=[-1])\n"
            "    return s\n");
  expect_round_trip(g);
}

TEST(ExamplesTest, Example_7_1) {
  Graph g = parse_graph_file(example("example_7_1.stax"));
  EXPECT_EQ(type_of(g, "s"), type(DType::Float32, {64, 1}));
  EXPECT_EQ(type_of(g, "y"), type(DType::Float32, {64, 128}));
  EXPECT_EQ(g.nodes()[0].args[2], Arg(true));
  EXPECT_EQ(output_names(g), (std::vector<std::string>{"y"}));
  EXPECT_EQ(print_graph(g),
            "def example_7_1(x: f32[64, 128]):\n"
            "    s = sum(x, dim=[-1], keepdim=True)\n"
            "    y = div(x, s)\n"
            "    return y\n");
  expect_round_trip(g);
}

TEST(ExamplesTest, Example_7_2) {
  Graph g = parse_graph_file(example("example_7_2.stax"));
  EXPECT_EQ(type_of(g, "e"), type(DType::Float32, {64, 128}));
  EXPECT_EQ(type_of(g, "s"), type(DType::Float32, {64}));
  EXPECT_EQ(type_of(g, "m"), type(DType::Float32, {64}));
  EXPECT_EQ(g.nodes()[2].op, "amax");
  EXPECT_EQ(output_names(g), (std::vector<std::string>{"s", "m"}));
  expect_round_trip(g);
}

const char* kEveryOp = R"(# Every op and every literal kind.
def every_op(x: f32[2, 3], y: f32[3], i: i64[2, 3], b: bool[2, 3],
             h: f16[4, 1, 3] strides=[1, 4, 4], z: f32[], e: bf16[0]):  # inputs
    a0 = add(x, y, alpha=2)
    a1 = add(x, 1.5)
    a2 = add(2, i)
    a3 = sub(x, y, alpha=-0.5)
    a4 = mul(x, True)
    a5 = div(i, 3)
    a6 = div(x, y, rounding_mode=None)
    a7 = maximum(x, y)
    a8 = minimum(i, x)
    a9 = mul(x, 1e-3)
    a10 = add(x, -1)
    a11 = mul(-2.5e+10, x)
    a12 = add(x, .25)
    a13 = sub(x, 0.1)
    a14 = mul(x, 3.)

    c0 = gt(x, y)
    c1 = lt(x, 0)
    c2 = ge(i, 1e-3)
    c3 = le(x, -inf)
    c4 = eq(x, nan)
    c5 = ne(i, inf)
    c6 = eq(b, False)
    u0 = neg(x)
    u1 = abs(i)
    u2 = exp(i)
    u3 = log(x)
    u4 = sqrt(x)
    u5 = rsqrt(x)
    u6 = tanh(x)
    u7 = sigmoid(b)
    u8 = relu(x)
    p0 = pow(x, 2)
    p1 = pow(x, 0.5)
    w0 = where(b, x, 0.0)
    w1 = where(b, 1, 2)
    w2 = where(b, x, y)
    r0 = sum(x)
    r1 = sum(i, dim=[0, 1], keepdim=True, dtype='float64')
    r2 = mean(x, dim=-1)
    r3 = amax(x, dim=[1])
    r4 = amin(x, [0], True)
    r5 = sum(e, dim=[], keepdim=False, dtype=None)
    r6 = prod(i, 1, keepdim=True, dtype='f32')
    r7 = argmax(x)
    r8 = argmin(i, dim=[0], keepdim=True)
    r9 = any(b, [0, 1])
    r10 = all(i)
    r11 = var(x, 1, correction=0.5, keepdim=True)
    r12 = std(h)
    r13 = logsumexp(x, dim=-1)
    r14, r15 = var_mean(x, [1], correction=0)
    v0 = reshape(x, [3, -1])
    v1 = view(x, [6])
    v2 = permute(h, [2, 0, 1])
    v3 = transpose(x, 0, -1)
    v4 = unsqueeze(x, -1)
    v5 = squeeze(h)
    v6 = squeeze(h, 1)
    v7 = expand(y, [4, 2, -1], implicit=False)
    v8 = expand(z, size=[5], implicit=True)
    k0 = clone(x, memory_format="preserve_format")
    j = select(i, 0, 0)
    m0 = slice(x, 1, -2, None, 2)
    m1 = select(x, 0, -1)
    m2 = narrow(x, 1, 1, 2)
    m3, m4 = split(x, 2, dim=1)
    m5, m6 = split_with_sizes(x, [1, 1])
    m7 = as_strided(x, [2, 2], [1, 2], storage_offset=1)
    m8 = cat([x, x, e], 0)
    m9 = stack([x, x], dim=-1)
    n0 = constant_pad_nd(x, [1, -1, 0, 2], 1.5)
    n1 = flip(x, [0, -1])
    n2 = roll(x, [1], [1])
    n3 = index_select(x, 1, j)
    n4 = gather(x, 1, i)
    n5 = embedding(x, j)
    n6 = index(x, [None, j])
    n7 = slice_scatter(x, m0, 1, -2, None, 2)
    n8 = select_scatter(x, m1, 0, -1)
    n9 = index_put(x, [j], y, True)
    n10 = index_add(x, 1, j, x, alpha=2)
    n14 = scatter_reduce(x, 1, i, x, 'amax', include_self=False)
    n11 = scatter(x, 1, i, x)
    n12 = scatter(x, 0, i, 1.5)
    n13 = scatter_add(x, 1, i, x)
    k1 = contiguous(v3)
    k2 = contiguous(v3, memory_format=None)
    s0 = add(z, x)
    q0 = remainder(i, 3)
    q1 = fmod(x, y)
    q2 = floor_divide(-7, i)
    q3 = fmax(x, y)
    q4 = fmin(x, y)
    q5 = atan2(i, x)
    q6 = copysign(x, -1)
    q7 = hypot(x, y)
    q8 = logical_and(x, b)
    q9 = logical_or(i, b)
    q10 = logical_xor(b, b)
    q11 = logical_not(x)
    q12 = bitwise_and(i, 3)
    q13 = bitwise_or(b, b)
    q14 = bitwise_xor(i, i)
    q15 = bitwise_not(b)
    q16 = bitwise_left_shift(i, 2)
    q17 = bitwise_right_shift(1, i)
    q18 = _to_copy(x, dtype='bf16')
    q19 = convert_element_type(i, 'float16')
    q20 = pow(x, y)
    q21 = pow(2, i)
    q22 = div(i, 2, rounding_mode='floor')
    t0 = exp2(x)
    t1 = expm1(x)
    t2 = log2(x)
    t3 = log10(x)
    t4 = log1p(x)
    t5 = sin(x)
    t6 = cos(x)
    t7 = tan(x)
    t8 = asin(x)
    t9 = acos(x)
    t10 = atan(x)
    t11 = sinh(x)
    t12 = cosh(x)
    t13 = asinh(x)
    t14 = acosh(x)
    t15 = atanh(x)
    t16 = erf(x)
    t17 = erfc(x)
    t18 = erfinv(x)
    t19 = reciprocal(i)
    t20 = floor(x)
    t21 = ceil(i)
    t22 = trunc(x)
    t23 = sign(b)
    t24 = round(x, decimals=-2)
    t25 = frac(h)
    t26 = isnan(x)
    t27 = isinf(i)
    t28 = isfinite(e)
    t29 = nan_to_num(x, nan=1.5, neginf=-1)
    pw0 = silu(x)
    pw1 = mish(x)
    pw2 = hardsigmoid(x)
    pw3 = hardswish(x)
    pw4 = gelu(x, approximate='tanh')
    pw5 = softplus(x, beta=2, threshold=10.5)
    pw6 = leaky_relu(x, 0.2)
    pw7 = elu(x, alpha=1.5, scale=2, input_scale=0.5)
    pw8 = hardtanh(i, min_val=-2, max_val=2)
    pw9 = clamp(x, min=0.5)
    pw10 = clamp(i, max=y)
    pw11 = clamp(x, -1, y)
    pw12 = clamp_min(x, y)
    pw13 = clamp_max(i, 2)
    pw14 = lerp(x, y, 0.25)
    pw15 = lerp(x, x, y)
    fa0 = full([2, 3], 1.5)
    fa1 = zeros([2], dtype='i32')
    fa2 = ones([])
    fa3 = full_like(x, 2)
    fa4 = zeros_like(i, dtype='f64')
    fa5 = ones_like(b)
    fa6 = fill(x, -1)
    fa7 = scalar_tensor(3)
    fa8 = arange(0, 5, 2)
    fa9 = iota(4, start=1, step=2, dtype='i16')
    # issue 14, point 3: contractions
    mm0 = mm(x, n5)
    mt = transpose(m9, 1, 2)
    mm1 = bmm(m9, mt)
    mm2 = addmm(y, x, n5, beta=0.5, alpha=-2)
    mm3 = baddbmm(y, m9, mt, alpha=3)
    # issue 15: convolution
    cx = reshape(x, [1, 2, 3])
    cb = reshape(z, [1])
    cv0 = convolution(cx, cx, None, [1], [0], [1], False, [0], 1)
    cv1 = convolution(cx, cx, cb, [2], [1], [1], False, [0], 1)
    cg0, cg1, cg2 = convolution_backward(cv0, cx, cx, None, [1], [0], [1], False, [0], 1, [True, False, True])
    # pooling
    px = reshape(x, [1, 2, 3])
    pv, pi = max_pool2d_with_indices(px, [2, 2], [1, 1], 0, 1, True)
    pa = avg_pool2d(px, 2, padding=1, divisor_override=3)
    pd = _adaptive_avg_pool2d(px, [3, 2])
    pgv = max_pool2d_with_indices_backward(pv, px, [2, 2], [1, 1], 0, 1, True, pi)
    pga = avg_pool2d_backward(pa, px, 2, [], 1, False, True, 3)
    pgd = _adaptive_avg_pool2d_backward(pd, px)
    # issue 15, point 1: attention
    aq = reshape(x, [1, 1, 2, 3])
    ao, al = _scaled_dot_product_flash_attention_for_cpu(aq, aq, aq, 0.0, True, scale=0.5)
    am = narrow(x, 1, 0, 2)
    agq, agk, agv = _scaled_dot_product_flash_attention_for_cpu_backward(ao, aq, aq, aq, ao, al, 0.0, True, attn_mask=am)
    aw = softmax_attention(aq, aq, aq, attn_mask=am, scale=0.5)
    # issue 16, point 7: scans
    sc0 = cumsum(x, 1, dtype='f64')
    sc1 = cumprod(x, -1)
    sc2 = logcumsumexp(x, 0)
    sm0, si0 = cummax(x, 0)
    sm1, si1 = cummin(x, dim=-1)
    # issue 16, point 6: inputs written in place
    cp0 = copy_(i, a0)
    cp1 = mul_(y, 2.0)
    return a0, k1, x, a0
)";

TEST(RoundTripTest, EveryOpAndLiteral) {
  Graph g = parse_graph(kEveryOp, "every.stax");
  // Every registered op is used.
  for (const std::string& op : registered_op_names()) {
    bool used = false;
    for (const Node& n : g.nodes()) used = used || n.op == op;
    EXPECT_TRUE(used) << op;
  }
  EXPECT_EQ(type_of(g, "h"), (TensorType{DType::Float16, {4, 1, 3}, {1, 4, 4}, {}, {}}));
  EXPECT_EQ(type_of(g, "a2"), type(DType::Int64, {2, 3}));
  EXPECT_EQ(type_of(g, "a4"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "a5"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "a8"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "c2"), type(DType::Bool, {2, 3}));
  EXPECT_EQ(type_of(g, "u1"), type(DType::Int64, {2, 3}));
  EXPECT_EQ(type_of(g, "u2"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "w1"), type(DType::Int64, {2, 3}));
  EXPECT_EQ(type_of(g, "r1"), type(DType::Float64, {1, 1}));
  EXPECT_EQ(type_of(g, "r5"), type(DType::BFloat16, {}));
  EXPECT_EQ(type_of(g, "v2"), type(DType::Float16, {3, 4, 1}));
  EXPECT_EQ(type_of(g, "v5"), type(DType::Float16, {4, 3}));
  EXPECT_EQ(type_of(g, "v7"), type(DType::Float32, {4, 2, 3}));
  EXPECT_EQ(type_of(g, "s0"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "m0"), type(DType::Float32, {2, 1}));
  EXPECT_EQ(type_of(g, "m1"), type(DType::Float32, {3}));
  EXPECT_EQ(type_of(g, "m3"), type(DType::Float32, {2, 2}));
  EXPECT_EQ(type_of(g, "m4"), type(DType::Float32, {2, 1}));
  EXPECT_EQ(type_of(g, "m6"), type(DType::Float32, {1, 3}));
  EXPECT_EQ(type_of(g, "m8"), type(DType::Float32, {4, 3}));
  EXPECT_EQ(type_of(g, "m9"), type(DType::Float32, {2, 3, 2}));
  EXPECT_EQ(type_of(g, "n0"), type(DType::Float32, {4, 3}));
  EXPECT_EQ(type_of(g, "n3"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "n5"), type(DType::Float32, {3, 3}));
  EXPECT_EQ(type_of(g, "n6"), type(DType::Float32, {2, 3}));
  // issue 7, point 3: factory ops
  EXPECT_EQ(type_of(g, "fa0"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "fa4"), type(DType::Float64, {2, 3}));
  EXPECT_EQ(type_of(g, "fa5"), type(DType::Bool, {2, 3}));
  EXPECT_EQ(type_of(g, "fa7"), type(DType::Float32, {}));
  EXPECT_EQ(type_of(g, "fa8"), type(DType::Int64, {3}));
  EXPECT_EQ(type_of(g, "fa9"), type(DType::Int16, {4}));
  // issue 14, point 3: contractions
  EXPECT_EQ(type_of(g, "mm0"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "mm1"), type(DType::Float32, {2, 3, 3}));
  EXPECT_EQ(type_of(g, "mm2"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "mm3"), type(DType::Float32, {2, 3, 3}));
  // issue 15: convolution
  EXPECT_EQ(type_of(g, "cv0"), type(DType::Float32, {1, 1, 1}));
  EXPECT_EQ(type_of(g, "cv1"), type(DType::Float32, {1, 1, 2}));
  // the gradients of cv0; the one the output mask leaves out is empty
  EXPECT_EQ(type_of(g, "cg0"), type(DType::Float32, {1, 2, 3}));
  EXPECT_EQ(type_of(g, "cg1"), type(DType::Float32, {0}));
  EXPECT_EQ(type_of(g, "cg2"), type(DType::Float32, {1}));
  EXPECT_EQ(output_names(g), (std::vector<std::string>{"a0", "k1", "x", "a0"}));

  // Literal kinds.
  auto arg = [&](const char* value, size_t position) {
    return g.nodes()[static_cast<size_t>(g.value(*g.find_value(value)).producer)].args[position];
  };
  EXPECT_EQ(arg("a0", 2), Arg(Scalar(int64_t{2})));
  EXPECT_EQ(arg("a3", 2), Arg(Scalar(-0.5)));
  EXPECT_EQ(arg("a4", 1), Arg(Scalar(true)));
  EXPECT_EQ(arg("a9", 1), Arg(Scalar(1e-3)));
  EXPECT_EQ(arg("a10", 1), Arg(Scalar(int64_t{-1})));
  EXPECT_EQ(arg("a11", 0), Arg(Scalar(-2.5e10)));
  EXPECT_EQ(arg("a12", 1), Arg(Scalar(0.25)));
  EXPECT_EQ(arg("c3", 1), Arg(Scalar(-INFINITY)));
  EXPECT_TRUE(std::isnan(std::get<Scalar>(arg("c4", 1)).float_value()));
  EXPECT_EQ(arg("c5", 1), Arg(Scalar(INFINITY)));
  EXPECT_EQ(arg("c6", 1), Arg(Scalar(false)));
  EXPECT_EQ(arg("r1", 3), Arg(std::string("f64")));
  EXPECT_EQ(arg("r2", 1), Arg(std::vector<int64_t>{-1}));
  EXPECT_EQ(arg("r5", 1), Arg(std::vector<int64_t>{}));
  EXPECT_EQ(arg("k0", 1), Arg(std::string("preserve_format")));
  EXPECT_EQ(arg("k2", 1), Arg(None{}));
  EXPECT_EQ(arg("v8", 2), Arg(true));

  const std::string printed = print_graph(g);
  for (const char* line :
       {"def every_op(x: f32[2, 3], y: f32[3], i: i64[2, 3], b: bool[2, 3], h: f16[4, 1, 3] "
        "strides=[1, 4, 4], z: f32[], e: bf16[0]):\n",
        "    a0 = add(x, y, alpha=2)\n",
        "    a1 = add(x, 1.5)\n",
        "    a3 = sub(x, y, alpha=-0.5)\n",
        "    a4 = mul(x, True)\n",
        "    a6 = div(x, y)\n",
        "    a9 = mul(x, 0.001)\n",
        "    a11 = mul(-2.5e+10, x)\n",
        "    a13 = sub(x, 0.1)\n",
        "    a14 = mul(x, 3.0)\n",
        "    c3 = le(x, -inf)\n",
        "    c4 = eq(x, nan)\n",
        "    c5 = ne(i, inf)\n",
        "    c6 = eq(b, False)\n",
        "    p0 = pow(x, 2)\n",
        "    p1 = pow(x, 0.5)\n",
        "    w0 = where(b, x, 0.0)\n",
        "    w1 = where(b, 1, 2)\n",
        "    r0 = sum(x)\n",
        "    r1 = sum(i, dim=[0, 1], keepdim=True, dtype='f64')\n",
        "    r2 = mean(x, dim=[-1])\n",
        "    r3 = amax(x, dim=[1])\n",
        "    r4 = amin(x, dim=[0], keepdim=True)\n",
        "    r5 = sum(e, dim=[])\n",
        "    v0 = reshape(x, [3, -1])\n",
        "    v3 = transpose(x, 0, -1)\n",
        "    v5 = squeeze(h)\n",
        "    v6 = squeeze(h, dim=[1])\n",
        "    v7 = expand(y, [4, 2, -1])\n",
        "    v8 = expand(z, [5], implicit=True)\n",
        "    k0 = clone(x, memory_format='preserve_format')\n",
        "    k1 = contiguous(v3)\n",
        "    k2 = contiguous(v3, memory_format=None)\n",
        "    m0 = slice(x, dim=1, start=-2, step=2)\n",
        "    m3, m4 = split(x, 2, dim=1)\n",
        "    m5, m6 = split_with_sizes(x, [1, 1])\n",
        "    m7 = as_strided(x, [2, 2], [1, 2], storage_offset=1)\n",
        "    m8 = cat([x, x, e])\n",
        "    m9 = stack([x, x], dim=-1)\n",
        "    n0 = constant_pad_nd(x, [1, -1, 0, 2], value=1.5)\n",
        "    n2 = roll(x, [1], dims=[1])\n",
        "    n6 = index(x, [None, j])\n",
        "    n7 = slice_scatter(x, m0, dim=1, start=-2, step=2)\n",
        "    n8 = select_scatter(x, m1, 0, -1)\n",
        "    n9 = index_put(x, [j], y, accumulate=True)\n",
        "    n10 = index_add(x, 1, j, x, alpha=2)\n",
        "    n14 = scatter_reduce(x, 1, i, x, 'amax', include_self=False)\n",
        "    n11 = scatter(x, 1, i, x)\n",
        "    n12 = scatter(x, 0, i, 1.5)\n",
        "    n13 = scatter_add(x, 1, i, x)\n",
        "    ao, al = _scaled_dot_product_flash_attention_for_cpu(aq, aq, aq, is_causal=True, "
        "scale=0.5)\n",
        "    agq, agk, agv = _scaled_dot_product_flash_attention_for_cpu_backward(ao, aq, aq, aq, "
        "ao, al, 0.0, True, attn_mask=am)\n",
        "    return a0, k1, x, a0\n"}) {
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\nin\n" << printed;
  }
  expect_round_trip(g);
}

TEST(RoundTripTest, FloatsAreBitExact) {
  const double values[] = {0.1,
                           1.0 / 3.0,
                           -0.0,
                           5e-324,
                           1.7976931348623157e308,
                           123456789012345680.0,
                           1e22,
                           -2.5,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  for (double v : values) {
    Graph g("floats");
    ValueRef x = g.add_input("x", DType::Float64, {2});
    g.set_outputs({g.add_node("mul", {x, Scalar(v)})});
    const std::string text = print_graph(g);
    Graph again = parse_graph(text);
    ASSERT_TRUE(again == g) << text;
    const double back = std::get<Scalar>(again.nodes()[0].args[1]).float_value();
    if (!std::isnan(v)) {
      EXPECT_EQ(std::memcmp(&back, &v, sizeof v), 0) << text;
    }
  }
  EXPECT_EQ(format_float(2.0), "2.0");
  EXPECT_EQ(format_float(-0.0), "-0.0");
  EXPECT_EQ(format_float(1e22), "1e+22");
  EXPECT_EQ(format_float(0.1), "0.1");
}

TEST(RoundTripTest, IntsAndBuiltGraphs) {
  Graph g("ints");
  ValueRef x = g.add_input("x", DType::Int64, {2});
  ValueRef y = g.add_node("add", {x, int64_t{-9007199254740992}}, {{"alpha", int64_t{7}}});
  ValueRef big = g.add_node("reshape", {y, std::vector<int64_t>{1, 2}}, {}, "big");
  g.set_outputs({big, y});
  expect_round_trip(g);
  // bool, so that the largest int64 size is also a valid byte count.
  Graph max =
      parse_graph("def f(x: bool[1]):\n  r = expand(x, [9223372036854775807])\n  return r\n");
  EXPECT_EQ(type_of(max, "r").sizes, (std::vector<int64_t>{9223372036854775807}));
  expect_round_trip(max);
}

// Int literals are int64 exactly, never rounded through double: the extremes and the
// neighbours of 2^53 print back as written, in every scalar position.
TEST(RoundTripTest, IntScalarsAreExact) {
  const std::vector<std::string> literals = {
      "9223372036854775807", "-9223372036854775808", "9223372036854775806", "-9223372036854775807",
      "9007199254740993",    "-9007199254740993",    "9007199254740991",    "18014398509481985"};
  for (const std::string& lit : literals) {
    const std::string text =
        "def f(x: i64[3], m: bool[3]):\n"
        "  a = add(x, " +
        lit +
        ")\n"
        "  b = add(x, x, alpha=" +
        lit +
        ")\n"
        "  c = eq(x, " +
        lit +
        ")\n"
        "  d = bitwise_and(x, " +
        lit +
        ")\n"
        "  e = full_like(x, " +
        lit +
        ")\n"
        "  g = where(m, x, " +
        lit +
        ")\n"
        "  h = clamp(x, " +
        lit +
        ")\n"
        "  return a, b, c, d, e, g, h\n";
    const Graph g = parse_graph(text);
    const std::string printed = print_graph(g);
    for (const char* form : {"add(x, ", "alpha=", "eq(x, ", "bitwise_and(x, ", "full_like(x, ",
                             "where(m, x, ", "clamp(x, min="}) {
      EXPECT_NE(printed.find(std::string(form) + lit), std::string::npos) << form << lit << " in\n"
                                                                          << printed;
    }
    const int64_t value = std::stoll(lit);
    EXPECT_EQ(std::get<Scalar>(g.nodes()[0].args[1]), Scalar(value)) << lit;
    EXPECT_EQ(std::get<Scalar>(g.nodes()[0].args[1]).int_value(), value) << lit;
    EXPECT_NE(std::get<Scalar>(g.nodes()[0].args[1]), Scalar(static_cast<double>(value)));
    expect_round_trip(g);
  }
  // Two ints that one double would conflate stay different.
  EXPECT_NE(Scalar(int64_t{9007199254740993}), Scalar(int64_t{9007199254740992}));
  EXPECT_EQ(format_arg(Graph("g"), Scalar(std::numeric_limits<int64_t>::min())),
            "-9223372036854775808");
}

TEST(TextFormatTest, LayoutFreedoms) {
  // Comments anywhere, blank lines, any consistent indentation, lines joined inside brackets,
  // trailing commas, double-quoted strings.
  const char* good =
      "\n# leading comment\n\n"
      "def   f( x : f32[ 2 ,3 ] ,  # after x\n"
      "         w: f32[3, 2] strides = [1, 3], ):\n"
      "\t# tab-indented comment line\n"
      "  t = transpose(w, 0, 1)   # comment\n"
      "\n"
      "  s = sum(\n"
      "      x, [1,],\n"
      "      dtype=\"f64\",\n"
      "  )\n"
      "  return s, t  # done\n"
      "# trailing comment";
  Graph g = parse_graph(good);
  EXPECT_EQ(type_of(g, "w").strides, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(type_of(g, "t"), type(DType::Float32, {2, 3}));
  EXPECT_EQ(type_of(g, "s"), type(DType::Float64, {2}));
  expect_round_trip(g);
  // Returning an input directly, with no statements.
  Graph id = parse_graph("def identity(x: i8[3]):\n    return x\n");
  EXPECT_TRUE(id.nodes().empty());
  EXPECT_EQ(output_names(id), (std::vector<std::string>{"x"}));
  expect_round_trip(id);
  // A file without a trailing newline, with CRLF line ends.
  Graph crlf = parse_graph("def f(x: f32[3]):\r\n    y = exp(x)\r\n    return y");
  EXPECT_EQ(crlf.nodes().size(), 1u);
  // Contiguous strides given explicitly are not printed.
  Graph c = parse_graph("def f(x: f32[2, 3] strides=[3, 1]):\n    return x\n");
  EXPECT_EQ(print_graph(c), "def f(x: f32[2, 3]):\n    return x\n");
}

TEST(TextFormatTest, FormatHelpers) {
  Graph g("h");
  ValueRef x = g.add_input("x", DType::Float32, {2});
  EXPECT_EQ(format_arg(g, x), "x");
  EXPECT_EQ(format_arg(g, None{}), "None");
  EXPECT_EQ(format_arg(g, Scalar(int64_t{-3})), "-3");
  EXPECT_EQ(format_arg(g, Scalar(false)), "False");
  EXPECT_EQ(format_arg(g, int64_t{4}), "4");
  EXPECT_EQ(format_arg(g, true), "True");
  EXPECT_EQ(format_arg(g, std::vector<int64_t>{}), "[]");
  EXPECT_EQ(format_arg(g, std::string("a'b\\c\n")), "'a\\'b\\\\c\\n'");
  EXPECT_EQ(format_type(TensorType{DType::BFloat16, {2, 3}, {1, 2}, {}, {}}), "bf16[2, 3] strides=[1, 2]");
  EXPECT_EQ(format_type(type(DType::Bool, {})), "bool[]");
  EXPECT_TRUE(is_valid_value_name("_a1"));
  EXPECT_FALSE(is_valid_value_name("return"));
  EXPECT_FALSE(is_valid_value_name("inf"));
  EXPECT_FALSE(is_valid_value_name(""));
}

}  // namespace
}  // namespace stax::ir
