// The verifier rejects malformed IR (each rule), and the printer prints hand-built IR in the
// kernel-header API.
#include <cmath>
#include <limits>

#include "kernel/verifier.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using kernel::Kernel;
using kernel::Let;
using kernel::LetKind;
using kernel::Stmt;
using kernel::StmtKind;
using lowering::PointwiseOp;

Let constant(int id, DType dtype, int lanes = 1) {
  Let l;
  l.id = id;
  l.kind = LetKind::Constant;
  l.type = {dtype, lanes};
  l.constant = 1;
  return l;
}

Let compute(int id, PointwiseOp op, std::vector<int> args, DType dtype, int lanes = 1) {
  Let l;
  l.id = id;
  l.kind = LetKind::Compute;
  l.op = op;
  l.args = std::move(args);
  l.type = {dtype, lanes};
  return l;
}

Kernel kernel_of(std::vector<Stmt> body) {
  Kernel k;
  k.name = "test";
  k.body = std::move(body);
  k.ranges.extents["x0"] = 8;
  return k;
}

void expect_rejected(const Kernel& k, const std::string& problem) {
  try {
    kernel::verify(k, "test pass");
    ADD_FAILURE() << "verify accepted IR with: " << problem;
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(contains(e.what(), problem)) << e.what();
    EXPECT_TRUE(contains(e.what(), "after test pass")) << e.what();
  }
}

TEST(KernelVerifier, AcceptsWellFormedIR) {
  const Kernel k =
      kernel_of({kernel::make_let(constant(0, DType::Float32)),
                 kernel::make_let(compute(1, PointwiseOp::Add, {0, 0}, DType::Float32))});
  EXPECT_NO_THROW(kernel::verify(k, "test pass"));
}

TEST(KernelVerifier, RejectsOperandDtypesTheOpDoesNotAccept) {
  expect_rejected(kernel_of({kernel::make_let(constant(0, DType::Int32)),
                             kernel::make_let(compute(1, PointwiseOp::Exp, {0}, DType::Int32))}),
                  "exp does not accept i32");
  expect_rejected(kernel_of({kernel::make_let(constant(0, DType::Int32)),
                             kernel::make_let(constant(1, DType::Float32)),
                             kernel::make_let(compute(2, PointwiseOp::Add, {0, 1}, DType::Int32))}),
                  "differ in dtype");
  expect_rejected(
      kernel_of({kernel::make_let(constant(0, DType::Float32)),
                 kernel::make_let(compute(1, PointwiseOp::Lt, {0, 0}, DType::Float32))}),
      "yields bool");
}

TEST(KernelVerifier, RejectsUseBeforeDefinitionAndOutsideScope) {
  expect_rejected(kernel_of({kernel::make_let(compute(1, PointwiseOp::Neg, {0}, DType::Float32)),
                             kernel::make_let(constant(0, DType::Float32))}),
                  "before it is defined");
  kernel::Loop l;
  l.var = "x0";
  l.end = index::Expr(8);
  kernel::Block inner = {kernel::make_let(constant(0, DType::Float32))};
  expect_rejected(kernel_of({kernel::make_loop(l, inner),
                             kernel::make_let(compute(1, PointwiseOp::Neg, {0}, DType::Float32))}),
                  "before it is defined");
}

TEST(KernelVerifier, RejectsInconsistentVectorWidths) {
  expect_rejected(
      kernel_of({kernel::make_let(constant(0, DType::Float32, 16)),
                 kernel::make_let(constant(1, DType::Float32, 8)),
                 kernel::make_let(compute(2, PointwiseOp::Add, {0, 1}, DType::Float32, 16))}),
      "operand 1 of add is f32x8");
  // A vector value stored with a scalar access.
  kernel::Access a;
  a.buffer = "y";
  expect_rejected(
      kernel_of({kernel::make_let(constant(0, DType::Float32, 16)), kernel::make_store(a, 0)}),
      "a vector value with a scalar access");
}

TEST(KernelVerifier, RejectsMasksThatAreNotBool) {
  Let load;
  load.id = 1;
  load.kind = LetKind::Load;
  load.type = {DType::Float32, 1};
  load.access.buffer = "x";
  load.access.mask = 0;
  expect_rejected(
      kernel_of({kernel::make_let(constant(0, DType::Float32)), kernel::make_let(load)}),
      "mask is not bool");
}

TEST(KernelVerifier, RejectsDivisionChecksOnFloats) {
  Stmt c;
  c.kind = StmtKind::Check;
  c.value = 0;
  c.error_code = 1;
  expect_rejected(kernel_of({kernel::make_let(constant(0, DType::Float32)), c}),
                  "a division check on a f32 divisor");
}

TEST(KernelPrinter, PrintsCallsLocalArraysAndLiterals) {
  Stmt call;
  call.kind = StmtKind::Call;
  call.name = "stax_sgemm";
  call.call_args = {{kernel::CallArg::Kind::Buffer, "w", -1, 0},
                    {kernel::CallArg::Kind::Value, "", 0, 0},
                    {kernel::CallArg::Kind::Integer, "", -1, 64}};
  Stmt local;
  local.kind = StmtKind::LocalArray;
  local.name = "buf3";
  local.dtype = DType::Float32;
  local.elements = 128;
  Kernel k = kernel_of({kernel::make_let(constant(0, DType::Float32)), local, call});
  k.buffer_is_input["w"] = true;
  EXPECT_NO_THROW(kernel::verify(k, "test pass"));
  EXPECT_EQ(kernel::print_kernel(k),
            "const float tmp0 = 1.0f;\n"
            "alignas(64) float buf3[128];\n"
            "stax_sgemm(in_w, tmp0, 64);\n");
  EXPECT_EQ(kernel::cpp_literal(-0.0, DType::Float32), "-0.0f");
  EXPECT_EQ(kernel::cpp_literal(0.1, DType::Float64), "0.10000000000000001");
  EXPECT_EQ(kernel::cpp_literal(int64_t{-128}, DType::Int8), "static_cast<int8_t>(-128)");
  EXPECT_EQ(kernel::cpp_literal(std::numeric_limits<int64_t>::min(), DType::Int64),
            "(-9223372036854775807LL - 1)");
  // Integers print exactly, converted to the dtype as PyTorch converts a scalar (wrapping).
  EXPECT_EQ(kernel::cpp_literal(std::numeric_limits<int64_t>::max(), DType::Int64),
            "static_cast<int64_t>(9223372036854775807LL)");
  EXPECT_EQ(kernel::cpp_literal((int64_t{1} << 53) + 1, DType::Int64),
            "static_cast<int64_t>(9007199254740993LL)");
  EXPECT_EQ(kernel::cpp_literal(int64_t{300}, DType::Int8), "static_cast<int8_t>(44)");
  EXPECT_EQ(kernel::cpp_literal(int64_t{-1}, DType::UInt8), "static_cast<uint8_t>(255)");
  EXPECT_EQ(kernel::cpp_literal(std::numeric_limits<int64_t>::max(), DType::Float64),
            "9.2233720368547758e+18");
  // An integer type's reduction identities are its extremes, exactly.
  EXPECT_EQ(
      kernel::cpp_literal(kernel::reduction_identity(lowering::ReductionType::Max, DType::Int64),
                          DType::Int64),
      "(-9223372036854775807LL - 1)");
  EXPECT_EQ(
      kernel::cpp_literal(kernel::reduction_identity(lowering::ReductionType::Min, DType::Int64),
                          DType::Int64),
      "static_cast<int64_t>(9223372036854775807LL)");
  EXPECT_EQ(
      kernel::cpp_literal(kernel::reduction_identity(lowering::ReductionType::Max, DType::UInt8),
                          DType::UInt8),
      "static_cast<uint8_t>(0)");
  EXPECT_EQ(kernel::cpp_literal(HUGE_VAL, DType::Float32), "__builtin_inff()");
  EXPECT_EQ(kernel::cpp_value_type({DType::Int8, 32}), "stax::Vec<int8_t, 32>");
}

// ForKind and SchedulePolicy (kernel_ir.h): the work sharing is a property of the Loop, set
// by the passes, printed from it, and checked by the verifier.
kernel::Loop counted(const std::string& var, int64_t end) {
  kernel::Loop l;
  l.var = var;
  l.end = index::Expr(end);
  return l;
}

kernel::Loop parallel(const std::string& var, int64_t end, int collapse) {
  kernel::Loop l = counted(var, end);
  l.kind = kernel::ForKind::Parallel;
  l.collapse = collapse;
  return l;
}

TEST(KernelLoopKind, PassesMarkTheWorkSharedLoopsParallelAndStatic) {
  auto split = schedule_text("def f(x: f32[100003]):\n    s = sum(x)\n    return s\n");
  const auto k = lower_all(*split, avx512(4)).at(0);
  ASSERT_TRUE(k.decisions.split_reduction);
  int shared = 0;
  kernel::for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind != StmtKind::Loop || s.loop->kind != kernel::ForKind::Parallel) return;
    ++shared;
    EXPECT_EQ(s.loop->role, kernel::LoopRole::Reduction);
    EXPECT_EQ(s.loop->schedule, kernel::SchedulePolicy::Static);
    EXPECT_EQ(s.loop->collapse, 1);
  });
  EXPECT_EQ(shared, 1);
  auto rows = schedule_text("def f(x: f32[64, 64, 64]):\n    y = exp(x)\n    return y\n");
  const auto p = lower_all(*rows, avx512(4)).at(0);
  int parallel_loops = 0;
  kernel::for_each_stmt(p.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Loop && s.loop->kind == kernel::ForKind::Parallel) {
      ++parallel_loops;
      EXPECT_EQ(s.loop->collapse, p.decisions.parallel_depth);
    }
  });
  EXPECT_EQ(parallel_loops, 1);
  EXPECT_TRUE(contains(
      kernel::print_kernel(p),
      "omp for collapse(" + std::to_string(p.decisions.parallel_depth) + ") schedule(static)"));
  // One thread: nothing is shared.
  for (const auto& serial : lower_all(*rows, avx512(1))) {
    kernel::for_each_stmt(serial.body, [&](const Stmt& s) {
      if (s.kind == StmtKind::Loop) {
        EXPECT_EQ(s.loop->kind, kernel::ForKind::Serial);
      }
    });
  }
}

TEST(KernelLoopKind, VerifierRejectsNestedOrImperfectWorkSharing) {
  // A parallel loop inside a parallel loop.
  kernel::Block inner = {kernel::make_loop(parallel("x1", 8, 1), {})};
  Kernel nested = kernel_of({kernel::make_loop(parallel("x0", 8, 1), inner)});
  nested.ranges.extents["x1"] = 8;
  expect_rejected(nested, "inside work that is already shared");
  // collapse(2) over a loop whose body holds more than the next loop.
  kernel::Block imperfect = {kernel::make_let(constant(0, DType::Float32)),
                             kernel::make_loop(counted("x1", 8), {})};
  Kernel two = kernel_of({kernel::make_loop(parallel("x0", 8, 2), imperfect)});
  two.ranges.extents["x1"] = 8;
  expect_rejected(two, "not perfectly nested");
  // collapse(2) over a perfect nest (comments allowed) is fine, and prints its policy.
  kernel::Block perfect = {kernel::make_comment("row"), kernel::make_loop(counted("x1", 8), {})};
  Kernel ok = kernel_of({kernel::make_loop(parallel("x0", 8, 2), perfect)});
  ok.ranges.extents["x1"] = 8;
  EXPECT_NO_THROW(kernel::verify(ok, "test pass"));
  EXPECT_TRUE(contains(kernel::print_kernel(ok), "#pragma omp for collapse(2) schedule(static)"))
      << kernel::print_kernel(ok);
  // A parallel loop in a single block.
  Stmt single;
  single.kind = StmtKind::Single;
  single.body.push_back(kernel::make_loop(parallel("x0", 8, 1), {}));
  expect_rejected(kernel_of({single}), "already shared");
}

}  // namespace
}  // namespace stax::kernel_test
