// Helpers shared by the code-generation tests: a fixture parameterized over (SIMD level,
// threads) that compiles graphs (several at once, on all cores), runs them and checks every
// output against the eager oracle within its output_tolerances.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"
#include "runtime/simd.h"
#include "runtime/tensor.h"

namespace stax::runtime {
// Readable test parameters in gtest messages.
inline void PrintTo(SimdLevel level, std::ostream* os) {
  *os << simd_level_name(level);
}
}  // namespace stax::runtime

namespace stax::codegen_test {

using runtime::SimdLevel;

// "[3, 17]" for the text format.
inline std::string dims(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// "3x17" for test names.
inline std::string shape_tag(const std::vector<int64_t>& sizes) {
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "x" : "") + std::to_string(sizes[i]);
  return s;
}

inline Tensor random_f32(const std::vector<int64_t>& sizes, uint64_t seed) {
  return eager::random_tensor(DType::Float32, sizes, seed);
}

// Random values in [-1, 1) laid out with `strides` (any layout, stride 0 included).
inline Tensor random_f32_strided(const std::vector<int64_t>& sizes,
                                 const std::vector<int64_t>& strides, uint64_t seed) {
  return eager::random_tensor_strided(DType::Float32, sizes, strides, seed);
}

// Random values in [0.5, 1.5): safe for log, sqrt, division and non-integer powers.
inline Tensor positive_f32(const std::vector<int64_t>& sizes, uint64_t seed) {
  Tensor t = random_f32(sizes, seed);
  for (int64_t p = 0; p < t.numel(); ++p) t.set_flat(p, std::fabs(t.get_flat(p)) + 0.5);
  return t;
}

// A contiguous tensor holding `values` in row-major order.
inline Tensor make_f32(const std::vector<int64_t>& sizes, const std::vector<double>& values) {
  Tensor t = Tensor::empty(DType::Float32, sizes);
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw std::invalid_argument("make_f32: wrong number of values");
  }
  for (int64_t p = 0; p < t.numel(); ++p) t.set_flat(p, values[static_cast<size_t>(p)]);
  return t;
}

struct Case {
  std::string name;  // for failure messages
  ir::Graph graph;
  std::vector<Tensor> inputs;
  bool fuse = true;
};

inline Case make_case(std::string name, const std::string& text, std::vector<Tensor> inputs) {
  ir::Graph g = ir::parse_graph(text, name);
  return Case{std::move(name), std::move(g), std::move(inputs), true};
}

// Up to `limit` mismatching elements of `actual` vs `expected` as "[i, j]: got a, want e".
inline std::string describe_mismatches(const Tensor& actual, const Tensor& expected, double rtol,
                                       double atol, int limit = 8) {
  std::ostringstream out;
  if (actual.sizes() != expected.sizes()) {
    out << "sizes " << shape_to_string(actual.sizes()) << " != expected "
        << shape_to_string(expected.sizes());
    return out.str();
  }
  int shown = 0;
  int64_t total = 0;
  for (int64_t p = 0; p < expected.numel(); ++p) {
    const double a = actual.get_flat(p);
    const double e = expected.get_flat(p);
    const bool ok = a == e || (std::isnan(a) && std::isnan(e)) ||
                    (std::isfinite(a - e) && std::fabs(a - e) <= atol + rtol * std::fabs(e));
    if (ok) continue;
    ++total;
    if (shown++ < limit) {
      out << "\n    at " << shape_to_string(unravel_index(p, expected.sizes())) << ": got " << a
          << ", want " << e;
    }
  }
  out << "\n    (" << total << " of " << expected.numel() << " elements differ)";
  return out.str();
}

// Checks every output of `compiled` against the eager oracle on the same inputs.
inline void expect_matches_oracle(const std::string& name, const ir::Graph& graph,
                                  const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& actual) {
  const std::vector<Tensor> expected = eager::run(graph, inputs);
  ASSERT_EQ(actual.size(), expected.size()) << name << ": number of outputs";
  const std::vector<Tolerance> tolerances = output_tolerances(graph);
  for (size_t i = 0; i < expected.size(); ++i) {
    const std::string& out_name = graph.value(graph.outputs()[i]).name;
    const std::string where = name + ", output " + std::to_string(i) + " '" + out_name + "'";
    EXPECT_EQ(actual[i].dtype(), expected[i].dtype()) << where;
    ASSERT_EQ(actual[i].sizes(), expected[i].sizes()) << where;
    const Tolerance& tol = tolerances[i];
    const eager::Difference d = eager::compare(actual[i], expected[i], tol.rtol, tol.atol);
    EXPECT_TRUE(d.within_tolerance)
        << where << ": max abs diff " << d.max_abs << ", max rel diff " << d.max_rel << " (rtol "
        << tol.rtol << ", atol " << tol.atol << ")"
        << describe_mismatches(actual[i], expected[i], tol.rtol, tol.atol);
  }
}

// Compiles every case (in parallel: each compile is mostly a g++ process).
inline std::vector<std::optional<CompiledGraph>> compile_all(const std::vector<Case>& cases,
                                                             const CompileOptions& base,
                                                             std::vector<std::string>& errors) {
  std::vector<std::optional<CompiledGraph>> compiled(cases.size());
  errors.assign(cases.size(), "");
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      try {
        CompileOptions o = base;
        o.fuse = cases[i].fuse;
        compiled[i] = compile(cases[i].graph, o);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  const size_t workers =
      std::min<size_t>(cases.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return compiled;
}

using Param = std::tuple<SimdLevel, int>;

inline std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(runtime::simd_level_name(std::get<0>(info.param))) + "_t" +
         std::to_string(std::get<1>(info.param));
}

// Scalar, AVX2 and AVX-512, each with 1 and 2 threads. Levels the CPU lacks are still
// compiled (the generated code must build); running them must throw std::runtime_error.
inline auto all_params() {
  return ::testing::Combine(
      ::testing::Values(SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512),
      ::testing::Values(1, 2));
}

class CodegenTest : public ::testing::TestWithParam<Param> {
 protected:
  SimdLevel level() const { return std::get<0>(GetParam()); }
  int threads() const { return std::get<1>(GetParam()); }
  bool runnable() const { return runtime::cpu_supports(level()); }

  CompileOptions options() const {
    CompileOptions o;
    o.simd = level();
    o.num_threads = threads();
    return o;
  }

  CompiledGraph compile_one(const ir::Graph& graph, bool fuse = true) const {
    CompileOptions o = options();
    o.fuse = fuse;
    return compile(graph, o);
  }

  // Compiles all cases, then runs each and compares it with the oracle (or, at a level the
  // CPU lacks, checks that running throws std::runtime_error).
  void check_all(const std::vector<Case>& cases) const {
    std::vector<std::string> errors;
    auto compiled = compile_all(cases, options(), errors);
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(cases[i].name);
      if (!compiled[i]) {
        ADD_FAILURE() << cases[i].name << ": compile failed: " << errors[i];
        continue;
      }
      run_and_check(cases[i], *compiled[i]);
    }
  }

  void check(const Case& c) const { check_all({c}); }

  // Runs one compiled case; returns the outputs (empty when the level is not runnable).
  std::vector<Tensor> run_and_check(const Case& c, const CompiledGraph& compiled) const {
    if (!runnable()) {
      EXPECT_THROW(compiled.run(c.inputs), std::runtime_error) << c.name;
      return {};
    }
    std::vector<Tensor> actual;
    try {
      actual = compiled.run(c.inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.name << ": run threw: " << e.what();
      return {};
    }
    expect_matches_oracle(c.name, c.graph, c.inputs, actual);
    return actual;
  }
};

}  // namespace stax::codegen_test
