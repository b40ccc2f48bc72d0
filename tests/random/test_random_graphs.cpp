// Property test: random graphs of pointwise ops, broadcasts, reductions and views, compiled
// (fusion, loop simplification, vectorized and scalar forms, 1 and 2 threads) and compared
// with the eager oracle. The op mix avoids ill-conditioned results (denominators >= 1, no
// comparisons as outputs) so that any mismatch beyond tolerance is a compiler bug.
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"

namespace stax {
namespace {

// Shapes of values in the pool: full [R, C], row vector [C], column [R, 1].
enum class Shape { Full, Row, Column };

struct PoolValue {
  std::string name;
  Shape shape;
};

class ProgramGenerator {
 public:
  explicit ProgramGenerator(uint32_t seed) : rng_(seed) {}

  std::string generate() {
    const int64_t sizes[] = {1, 3, 7, 8, 16, 17, 33};
    rows_ = sizes[pick(7)];
    cols_ = sizes[pick(7)];
    std::ostringstream def;
    def << "def g(x: f32[" << rows_ << ", " << cols_ << "], y: f32[" << rows_ << ", " << cols_
        << "]";
    if (pick(2) && rows_ > 1 && cols_ > 1) def << " strides=[1, " << rows_ << "]";  // transposed
    def << ", z: f32[" << cols_ << "], w: f32[" << rows_ << ", 1]):\n";
    pool_ = {{"x", Shape::Full}, {"y", Shape::Full}, {"z", Shape::Row}, {"w", Shape::Column}};
    const int steps = 4 + pick(8);
    for (int s = 0; s < steps; ++s) step();
    body_ << "    return ";
    const int outputs = 1 + pick(3);
    for (int k = 0; k < outputs; ++k) {
      body_
          << (k ? ", " : "")
          << pool_[pool_.size() - 1 -
                   static_cast<size_t>(pick(std::min<int>(3, static_cast<int>(pool_.size()) - 4)))]
                 .name;
    }
    body_ << "\n";
    return def.str() + body_.str();
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  PoolValue any() { return pool_[static_cast<size_t>(pick(static_cast<int>(pool_.size())))]; }
  PoolValue full() {
    for (;;) {
      const PoolValue v = any();
      if (v.shape == Shape::Full) return v;
    }
  }
  std::string fresh() { return "v" + std::to_string(counter_++); }
  void emit(const std::string& name, const std::string& expr, Shape shape) {
    body_ << "    " << name << " = " << expr << "\n";
    pool_.push_back({name, shape});
  }

  void step() {
    static const char* kUnary[] = {"neg", "abs", "tanh", "sigmoid", "relu"};
    static const char* kBinary[] = {"add", "sub", "mul", "maximum", "minimum"};
    static const char* kReduce[] = {"sum", "amax", "amin", "mean"};
    const int kind = pick(10);
    if (kind == 0) {
      const PoolValue v = any();
      emit(fresh(), std::string(kUnary[pick(5)]) + "(" + v.name + ")", v.shape);
    } else if (kind == 1) {
      const PoolValue v = any();
      const std::string t = fresh();
      emit(t, "tanh(" + v.name + ")", v.shape);
      emit(fresh(), "exp(" + t + ")", v.shape);
    } else if (kind <= 3) {
      const PoolValue a = full();
      const PoolValue b = any();
      emit(fresh(), std::string(kBinary[pick(5)]) + "(" + a.name + ", " + b.name + ")",
           Shape::Full);
    } else if (kind == 4) {
      const PoolValue a = full();
      const PoolValue b = any();
      const std::string d = fresh();
      emit(d, "abs(" + b.name + ")", b.shape);
      const std::string d1 = fresh();
      emit(d1, "add(" + d + ", 1.0)", b.shape);
      emit(fresh(), "div(" + a.name + ", " + d1 + ")", Shape::Full);
    } else if (kind == 5) {
      const PoolValue a = full();
      const bool rows = pick(2) == 0;  // reduce over dim 1 (-> column) or dim 0 (-> row)
      const std::string op = kReduce[pick(4)];
      if (rows) {
        emit(fresh(), op + "(" + a.name + ", dim=[1], keepdim=True)", Shape::Column);
      } else {
        emit(fresh(), op + "(" + a.name + ", dim=[0])", Shape::Row);
      }
    } else if (kind == 6) {
      // A view round trip with div/mod indices: [R, C] -> [C, R] -> transpose -> [R, C].
      const PoolValue a = full();
      const std::string r = fresh();
      emit(
          r,
          "reshape(" + a.name + ", [" + std::to_string(cols_) + ", " + std::to_string(rows_) + "])",
          Shape::Full);
      pool_.pop_back();  // [C, R] is not in the pool's shapes
      emit(fresh(), "transpose(" + r + ", 0, 1)", Shape::Full);
    } else if (kind == 8) {
      // log / sqrt / rsqrt / pow of a positive operand.
      static const char* kPositive[] = {"log", "sqrt", "rsqrt", "pow"};
      const PoolValue v = any();
      const std::string a = fresh();
      emit(a, "abs(" + v.name + ")", v.shape);
      const std::string p = fresh();
      emit(p, "add(" + a + ", 1.0)", v.shape);
      const std::string op = kPositive[pick(4)];
      static const char* kExponents[] = {"2.0", "3.0", "0.5", "1.7"};
      emit(fresh(),
           op == "pow" ? "pow(" + p + ", " + kExponents[pick(4)] + ")" : op + "(" + p + ")",
           v.shape);
    } else if (kind == 9 && rows_ > 1 && cols_ > 1) {
      // Broadcast a row through unsqueeze/expand and a permute of a 3-D view.
      const PoolValue r = any();
      if (r.shape != Shape::Row) return;
      const std::string u = fresh();
      emit(u, "unsqueeze(" + r.name + ", 0)", Shape::Full);
      pool_.pop_back();
      emit(fresh(),
           "expand(" + u + ", [" + std::to_string(rows_) + ", " + std::to_string(cols_) + "])",
           Shape::Full);
    } else {
      const PoolValue a = full();
      const PoolValue b = any();
      const std::string c = fresh();
      emit(c, "gt(" + a.name + ", " + b.name + ")", Shape::Full);
      pool_.pop_back();  // comparisons are only consumed by where
      emit(fresh(), "where(" + c + ", " + a.name + ", " + b.name + ")", Shape::Full);
    }
  }

  std::mt19937 rng_;
  int64_t rows_ = 1;
  int64_t cols_ = 1;
  int counter_ = 0;
  std::vector<PoolValue> pool_;
  std::ostringstream body_;
};

constexpr uint32_t kGraphs = 120;

TEST(RandomGraphs, CompiledMatchesEager) {
  int checked = 0;
  for (uint32_t seed = 1; seed <= kGraphs; ++seed) {
    const std::string text = ProgramGenerator(seed).generate();
    SCOPED_TRACE(text);
    const ir::Graph graph = ir::parse_graph(text);
    std::vector<Tensor> inputs;
    uint64_t input_seed = seed * 10;
    for (auto ref : graph.inputs()) {
      const auto& v = graph.value(ref);
      inputs.push_back(
          eager::random_tensor_strided(v.type.dtype, v.type.sizes, v.type.strides, input_seed++));
    }
    const auto expected = eager::run(graph, inputs);
    const std::vector<Tolerance> tolerances = output_tolerances(graph);
    CompileOptions options;
    // Alternate SIMD levels and thread counts across seeds to bound the number of compiles.
    options.simd = seed % 3 == 0 ? runtime::SimdLevel::Scalar : runtime::detect_simd_level();
    options.num_threads = 1 + static_cast<int>(seed % 2);
    options.fuse = seed % 7 != 0;
    std::vector<Tensor> actual;
    try {
      actual = compile(graph, options).run(inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what();
      continue;
    }
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < actual.size(); ++k) {
      const Tolerance& tol = tolerances[k];
      const auto diff = eager::compare(actual[k], expected[k], tol.rtol, tol.atol);
      EXPECT_TRUE(diff.within_tolerance)
          << "output " << k << ": max abs " << diff.max_abs << ", max rel " << diff.max_rel;
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kGraphs));
}

}  // namespace
}  // namespace stax
