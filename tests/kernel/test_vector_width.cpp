// The vector width of a nest (Section 8.1, kernel/vector_width.h): one register of the widest
// type the nest computes in along its vectorized loop, recorded with its reason. Decisions
// only (no compilation): each rule at both vector levels, the lanes taken from the target.
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using runtime::SimdLevel;

const SimdLevel kVectorLevels[] = {SimdLevel::Avx512, SimdLevel::Avx2};

kernel::TargetOptions at(SimdLevel simd) {
  return {simd, 1, {}};
}

// The decision of the single nest of the single kernel of `program` at `simd`.
kernel::NestDecision only_nest(const std::string& program, SimdLevel simd) {
  auto s = schedule_text(program);
  const auto ks = lower_all(*s, at(simd));
  EXPECT_EQ(ks.size(), 1u) << program;
  EXPECT_EQ(ks.at(0).decisions.nests.size(), 1u) << program;
  return ks.at(0).decisions.nests.at(0);
}

int lanes(SimdLevel simd, DType dtype) {
  return static_cast<int>(at(simd).vector_lanes(dtype));
}

TEST(VectorWidth, Float64NestTakesOneRegisterOfDoubles) {
  for (SimdLevel simd : kVectorLevels) {
    const auto d = only_nest(
        "def f(x: f64[5, 37], y: f64[5, 37]):\n    z = add(x, y)\n"
        "    return z\n",
        simd);
    EXPECT_EQ(d.form, kernel::KernelForm::Vectorized);
    EXPECT_EQ(d.vector_width, at(simd).vector_register_bytes() / 8)
        << runtime::simd_level_name(simd);
    EXPECT_TRUE(contains(d.vector_width_reason, "f64 is the widest type computed along "))
        << d.vector_width_reason;
  }
}

TEST(VectorWidth, Float32NestKeepsFloat32Lanes) {
  for (SimdLevel simd : kVectorLevels) {
    const auto d = only_nest("def f(x: f32[5, 37]):\n    z = exp(x)\n    return z\n", simd);
    EXPECT_EQ(d.vector_width, lanes(simd, DType::Float32)) << runtime::simd_level_name(simd);
    EXPECT_TRUE(contains(d.vector_width_reason, "f32 is the widest")) << d.vector_width_reason;
  }
}

TEST(VectorWidth, SixteenBitFloatsComputeInFloat32Lanes) {
  for (SimdLevel simd : kVectorLevels) {
    for (const char* t : {"bf16", "f16"}) {
      const auto d = only_nest("def f(x: " + std::string(t) + "[5, 37], y: " + t +
                                   "[5, 37]):\n    z = mul(x, y)\n    return z\n",
                               simd);
      EXPECT_EQ(d.vector_width, lanes(simd, DType::Float32))
          << t << " at " << runtime::simd_level_name(simd);
    }
  }
}

TEST(VectorWidth, NarrowIntegerAndBoolNestsFillARegister) {
  for (SimdLevel simd : kVectorLevels) {
    const auto i8 = only_nest(
        "def f(x: i8[5, 131], y: i8[5, 131]):\n    z = bitwise_xor(x, y)\n    return z\n", simd);
    EXPECT_EQ(i8.vector_width, lanes(simd, DType::Int8)) << runtime::simd_level_name(simd);
    const auto b = only_nest(
        "def f(x: bool[5, 131], y: bool[5, 131]):\n    z = logical_and(x, y)\n    return z\n",
        simd);
    EXPECT_EQ(b.vector_width, lanes(simd, DType::Bool)) << runtime::simd_level_name(simd);
  }
}

TEST(VectorWidth, MixedNestTakesTheWidestTypesLanes) {
  for (SimdLevel simd : kVectorLevels) {
    // float32 loads, a float64 add, a float64 store.
    const auto widened =
        only_nest("def f(x: f32[5, 37], y: f64[5, 37]):\n    z = add(x, y)\n    return z\n", simd);
    EXPECT_EQ(widened.vector_width, lanes(simd, DType::Float64)) << runtime::simd_level_name(simd);
    // int8 loads converted to and stored as int32.
    const auto converted =
        only_nest("def f(x: i8[5, 131]):\n    z = _to_copy(x, dtype='i32')\n    return z\n", simd);
    EXPECT_EQ(converted.vector_width, lanes(simd, DType::Int32)) << runtime::simd_level_name(simd);
    EXPECT_TRUE(contains(converted.vector_width_reason, "i32 is the widest"))
        << converted.vector_width_reason;
  }
}

TEST(VectorWidth, IntegerSumsTakeTheirInt64AccumulatorsLanes) {
  // PyTorch sums integers in int64: the accumulator, not the int8 loads, sets the width.
  for (SimdLevel simd : kVectorLevels) {
    const auto d =
        only_nest("def f(x: i8[3, 141]):\n    s = sum(x, dim=[1])\n    return s\n", simd);
    EXPECT_EQ(d.vector_var, "r0");
    EXPECT_EQ(d.vector_width, lanes(simd, DType::Int64)) << runtime::simd_level_name(simd);
  }
}

TEST(VectorWidth, IndexArithmeticDoesNotWidenAFloat32Nest) {
  // The int64 index vectors of an argmax, and an int64 position computed from the loop index
  // and cast to float (y = x + float(2 * i)), follow the float32 data's lanes: the
  // index-narrowing pass makes such vectors int32 where they fit.
  for (SimdLevel simd : kVectorLevels) {
    const auto arg =
        only_nest("def f(x: f32[3, 141]):\n    a = argmax(x, dim=1)\n    return a\n", simd);
    EXPECT_EQ(arg.vector_width, lanes(simd, DType::Float32)) << runtime::simd_level_name(simd);
    const int64_t n = 100;
    auto body = [](lowering::OpsHandler& h, const std::vector<index::Expr>& idx,
                   const std::vector<index::Expr>&) {
      const lowering::OpsValue position = lowering::apply(
          h, lowering::PointwiseOp::Mul,
          {h.index_value(idx[0], DType::Int64), h.constant(int64_t{2}, DType::Int64)});
      return lowering::apply(
          h, lowering::PointwiseOp::Add,
          {h.load("x", idx[0], DType::Float32), h.to_dtype(position, DType::Float32)});
    };
    auto s = schedule_lowered(
        make_graph({{"x", DType::Float32, {n}}}, {make_buffer("y", DType::Float32, {n}, body)}));
    const auto ks = lower_all(*s, at(simd));
    ASSERT_EQ(ks.size(), 1u);
    const kernel::NestDecision& d = ks[0].decisions.nests.at(0);
    EXPECT_EQ(d.form, kernel::KernelForm::Vectorized) << d.reason;
    EXPECT_EQ(d.vector_width, lanes(simd, DType::Float32))
        << runtime::simd_level_name(simd) << ": " << d.vector_width_reason << "\n"
        << kernel::print_kernel(ks[0]);
  }
}

TEST(VectorWidth, ExplainShowsTheWidthAndItsReason) {
  auto s = schedule_text("def f(x: f64[100]):\n    y = exp(x)\n    return y\n");
  const auto k = lower_all(*s, avx512()).at(0);
  EXPECT_EQ(kernel::nest_form_names(k), (std::vector<std::string>{"vectorized(W=8) over x0"}));
  const std::string text = kernel::describe_after_pass("simplify", k);
  EXPECT_TRUE(contains(text,
                       "//   W=8: f64 is the widest type computed along x0: 8 lanes "
                       "fill one 64-byte avx512 register"))
      << text;
  EXPECT_TRUE(contains(text, "stax::Vec<double, 8>::load(in_x + x0, 4)")) << text;
}

}  // namespace
}  // namespace stax::kernel_test
