// The loop-invariant hoisting pass (kernel/hoist_invariants.cpp): which scalar values move out
// of their loop, which stay, and that an OpenMP collapse keeps its loops perfectly nested.
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

// The text with each line's indentation removed.
std::string unindented(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && c == ' ') continue;
    line_start = c == '\n';
    out += c;
  }
  return out;
}

size_t position(const std::string& text, const std::string& part) {
  const size_t at = text.find(part);
  EXPECT_NE(at, std::string::npos) << "no '" << part << "' in\n" << text;
  return at;
}

// log_softmax of a 16-bit input as eager computes it (python/stax/half_decompositions.py): the
// row's sum and its log are rounded through bfloat16, then subtracted from every element.
const char* kLogSoftmax = R"(def f(x: bf16[8, 256]):
    xf = _to_copy(x, dtype="f32")
    m = amax(xf, [-1], True)
    s = sub(xf, m, alpha=1)
    e = exp(s)
    t = sum(e, [-1], True)
    tb = _to_copy(t, dtype="bf16")
    tf = _to_copy(tb, dtype="f32")
    l = log(tf)
    lb = _to_copy(l, dtype="bf16")
    lf = _to_copy(lb, dtype="f32")
    r = sub(s, lf, alpha=1)
    y = _to_copy(r, dtype="bf16")
    return y
)";

TEST(HoistInvariants, RowLogSumIsComputedOnceBeforeTheRowLoop) {
  auto s = schedule_text(kLogSoftmax);
  const auto ks = lower_all(*s, avx512(2));
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = kernel::print_kernel(ks[0]);
  // The scalar log precedes the vector loop that writes the row, and is computed once.
  const size_t log_at = position(text, "stax::op_log(");
  const size_t loop_at = text.rfind("for (int32_t x1 = 0;");
  ASSERT_NE(loop_at, std::string::npos) << text;
  EXPECT_LT(log_at, loop_at) << text;
  EXPECT_EQ(text.find("stax::op_log(", log_at + 1), std::string::npos) << text;
  EXPECT_TRUE(contains(ks[0].decisions.hoisting_reason, "out of loop x1"))
      << ks[0].decisions.hoisting_reason;
}

TEST(HoistInvariants, IntegerDivisionStaysInItsLoop) {
  // a // b is the same for every element of a row, but an integer division by zero traps and
  // its check runs inside the loop, so the division stays there. (a and b are expanded inputs,
  // stride 0 along the row: a broadcast in the graph would have the quotient stored once per
  // row instead, leaving nothing to hoist.)
  auto s = schedule_text(
      "def f(x: i64[4, 64], a: i64[4, 64] strides=[1, 0], b: i64[4, 64] strides=[1, 0]):\n"
      "    q = floor_divide(a, b)\n"
      "    y = add(x, q)\n"
      "    return y\n");
  const auto ks = lower_all(*s, avx512(1));
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = kernel::print_kernel(ks[0]);
  const size_t row_loop = position(text, "for (int32_t x1 = 0;");
  const size_t division = position(text, "stax::op_floordiv(");
  EXPECT_GT(division, row_loop) << text;
}

TEST(HoistInvariants, CollapsedLoopsStayPerfectlyNested) {
  // collapse(2) over x0 and x1: the constant of the inner vector loop moves into x1's body,
  // not further into x0's, which would break the collapse.
  auto s = schedule_text(
      "def f(x: f32[2, 4096, 35], y: f32[2, 1, 35]):\n"
      "    w = mul(y, 2.0)\n"
      "    z = add(x, w)\n"
      "    return z\n");
  const auto ks = lower_all(*s, avx512(8));
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = kernel::print_kernel(ks[0]);
  EXPECT_TRUE(contains(unindented(text),
                       "#pragma omp for collapse(2) schedule(static)\n"
                       "for (int32_t x0 = 0; x0 < 2; ++x0) {\n"
                       "for (int32_t x1 = 0; x1 < 4096; ++x1) {\n"
                       "const float tmp7 = 2.0f;\n"))
      << text;
}

}  // namespace
}  // namespace stax::kernel_test
