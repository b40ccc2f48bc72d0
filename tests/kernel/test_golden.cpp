// Golden replays: the generated C++ of a fixed set of programs is snapshotted in
// tests/golden/kernels and diffed, so a refactor shows that it changes no kernel and an
// intended change updates the snapshots in the same commit. STAX_UPDATE_GOLDEN=1 rewrites
// them (scripts/update_golden.sh).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/cpp_codegen.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

struct GoldenProgram {
  std::string name;
  std::string path;  // a .stax file, or empty for `text`
  std::string text;
  runtime::SimdLevel simd = runtime::SimdLevel::Avx512;
  int threads = 4;
  bool with_library = false;  // contractions as external calls (kernel_test_util.h)
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<GoldenProgram> programs() {
  const std::string ex = STAX_EXAMPLES_DIR;
  const std::string bench = STAX_BENCH_DIR;
  std::vector<GoldenProgram> p;
  for (const char* e : {"example_1_1", "example_7_1", "example_7_2"}) {
    p.push_back({e, ex + "/" + e + ".stax", "", runtime::SimdLevel::Avx512, 4});
  }
  for (const char* b : {"column_sum", "example_7_2_large", "full_sum", "gelu_tanh_bias",
                        "layernorm", "softmax", "transpose_add"}) {
    p.push_back({b, bench + "/" + b + ".stax", "", runtime::SimdLevel::Avx512, 4});
  }
  // Small shapes that reach the other forms: a column reduction with a remainder and a tail,
  // a split reduction with a tail, a tiled transpose with tails, localized softmax rows, the
  // AVX2 and scalar levels.
  p.push_back({"column_reduction_tails", "",
               "def f(x: f32[300, 200]):\n    s = sum(x, dim=[0])\n    return s\n"});
  p.push_back({"split_reduction_tail", "",
               "def f(x: f32[100003]):\n    s = sum(x)\n    m = amin(x)\n    return s, m\n"});
  p.push_back({"tiled_transpose_tails", "",
               "def f(x: f32[130, 70], y: f32[70, 130]):\n    t = transpose(y, 0, 1)\n"
               "    z = mul(x, t)\n    return z\n"});
  p.push_back({"localized_softmax", "",
               "def f(x: f32[32, 1000]):\n    m = amax(x, dim=[1], keepdim=True)\n"
               "    d = sub(x, m)\n    e = exp(d)\n    s = sum(e, dim=[1], keepdim=True)\n"
               "    y = div(e, s)\n"
               "    return y\n"});
  // Issue 14: a linear layer and its GELU, the product an external call between two kernel
  // functions (its weight read transposed as a layout), and an integer product, which no
  // library computes: a loop nest of products summed in int64, converted to int32.
  p.push_back({"linear_gelu_external", "",
               "def f(x: f32[64, 96], w: f32[48, 96], b: f32[48]):\n"
               "    n = neg(x)\n    wt = permute(w, [1, 0])\n    y = addmm(b, n, wt)\n"
               "    g = gelu(y)\n    return g\n",
               runtime::SimdLevel::Avx512, 2, true});
  p.push_back({"int_mm_loop_nest", "",
               "def f(a: i32[16, 24], b: i32[24, 8]):\n    c = mm(a, b)\n    return c\n",
               runtime::SimdLevel::Avx512, 2});
  p.push_back({"softmax_avx2", bench + "/softmax.stax", "", runtime::SimdLevel::Avx2, 2});
  p.push_back({"layernorm_scalar", bench + "/layernorm.stax", "", runtime::SimdLevel::Scalar, 1});
  return p;
}

class GoldenReplay : public ::testing::TestWithParam<GoldenProgram> {};

TEST_P(GoldenReplay, GeneratedCodeMatchesTheSnapshot) {
  const GoldenProgram& p = GetParam();
  auto s = schedule_text(p.path.empty() ? p.text : read(p.path), p.with_library);
  codegen::CodegenOptions options;
  options.simd = p.simd;
  options.num_threads = p.threads;
  options.verify_ir = true;
  const std::string source = codegen::generate_cpp(s->schedule, options).source;
  const std::filesystem::path golden = std::filesystem::path(STAX_GOLDEN_DIR) / (p.name + ".cpp");
  const char* update = std::getenv("STAX_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::filesystem::create_directories(golden.parent_path());
    std::ofstream(golden) << source;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(golden))
      << golden << " is missing: run scripts/update_golden.sh (STAX_UPDATE_GOLDEN=1)";
  const std::string expected = read(golden.string());
  if (expected == source) return;
  // Name the first line that differs.
  std::istringstream a(expected), b(source);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL() << "the generated C++ of " << p.name << " differs from " << golden << " at line " << line
         << ":\n  snapshot:  " << la << "\n  generated: " << lb
         << "\n(an intended change: run scripts/update_golden.sh and commit the snapshots)";
}

INSTANTIATE_TEST_SUITE_P(Programs, GoldenReplay, ::testing::ValuesIn(programs()),
                         [](const auto& info) { return info.param.name; });

TEST(GoldenReplayCoverage, TheSnapshotsCoverEveryForm) {
  // The programs above must keep reaching the forms they are there for.
  std::string all;
  for (const GoldenProgram& p : programs()) {
    auto s = schedule_text(p.path.empty() ? p.text : read(p.path), p.with_library);
    codegen::CodegenOptions options;
    options.simd = p.simd;
    options.num_threads = p.threads;
    for (const auto& k : codegen::generate_cpp(s->schedule, options).kernels) {
      for (const auto& l : k.loops) {
        for (const auto& f : l.nest_forms) all += f + "\n";
      }
    }
  }
  for (const char* form : {"tiled(T=48)", "one output per lane", "split across threads",
                           "vectorized(W=8)", "scalar"}) {
    EXPECT_TRUE(contains(all, form)) << form << " not reached:\n" << all;
  }
}

}  // namespace
}  // namespace stax::kernel_test
