// Nests of every vector width (Section 8.1, kernel/vector_width.h), compiled vs the eager
// oracle at every SIMD level and thread count: float64 and int64 nests take one register of
// 8-byte lanes, int8, uint8 and bool nests one of 1-byte lanes, bfloat16 nests float32's
// lanes (they compute in float). Pointwise ops, row and column reductions, each with a masked
// tail at every width (the extents are no multiple of 4).
#include "codegen_test_util.h"

namespace stax::codegen_test {
namespace {

struct WidthCase {
  std::string name;
  std::string program;
  std::vector<std::pair<DType, std::vector<int64_t>>> inputs;
  std::vector<DType> widths;  // each nest's lanes are one register of one of these
};

std::vector<WidthCase> width_cases() {
  return {
      {"float64",
       "def f(x: f64[5, 37], y: f64[5, 37]):\n    m = mul(x, y)\n    p = add(m, 1.5)\n"
       "    e = exp(x)\n    s = sum(x, dim=[1])\n    c = sum(y, dim=[0])\n"
       "    a = amax(x, dim=[1])\n    return p, e, s, c, a\n",
       {{DType::Float64, {5, 37}}, {DType::Float64, {5, 37}}},
       {DType::Float64}},
      {"int64",
       "def f(x: i64[3, 41], y: i64[3, 41]):\n    t = add(x, y)\n    p = mul(t, 3)\n"
       "    s = sum(x, dim=[1])\n    c = amin(y, dim=[0])\n    return p, s, c\n",
       {{DType::Int64, {3, 41}}, {DType::Int64, {3, 41}}},
       {DType::Int64}},
      // The products wrap in int8; the sum accumulates in int64 (PyTorch's), at its lanes.
      {"int8",
       "def f(x: i8[4, 131], y: i8[4, 131]):\n    m = mul(x, y)\n    p = mul(m, y)\n"
       "    q = bitwise_xor(x, y)\n    a = amax(x, dim=[1])\n    s = sum(y, dim=[1])\n"
       "    return p, q, a, s\n",
       {{DType::Int8, {4, 131}}, {DType::Int8, {4, 131}}},
       {DType::Int8, DType::Int64}},
      {"uint8",
       "def f(x: u8[3, 139], y: u8[3, 139]):\n    p = add(x, y)\n    a = amin(x, dim=[1])\n"
       "    c = amax(y, dim=[0])\n    return p, a, c\n",
       {{DType::UInt8, {3, 139}}, {DType::UInt8, {3, 139}}},
       {DType::UInt8}},
      {"bool",
       "def f(x: bool[3, 133], y: bool[3, 133]):\n    a = logical_and(x, y)\n"
       "    o = logical_or(x, y)\n    n = any(x, dim=[1])\n    l = all(y, dim=[1])\n"
       "    return a, o, n, l\n",
       {{DType::Bool, {3, 133}}, {DType::Bool, {3, 133}}},
       {DType::Bool}},
      {"bfloat16",
       "def f(x: bf16[5, 37], y: bf16[5, 37]):\n    m = mul(x, y)\n    p = add(m, 1.5)\n"
       "    e = exp(x)\n    s = sum(x, dim=[1])\n    c = amax(y, dim=[0])\n"
       "    return p, e, s, c\n",
       {{DType::BFloat16, {5, 37}}, {DType::BFloat16, {5, 37}}},
       {DType::Float32}},
  };
}

class DtypeWidths : public CodegenTest {};

TEST_P(DtypeWidths, EveryWidthMatchesTheOracle) {
  std::vector<Case> cases;
  const auto width = width_cases();
  for (const WidthCase& w : width) {
    std::vector<Tensor> inputs;
    uint64_t seed = 11;
    for (const auto& [dtype, sizes] : w.inputs) {
      inputs.push_back(eager::random_tensor(dtype, sizes, seed++));
    }
    cases.push_back(make_case(w.name, w.program, std::move(inputs)));
  }
  std::vector<std::string> errors;
  const auto compiled = compile_all(cases, options(), errors);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    ASSERT_TRUE(compiled[i]) << errors[i];
    // The nests took the widths of their types (the oracle comparison below holds at any).
    target::Target target;
    target.simd = level();
    std::string forms;
    for (const auto& k : compiled[i]->compilation().module.kernels) {
      for (const auto& l : k.loops) {
        for (const std::string& f : l.nest_forms) forms += f + "\n";
      }
    }
    for (DType d : width[i].widths) {
      const std::string w = level() == SimdLevel::Scalar
                                ? "scalar"
                                : "(W=" + std::to_string(target.vector_lanes(d)) + ")";
      EXPECT_NE(forms.find(w), std::string::npos) << w << " not among\n" << forms;
    }
    run_and_check(cases[i], *compiled[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, DtypeWidths, all_params(), param_name);

}  // namespace
}  // namespace stax::codegen_test
