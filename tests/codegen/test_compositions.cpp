// Compositions of ops, compiled vs the eager oracle: the seed's examples, softmax, a layer
// norm, reductions over every kind of dim set, masks, NaN and infinities, broadcasting, views
// of outputs, outputs read by other ops, dead code and a materialized multi-user value.
#include <gtest/gtest.h>

#include <limits>

#include "codegen_test_util.h"

namespace stax::codegen_test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Case example_case(const std::string& file, std::vector<Tensor> inputs) {
  ir::Graph g = ir::parse_graph_file(std::string(STAX_EXAMPLES_DIR) + "/" + file);
  return Case{file, std::move(g), std::move(inputs), true};
}

Case unfused(Case c) {
  c.name += " (fuse=false)";
  c.fuse = false;
  return c;
}

const char* kSoftmax = R"(
def softmax(x: f32[37, 129]):
    x4 = mul(x, 4.0)
    m = amax(x4, dim=[-1], keepdim=True)
    c = sub(x4, m)
    e = exp(c)
    s = sum(e, dim=[-1], keepdim=True)
    y = div(e, s)
    return y
)";

const char* kLayerNorm = R"(
def layernorm(x: f32[33, 70], w: f32[70], b: f32[70]):
    mu = mean(x, dim=[-1], keepdim=True)
    c = sub(x, mu)
    sq = pow(c, 2.0)
    var = mean(sq, dim=[-1], keepdim=True)
    ve = add(var, 1e-05)
    r = rsqrt(ve)
    n = mul(c, r)
    wn = mul(n, w)
    y = add(wn, b)
    return y
)";

// exp(x) has three users (two reductions and a pointwise op): it is stored once.
const char* kMultiUserExp = R"(
def multi_user_exp(x: f32[37, 129]):
    e = exp(x)
    s = sum(e, dim=[-1])
    m = amax(e, dim=[-1])
    z = mul(e, 0.5)
    return s, m, z
)";

class Compositions : public CodegenTest {};

TEST_P(Compositions, SeedExamples) {
  check_all({
      example_case("example_1_1.stax", {random_f32({64, 128}, 1), random_f32({64, 128}, 2)}),
      // x / x.sum(-1): positive inputs keep the row sums away from zero.
      example_case("example_7_1.stax", {positive_f32({64, 128}, 3)}),
      example_case("example_7_2.stax", {random_f32({64, 128}, 4)}),
  });
}

TEST_P(Compositions, SoftmaxLayerNormMultiUser) {
  Case softmax = make_case("softmax", kSoftmax, {random_f32({37, 129}, 10)});
  Case layernorm = make_case("layernorm", kLayerNorm,
                             {random_f32({33, 70}, 11), random_f32({70}, 12),
                              random_f32({70}, 13)});
  Case multi = make_case("multi_user_exp", kMultiUserExp, {random_f32({37, 129}, 14)});
  check_all({softmax, layernorm, multi, unfused(softmax), unfused(multi)});
}

TEST_P(Compositions, MultiUserExpIsMaterializedOnce) {
  const ir::Graph g = ir::parse_graph(kMultiUserExp);
  const auto analysis = analyze(g, options());
  // exp is stored in its own buffer; both reductions and the multiply read it.
  int exp_buffers = 0;
  for (const auto& b : analysis->lowered.buffers) exp_buffers += b.origin == "exp";
  EXPECT_EQ(exp_buffers, 1);
}

TEST_P(Compositions, ReductionsOverDimSets) {
  const char* k3d = R"(
def reduce3d(x: f32[4, 6, 19]):
    a = sum(x, dim=[1])
    b = amax(x, dim=[1], keepdim=True)
    c = mean(x, dim=[0, 2])
    d = amin(x, dim=[0, 2], keepdim=True)
    e = sum(x, dim=[0])
    f = mean(x, dim=[1, 2], keepdim=True)
    g = sum(x)
    h = amax(x, dim=[0, 1, 2])
    i = mean(x, dim=[-2, -1])
    j = amin(x, dim=[-1])
    k = sum(x, dim=[0, 1], keepdim=True)
    return a, b, c, d, e, f, g, h, i, j, k
)";
  // Large enough for two threads to split the kept loops (y: two of them, collapsed; z: a
  // column reduction narrower than one vector; u: a column reduction inside a parallel loop).
  const char* klarge = R"(
def reduce_large(x: f32[300, 24], y: f32[3, 5, 700], z: f32[600, 5], u: f32[8, 300, 21]):
    a = sum(x, dim=[0])
    b = amax(x, dim=[0], keepdim=True)
    c = mean(x, dim=[1])
    d = amin(x, dim=[1], keepdim=True)
    e = sum(x)
    sq = mul(x, x)
    f = mean(sq, dim=[0])
    g = sum(y, dim=[-1])
    h = amax(y, dim=[-1], keepdim=True)
    ey = exp(y)
    k = mean(ey, dim=[2])
    cs = sum(z, dim=[0])
    cm = amin(z, dim=[0], keepdim=True)
    us = sum(u, dim=[1])
    um = amax(u, dim=[1], keepdim=True)
    return a, b, c, d, e, f, g, h, k, cs, cm, us, um
)";
  check_all({make_case("reduce3d", k3d, {random_f32({4, 6, 19}, 20)}),
             make_case("reduce_large", klarge,
                       {random_f32({300, 24}, 21), random_f32({3, 5, 700}, 22),
                        random_f32({600, 5}, 23), random_f32({8, 300, 21}, 24)})});
}

TEST_P(Compositions, WhereWithComparisons) {
  const char* text = R"(
def masked(x: f32[6, 45], y: f32[6, 45], t: f32[45]):
    m = gt(x, y)
    z = where(m, x, -inf)
    mx = amax(z, dim=[-1])
    k = le(x, t)
    w = where(k, y, 0.0)
    s = sum(w, dim=[-1])
    a = abs(x)
    big = ge(a, 0.5)
    c = where(big, 1.0, x)
    d = lt(x, 0.0)
    r = where(d, 0.0, x)
    mf = mul(m, x)
    kf = add(k, 1.0)
    mk = where(d, m, k)
    return m, z, mx, k, w, s, c, r, mf, kf, mk
)";
  Tensor x = random_f32({6, 45}, 30);
  Tensor y = random_f32({6, 45}, 31);
  // Row 0: x < y everywhere, so the masked row is all -inf and its amax is -inf.
  for (int64_t j = 0; j < 45; ++j) y.set({0, j}, x.get({0, j}) + 0.5);
  check(make_case("masked", text, {x, y, random_f32({45}, 32)}));
}

// NaN and infinities in inputs and from the ops themselves (log, sqrt and non-integer powers of
// negative numbers, division by zero): every NaN and infinity must appear where the oracle has it.
TEST_P(Compositions, NaNAndInfinities) {
  const char* text = R"(
def nans(x: f32[4, 17], y: f32[4, 17], z: f32[37]):
    r = relu(x)
    mx = maximum(x, y)
    mn = minimum(x, y)
    amx = amax(x, dim=[-1])
    amn = amin(x, dim=[-1], keepdim=True)
    s = sum(x, dim=[-1])
    amx0 = amax(x, dim=[0])
    g = gt(x, y)
    n = ne(x, y)
    q = eq(x, x)
    w = where(g, x, y)
    e = exp(x)
    sg = sigmoid(x)
    t = tanh(x)
    ab = abs(x)
    ng = neg(x)
    zr = relu(z)
    zmax = amax(z)
    zmin = amin(z)
    zs = sum(z)
    zm = maximum(z, z)
    wn = where(g, nan, x)
    an = add(z, nan)
    lg = log(x)
    sq = sqrt(x)
    rs = rsqrt(x)
    ph = pow(x, 0.5)
    pf = pow(x, 1.7)
    dz = div(x, 0.0)
    return r, mx, mn, amx, amn, s, amx0, g, n, q, w, e, sg, t, ab, ng, zr, zmax, zmin, zs, zm, wn, an, lg, sq, rs, ph, pf, dz
)";
  Tensor x = random_f32({4, 17}, 40);
  Tensor y = random_f32({4, 17}, 41);
  Tensor z = random_f32({37}, 42);
  x.set({0, 3}, kNaN);    // row 0: NaN in the first vector
  x.set({1, 16}, kNaN);   // row 1: NaN in the tail lane (AVX2 and AVX-512)
  x.set({2, 9}, kInf);    // row 2: +inf and -inf: sum is NaN, extrema are infinite
  x.set({2, 2}, -kInf);
  x.set({3, 8}, -kInf);   // row 3: -inf only
  y.set({3, 0}, kNaN);
  y.set({0, 5}, -kInf);
  y.set({1, 16}, kInf);
  z.set_flat(36, kNaN);   // the last tail element
  z.set_flat(20, -kInf);
  z.set_flat(0, kInf);
  x.set({3, 12}, 0.0);    // log(0) = -inf, rsqrt(0) = inf, 0 / 0 = NaN
  x.set({3, 13}, -0.0);
  check(make_case("nans", text, {x, y, z}));
}

TEST_P(Compositions, Broadcasting) {
  const char* text = R"(
def bcast(a: f32[37, 1], b: f32[1, 65], c: f32[65], d: f32[37, 65]):
    s = add(a, b)
    t = mul(s, c)
    u = sub(d, c)
    pa = abs(a)
    qa = add(pa, 0.5)
    v = div(d, qa)
    w = maximum(a, c)
    g = gt(c, a)
    x = where(g, b, a)
    r = sum(s, dim=[-1])
    r0 = amax(t, dim=[0], keepdim=True)
    ea = expand(a, [37, 65])
    se = sum(ea, dim=[-1])
    eb = expand(b, [37, 65])
    mb = amax(eb, dim=[0])
    return s, t, u, v, w, g, x, r, r0, se, mb
)";
  check(make_case("bcast", text,
                  {random_f32({37, 1}, 50), random_f32({1, 65}, 51), random_f32({65}, 52),
                   random_f32({37, 65}, 53)}));
}

TEST_P(Compositions, ViewsOfOutputs) {
  const char* text = R"(
def views(x: f32[7, 33]):
    t = transpose(x, 0, 1)
    s = sum(x, dim=[-1])
    u = unsqueeze(s, 1)
    e = exp(x)
    p = permute(e, [1, 0])
    r = reshape(e, [231])
    v = view(x, [3, 7, 11])
    q = unsqueeze(x, 0)
    sq = squeeze(q, [0])
    ex = expand(u, [7, 33])
    c = clone(x)
    k = contiguous(t)
    k2 = contiguous(x)
    mm = mean(x, dim=[-1])
    um = unsqueeze(mm, 0)
    te = transpose(e, 0, 1)
    q3 = unsqueeze(x, 0)
    ex3 = expand(q3, [2, 7, 33])
    sa = squeeze(q)
    return t, u, p, r, v, sq, ex, c, k, k2, x, um, te, ex3, sa, e
)";
  Case c = make_case("views", text, {random_f32({7, 33}, 60)});
  const CompiledGraph compiled = compile_one(c.graph);
  const std::vector<Tensor> out = run_and_check(c, compiled);
  if (out.empty()) return;
  const auto& in = c.inputs[0].storage();
  EXPECT_EQ(out[0].storage(), in) << "transpose(x) aliases x";
  EXPECT_EQ(out[0].strides(), (std::vector<int64_t>{1, 33}));
  EXPECT_EQ(out[4].storage(), in) << "view(x) aliases x";
  EXPECT_EQ(out[5].storage(), in) << "squeeze(unsqueeze(x)) aliases x";
  EXPECT_NE(out[6].storage(), in);
  EXPECT_EQ(out[6].strides()[1], 0) << "expand is a stride-0 view";
  EXPECT_NE(out[7].storage(), in) << "clone(x) is a copy";
  EXPECT_NE(out[8].storage(), in) << "contiguous(transpose(x)) is a copy";
  EXPECT_TRUE(out[8].is_contiguous());
  EXPECT_EQ(out[9].storage(), in) << "contiguous(x) of a contiguous x aliases x";
  EXPECT_EQ(out[10].storage(), in) << "returning an input returns it";
  EXPECT_EQ(out[1].storage(), out[6].storage()) << "u and expand(u) share the sum's buffer";
  EXPECT_EQ(out[2].storage(), out[3].storage()) << "both views of exp(x) share its buffer";
  EXPECT_EQ(out[2].storage(), out[15].storage()) << "exp(x) and its views share one buffer";
  EXPECT_EQ(out[13].storage(), in) << "expand(unsqueeze(x)) aliases x";
  EXPECT_EQ(out[13].strides()[0], 0);
  EXPECT_EQ(out[14].storage(), in) << "squeeze() of unsqueeze(x) aliases x";
}

// Views of intermediate values read by other ops; graph outputs (exp(a), its row sums, the
// normalized rows) that are also read by later ops.
TEST_P(Compositions, ViewsInsideComputationAndOutputsReadByOps) {
  const char* text = R"(
def view_chain(x: f32[6, 35], y: f32[35, 6], a: f32[9, 40]):
    e = exp(x)
    t = transpose(e, 0, 1)
    z = add(t, y)
    r = reshape(x, [5, 42])
    s = sum(r, dim=[1])
    x3 = reshape(x, [2, 3, 35])
    pm = permute(x3, [2, 0, 1])
    n = neg(pm)
    ty = transpose(y, 0, 1)
    ry = reshape(ty, [210])
    m = amax(ry, dim=[0])
    u = unsqueeze(s, 0)
    ue = expand(u, [3, 5])
    ad = add(ue, 1.0)
    ea = exp(a)
    sa = sum(ea, dim=[-1], keepdim=True)
    ya = div(ea, sa)
    ma = amax(ya, dim=[-1])
    return z, s, n, m, ad, ea, sa, ya, ma
)";
  check(make_case("view_chain", text,
                  {random_f32({6, 35}, 70), random_f32({35, 6}, 71), random_f32({9, 40}, 72)}));
}

// Reshapes that no strided layout expresses (of a transposed input), reshape/transpose/permute
// chains, and reductions over them: index expressions with floor division and modulo of the
// vectorized variable.
TEST_P(Compositions, ReshapesAndPermutes) {
  const char* text = R"(
def reshapes(x: f32[5, 7] strides=[1, 5], y: f32[4, 6, 10], z: f32[35]):
    f = reshape(x, [35])
    e = exp(f)
    g = add(e, z)
    f2 = reshape(x, [7, 5])
    n = neg(f2)
    r = reshape(y, [24, 10])
    t = transpose(r, 0, 1)
    r2 = reshape(t, [10, 4, 6])
    p = permute(r2, [2, 0, 1])
    q = mul(p, 2.0)
    s = sum(p, dim=[0])
    s2 = sum(p, dim=[-1])
    fz = reshape(z, [5, 7])
    w = add(fz, x)
    sw = amax(f, dim=[0])
    ft = reshape(t, [240])
    ef = exp(ft)
    sf = sum(ft, dim=[0])
    return f, g, n, q, s, s2, w, sw, ef, sf
)";
  check(make_case("reshapes", text,
                  {random_f32_strided({5, 7}, {1, 5}, 75), random_f32({4, 6, 10}, 76),
                   random_f32({35}, 77)}));
}

// 0-dim inputs and outputs, and tensors with no elements (sum over an empty dim is 0, mean NaN).
TEST_P(Compositions, ZeroDimAndEmptyTensors) {
  const char* text = R"(
def edge(x: f32[], y: f32[9], z: f32[0, 5], w: f32[3, 0]):
    a = add(x, y)
    e = exp(x)
    s = sum(y)
    t = mul(s, x)
    ez = exp(z)
    sw = sum(w, dim=[-1])
    mz = mean(z, dim=[0])
    return a, e, t, ez, sw, mz
)";
  check(make_case("edge", text,
                  {random_f32({}, 85), random_f32({9}, 86), random_f32({0, 5}, 87),
                   random_f32({3, 0}, 88)}));
}

// A finite literal beyond the float range rounds to infinity in float32 arithmetic, like
// PyTorch's scalar conversion: x * 1e39 is +-inf for every nonzero x.
TEST_P(Compositions, ScalarLiteralBeyondFloatRange) {
  const char* text = R"(
def big_literal(x: f32[3, 17]):
    a = mul(x, 1e+39)
    b = mul(x, -1e+39)
    return a, b
)";
  check(make_case("big_literal", text, {positive_f32({3, 17}, 89)}));
}

// Graph input names are user-chosen: ones that look like the compiler's internal buffer
// names (buf0, buf1, ...) must not be confused with those buffers.
TEST_P(Compositions, InputNamesLikeInternalBuffers) {
  const char* read_after_write = R"(
def names_a(y: f32[4, 9], buf0: f32[4, 9]):
    e = exp(y)
    f = add(buf0, 1.0)
    return e, f
)";
  const char* self_read = R"(
def names_b(buf0: f32[4, 9], y: f32[4, 9]):
    e = mul(y, 3.0)
    f = add(e, buf0)
    return f
)";
  check_all({make_case("names_a", read_after_write,
                       {random_f32({4, 9}, 95), random_f32({4, 9}, 96)}),
             make_case("names_b", self_read, {random_f32({4, 9}, 97), random_f32({4, 9}, 98)})});
}

TEST_P(Compositions, DeadReductionIsRemoved) {
  const char* text = R"(
def dead(x: f32[9, 40]):
    s = sum(x, dim=[-1])
    e = exp(x)
    m = amax(e, dim=[-1])
    y = tanh(x)
    return y
)";
  Case c = make_case("dead", text, {random_f32({9, 40}, 90)});
  const CompiledGraph compiled = compile_one(c.graph);
  run_and_check(c, compiled);
  const auto& schedule = compiled.compilation().schedule;
  int live = 0;
  for (bool dead : schedule.dead) live += !dead;
  EXPECT_EQ(live, 1) << "only tanh(x) is computed";
  EXPECT_EQ(schedule.kernels.size(), 1u);
}

TEST_P(Compositions, SecondCompileIsACacheHit) {
  const ir::Graph g = ir::parse_graph_file(std::string(STAX_EXAMPLES_DIR) + "/example_7_1.stax");
  const CompiledGraph first = compile_one(g);
  const CompiledGraph second = compile_one(g);
  EXPECT_TRUE(second.cache_hit());
  EXPECT_EQ(first.library_path(), second.library_path());
  run_and_check(Case{"example_7_1 (cached)", g, {positive_f32({64, 128}, 5)}, true}, second);
}

INSTANTIATE_TEST_SUITE_P(Levels, Compositions, all_params(), param_name);

}  // namespace
}  // namespace stax::codegen_test
