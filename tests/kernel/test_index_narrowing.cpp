// The index-narrowing pass (issue 6 point 8): int32 loop and index arithmetic where every
// index provably fits, int64 where a variable's values or any index it takes part in may
// reach 2^31, indirect indices always int64, and a verifier that rejects an int32 index that
// can overflow. The kernels are built from program text without allocating any tensor, so
// sizes past 2^31 elements cost nothing here (tests/driver/test_large_indices.cpp runs one).
#include <gtest/gtest.h>

#include <string>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "kernel/index_width.h"
#include "kernel/verifier.h"
#include "kernel_test_util.h"

namespace stax {
namespace {

using index::Expr;
using kernel::Stmt;
using kernel::StmtKind;
using kernel_test::contains;
using kernel_test::lower_all;
using kernel_test::schedule_text;
using ::stax::DType;

// The index type of every loop variable of the kernel (each name once).
std::map<std::string, DType> loop_types(const kernel::Kernel& k) {
  std::map<std::string, DType> out;
  kernel::for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Loop) out[s.loop->var] = s.loop->index_type;
  });
  return out;
}

kernel::Kernel only_kernel(const std::string& text, int threads = 1) {
  auto s = schedule_text(text);
  auto ks = lower_all(*s, kernel_test::avx512(threads));
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

TEST(IndexNarrowing, Add2048By2048PrintsInt32Loops) {
  const kernel::Kernel k = only_kernel(
      "def f(x: f32[2048, 2048], y: f32[2048, 2048]):\n    z = add(x, y)\n    return z\n", 2);
  const std::string text = kernel::print_kernel(k);
  const auto loops = loop_types(k);
  ASSERT_FALSE(loops.empty());
  for (const auto& [var, type] : loops) EXPECT_EQ(type, DType::Int32) << var << "\n" << text;
  EXPECT_TRUE(contains(text, "for (int32_t ")) << text;
  EXPECT_FALSE(contains(text, "int64_t")) << text;
  // The merged loop runs over 4194304 elements, its vector step of 16 included.
  EXPECT_EQ(k.decisions.index_width_reason, "int32 indices: every index < 2^31 (largest 4194319)");
  EXPECT_TRUE(contains(kernel::describe_after_pass("narrow indices", k),
                       "// int32 indices: every index < 2^31"));
}

TEST(IndexNarrowing, FlatIndexPastInt32KeepsInt64) {
  // 2.2e9 elements: the flat index passes 2^31 - 1 (the kernel IR needs no buffer).
  const kernel::Kernel k =
      only_kernel("def f(x: u8[2200000000]):\n    y = add(x, 1)\n    return y\n", 2);
  const std::string text = kernel::print_kernel(k);
  for (const auto& [var, type] : loop_types(k)) EXPECT_EQ(type, DType::Int64) << var;
  EXPECT_TRUE(contains(text, "for (int64_t ")) << text;
  EXPECT_FALSE(contains(text, "int32_t")) << text;
  EXPECT_TRUE(contains(k.decisions.index_width_reason, "int64 indices ("))
      << k.decisions.index_width_reason;
  EXPECT_TRUE(contains(k.decisions.index_width_reason, "reaches 22000000"))
      << k.decisions.index_width_reason;
}

TEST(IndexNarrowing, BoundsCoverEverySubtermAndTheLastStep) {
  const Expr x0 = Expr::var("x0"), x1 = Expr::var("x1");
  // 2048*x0 + x1 over x0 < 2^20, x1 < 2048 reaches exactly 2^31 - 1; one more row does not fit.
  EXPECT_EQ(kernel::index_magnitude(Expr(2048) * x0 + x1, {{"x0", 1 << 20}, {"x1", 2048}}),
            2147483647);
  EXPECT_GT(*kernel::index_magnitude(Expr(2048) * x0 + x1, {{"x0", (1 << 20) + 1}, {"x1", 2048}}),
            kernel::kInt32IndexMax);
  // Partial sums, whatever order C++ adds the terms in, stay within [-999, 2147483000].
  EXPECT_EQ(kernel::index_magnitude(Expr(2147483000) - x0, {{"x0", 1000}}), 2147483000);
  EXPECT_GT(*kernel::index_magnitude(Expr(2147483000) + x0, {{"x0", 1000}}),
            kernel::kInt32IndexMax);
  // Divisions bound their dividend: (x0 * x1) / 7 computes x0 * x1 first.
  EXPECT_EQ(kernel::index_magnitude(index::floordiv(x0 * x1, 7), {{"x0", 70000}, {"x1", 70000}}),
            int64_t{69999} * 69999);
  // No range, no bound.
  EXPECT_FALSE(kernel::index_magnitude(x0 + x1, {{"x0", 4}}).has_value());

  // for (x = 0; x < end; x += 64): the last increment may pass end by 63.
  kernel::Loop loop;
  loop.var = "x";
  loop.step = 64;
  loop.end = Expr(2147483584);  // 2^31 - 64: the increment reaches at most 2^31 - 1
  EXPECT_EQ(kernel::loop_header_magnitude(loop, {{"x", 2147483584}}), 2147483647);
  loop.end = Expr(2147483600);
  EXPECT_GT(*kernel::loop_header_magnitude(loop, {{"x", 2147483600}}), kernel::kInt32IndexMax);
  // A loop running past the range its variable's bounds assume proves nothing.
  EXPECT_FALSE(kernel::loop_header_magnitude(loop, {{"x", 1000}}).has_value());
}

TEST(IndexNarrowing, AProductPastInt32WidensOnlyItsVariables) {
  // x is column 5 of a [70000, 70000] uint8 tensor: 70000 elements at stride 70000, so its
  // load index 70000*x0 + 5 reaches 4.9e9 while x0 < 70000 fits. x0 stays int64; x1 only
  // takes part in indices below 2^31 (3*x0 + x1) and is int32.
  const kernel::Kernel k = only_kernel(
      "def f(x: u8[70000] strides=[70000], w: u8[70000, 3]):\n"
      "    c = unsqueeze(x, 1)\n"
      "    z = add(c, w)\n"
      "    return z\n");
  const std::string text = kernel::print_kernel(k);
  const auto loops = loop_types(k);
  ASSERT_TRUE(loops.count("x0")) << text;
  EXPECT_EQ(loops.at("x0"), DType::Int64) << text;
  EXPECT_TRUE(contains(text, "for (int64_t x0 = 0; x0 < 70000; ++x0)")) << text;
  // x1 is the vectorized loop, whose 3 iterations are one masked tail: an index definition.
  EXPECT_TRUE(contains(text, "const int32_t x1 = 0;")) << text;
  EXPECT_TRUE(contains(text, "70000*x0")) << text;
  EXPECT_TRUE(contains(k.decisions.index_width_reason, "int32 indices except x0: "))
      << k.decisions.index_width_reason;
}

TEST(IndexNarrowing, IndirectIndicesStayInt64AndAreCheckedFirst) {
  const kernel::Kernel k = only_kernel(
      "def f(u: f32[100, 64], j: i64[7]):\n    s = index_select(u, 0, j)\n    return s\n");
  const std::string text = kernel::print_kernel(k);
  for (const auto& [var, type] : loop_types(k)) EXPECT_EQ(type, DType::Int32) << var << text;
  int indirect = 0;
  kernel::for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::DefineIndex && !s.index) {
      ++indirect;
      EXPECT_EQ(s.index_type, DType::Int64) << s.name;
      EXPECT_TRUE(contains(text, "const int64_t " + s.name + " = ")) << text;
    }
  });
  EXPECT_EQ(indirect, 1) << text;
  // The range check reads the int64 value before the index is defined from it.
  EXPECT_LT(text.find("stax::any_out_of_range("), text.find("const int64_t ind")) << text;
  EXPECT_TRUE(contains(k.decisions.index_width_reason, ": read from a tensor"))
      << k.decisions.index_width_reason;
}

TEST(IndexNarrowing, IndexValuesReadOnlyByConversionsAreInt32Vectors) {
  // y[i] = float(3 * i): the vectorized index value is only converted.
  const int64_t n = 100;
  auto body = [](lowering::OpsHandler& h, const std::vector<Expr>& idx, const std::vector<Expr>&) {
    return h.index_value(idx[0] * Expr(3), DType::Float32);
  };
  auto s = kernel_test::schedule_lowered(
      kernel_test::make_graph({}, {kernel_test::make_buffer("y", DType::Float32, {n}, body)}));
  const auto ks = lower_all(*s, kernel_test::avx512());
  ASSERT_EQ(ks.size(), 1u);
  const std::string text = kernel::print_kernel(ks[0]);
  EXPECT_TRUE(contains(text, "stax::Vec<int32_t, 16>::arange(3*x0, 3)")) << text;
  EXPECT_FALSE(contains(text, "int64_t")) << text;
}

TEST(IndexNarrowing, Int32GatherOffsetsReadTheRightElements) {
  // Padding a transposed input: its masked strided loads are gathers whose offsets (an index
  // value read only by the gather) are int32 vectors. Compiled against eager, exactly (a copy).
  const std::string text =
      "def f(x: f32[40, 30] strides=[1, 40]):\n"
      "    p = constant_pad_nd(x, [1, 2], 0.0)\n"
      "    return p\n";
  const ir::Graph g = ir::parse_graph(text);
  Tensor x = Tensor::empty_strided(DType::Float32, {40, 30}, {1, 40});
  for (int64_t i = 0; i < 40 * 30; ++i) x.set_flat(i, static_cast<double>(i) * 0.25);
  const Tensor expected = eager::run(g, {x}).at(0);
  for (auto simd : {runtime::SimdLevel::Avx512, runtime::SimdLevel::Avx2}) {
    if (!runtime::cpu_supports(simd)) continue;
    CompileOptions options;
    options.simd = simd;
    options.num_threads = 2;
    const CompiledGraph c = compile(g, options);
    const int lanes = simd == runtime::SimdLevel::Avx512 ? 16 : 8;
    EXPECT_TRUE(contains(c.source(), "const stax::Vec<int32_t, " + std::to_string(lanes) + "> "))
        << c.source();
    EXPECT_TRUE(contains(c.source(), "::gather_masked(in_x, ")) << c.source();
    const eager::Difference d = eager::compare(c.run({x}).at(0), expected, 0.0, 0.0);
    EXPECT_TRUE(d.within_tolerance) << d.max_abs << " at " << runtime::simd_level_name(simd);
  }
}

TEST(IndexNarrowing, IndexValuesOtherOpsReadStayInt64) {
  // An index value compared with an int64 constant (a mask) stays int64.
  const kernel::Kernel k =
      only_kernel("def f(x: f32[6, 5]):\n    p = constant_pad_nd(x, [1, 2], 0.0)\n    return p\n");
  const std::string text = kernel::print_kernel(k);
  int values = 0;
  kernel::for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Let && s.let.kind == kernel::LetKind::IndexValue) {
      ++values;
      EXPECT_EQ(s.let.type.dtype, DType::Int64) << text;
    }
  });
  EXPECT_GT(values, 0) << text;
  for (const auto& [var, type] : loop_types(k)) EXPECT_EQ(type, DType::Int32) << var << text;
}

// The verifier's part: an int32 mark the bounds do not prove is rejected.
void expect_rejected(const kernel::Kernel& k, const std::string& part) {
  try {
    kernel::verify(k, "test pass");
    ADD_FAILURE() << "accepted:\n" << kernel::print_kernel(k);
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(contains(e.what(), part)) << e.what();
  }
}

TEST(IndexNarrowing, VerifierRejectsInt32IndicesThatMayOverflow) {
  {
    kernel::Kernel k = only_kernel("def f(x: u8[2200000000]):\n    y = add(x, 1)\n    return y\n");
    kernel::for_each_stmt(k.body, [](Stmt& s) {
      if (s.kind == StmtKind::Loop) s.loop->index_type = DType::Int32;
    });
    expect_rejected(k, "may leave int32");
  }
  {
    // Loop x0 fits (< 70000), its index 70000*x0 + 5 does not.
    kernel::Kernel k = only_kernel(
        "def f(x: u8[70000] strides=[70000], w: u8[70000, 3]):\n"
        "    c = unsqueeze(x, 1)\n"
        "    z = add(c, w)\n"
        "    return z\n");
    kernel::for_each_stmt(k.body, [](Stmt& s) {
      if (s.kind == StmtKind::Loop && s.loop->var == "x0") s.loop->index_type = DType::Int32;
    });
    expect_rejected(k, "with int32 x0 may overflow int32");
  }
  {
    kernel::Kernel k = only_kernel(
        "def f(u: f32[100, 64], j: i64[7]):\n    s = index_select(u, 0, j)\n    return s\n");
    EXPECT_NO_THROW(kernel::verify(k, "test pass"));
    kernel::for_each_stmt(k.body, [](Stmt& s) {
      if (s.kind == StmtKind::DefineIndex && !s.index) s.index_type = DType::Int32;
    });
    expect_rejected(k, "read from a tensor (indirect indices are int64)");
  }
}

}  // namespace
}  // namespace stax
