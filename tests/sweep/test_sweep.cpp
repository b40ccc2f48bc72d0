// The differential sweep (issue 6, point 9): every op x dtype of the catalogue compiled and
// compared with the eager oracle — floating results against float64 eager (or eager in the
// dtype where that is the reference) with PyTorch's default tolerances, integers and bools
// exactly — over tails around every vector width, large shapes, five input layouts, every
// SIMD level (compile-checked where the CPU lacks it) and 1, 2 and 3 threads.
//
// Environment: STAX_SWEEP_FULL=1 runs the whole cross product instead of the CI sample;
// STAX_SWEEP_SEED=N draws another sample; STAX_SWEEP_CASES=a,b,c runs only those cases and
// STAX_SWEEP_DTYPES=f32,i8 only those dtypes; STAX_SWEEP_SHARD=k/n every n-th of them;
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "fuzz/known_failures.h"
#include "fuzz/op_catalog.h"
#include "runtime/simd.h"
#include "sweep_plan.h"
#include "sweep_runner.h"

namespace stax::sweep {
namespace {

constexpr uint64_t kSeed = 20261201;

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}

uint64_t seed() {
  const char* v = std::getenv("STAX_SWEEP_SEED");
  return v != nullptr ? std::stoull(v) : kSeed;
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s.empty() ? "none" : s;
}

std::vector<const fuzz::CatalogEntry*> selected_cases() {
  std::set<std::string> only;
  if (const char* v = std::getenv("STAX_SWEEP_CASES")) {
    std::stringstream list(v);
    for (std::string name; std::getline(list, name, ',');) only.insert(name);
  }
  std::vector<const fuzz::CatalogEntry*> out;
  for (const fuzz::CatalogEntry& e : fuzz::op_catalog()) {
    if (fuzz::is_runnable(e) && (only.empty() || only.count(e.name))) out.push_back(&e);
  }
  return out;
}

// STAX_SWEEP_DTYPES, else every dtype; of those, with STAX_SWEEP_SHARD=k/n (CTest runs the
// suite as two shards in parallel), every n-th from the k-th.
std::vector<DType> selected_dtypes() {
  std::vector<DType> chosen = fuzz::all_dtypes();
  if (const char* v = std::getenv("STAX_SWEEP_DTYPES")) {
    chosen.clear();
    std::stringstream list(v);
    for (std::string name; std::getline(list, name, ',');) {
      const std::optional<DType> d = parse_dtype(name);
      if (!d) throw std::invalid_argument("STAX_SWEEP_DTYPES: '" + name + "' is not a dtype");
      chosen.push_back(*d);
    }
  }
  const char* shard = std::getenv("STAX_SWEEP_SHARD");
  if (shard == nullptr) return chosen;
  size_t k = 0, n = 1;
  if (std::sscanf(shard, "%zu/%zu", &k, &n) != 2 || n == 0 || k >= n) {
    throw std::invalid_argument(std::string("STAX_SWEEP_SHARD: expected k/n with k < n, got '") +
                                shard + "'");
  }
  std::vector<DType> out;
  for (size_t i = k; i < chosen.size(); i += n) out.push_back(chosen[i]);
  return out;
}

TEST(SweepCatalog, EveryRegisteredOpHasCases) {
  // A newly registered op must get catalogue cases, or the sweep and the fuzzer miss it.
  EXPECT_EQ(join(fuzz::uncatalogued_registered_ops()), "none");
}

TEST(SweepCatalog, EveryCatalogueOpIsRegistered) {
  // Every op of issue 6 (points 3, 4 and 6) is in the catalogue and must be registered.
  EXPECT_EQ(join(fuzz::missing_catalog_ops()), "none");
}

TEST(SweepCatalog, CasesAreNamedOnceAndAcceptSomeDtype) {
  std::set<std::string> names;
  for (const fuzz::CatalogEntry& e : fuzz::op_catalog()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name << " appears twice";
    EXPECT_NE(e.dtypes, 0) << e.name;
    EXPECT_FALSE(e.operands.empty()) << e.name;
  }
}

TEST(SweepPlan, CoversTailsLargeShapesLayoutsAndLevels) {
  // f32: widths 8 (AVX2) and 16 (AVX-512), so tails 1 ... 33; i8: 32 and 64, so 1 ... 129.
  EXPECT_EQ(tail_columns(DType::Float32).back(), 33);
  EXPECT_EQ(tail_columns(DType::Int8).back(), 129);
  for (DType dtype : fuzz::all_dtypes()) {
    const std::vector<Config> sample = plan_configs(dtype, false, kSeed);
    std::set<runtime::SimdLevel> levels;
    bool large = false;
    for (const Config& c : sample) {
      levels.insert(c.level);
      large |= c.rows * c.cols > 30000;
    }
    EXPECT_EQ(levels.size(), 3u) << dtype_name(dtype);
    EXPECT_TRUE(large) << dtype_name(dtype);
    const std::vector<Config> full = plan_configs(dtype, true, kSeed);
    EXPECT_EQ(full.size(),
              (tail_columns(dtype).size() + large_shapes().size()) * all_layouts().size() * 3);
  }
}

// The machinery finds a wrong result: exp of values up to 300 overflows float32 (compiled
// and eager in float32 agree on inf) but not float64, so against the float64 reference
// every overflowing element differs.
TEST(SweepRunner, ReportsAResultThatDiffersFromTheFloat64Reference) {
  fuzz::CatalogEntry overflowing;
  overflowing.op = "exp";
  overflowing.name = "exp.overflowing";
  overflowing.operands = {fuzz::Domain::Wide};
  overflowing.dtypes = fuzz::dtype_bit(DType::Float32);
  overflowing.call = [](const fuzz::CallSite& s) { return "exp(" + s.operands[0] + ")"; };
  const Config config{DType::Float32, 2, 9, Layout::Contiguous, runtime::SimdLevel::Scalar};
  const ConfigResult r = run_config(config, {&overflowing}, kSeed);
  ASSERT_EQ(r.failures.size(), 3u);  // one per thread count
  EXPECT_EQ(r.failures[0].stage, "compare");
  EXPECT_NE(r.failures[0].detail.find("against float64 eager"), std::string::npos)
      << r.failures[0].detail;
}

TEST(SweepRunner, ReportsACaseThatDoesNotBuild) {
  fuzz::CatalogEntry wrong;
  wrong.op = "add";
  wrong.name = "add.one_operand";
  wrong.operands = {fuzz::Domain::Any};
  wrong.dtypes = fuzz::dtype_bit(DType::Float32);
  wrong.call = [](const fuzz::CallSite& s) { return "add(" + s.operands[0] + ")"; };
  const Config config{DType::Float32, 2, 3, Layout::Contiguous, runtime::SimdLevel::Scalar};
  const ConfigResult r = run_config(config, {&wrong}, kSeed);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].stage, "build");
  EXPECT_NE(r.failures[0].detail.find("other"), std::string::npos) << r.failures[0].detail;
}

TEST(Sweep, CompiledMatchesEagerForEveryOpAndDtype) {
  const bool full = env_flag("STAX_SWEEP_FULL");
  const bool default_sample = !full && std::getenv("STAX_SWEEP_SEED") == nullptr &&
                              std::getenv("STAX_SWEEP_CASES") == nullptr &&
                              std::getenv("STAX_SWEEP_DTYPES") == nullptr;
  const std::set<std::string> known = fuzz::read_known_failures(STAX_SWEEP_KNOWN_FAILURES);
  const std::vector<const fuzz::CatalogEntry*> cases = selected_cases();
  std::map<std::string, std::vector<Failure>> failures;  // by "case dtype"
  std::set<std::string> ran;
  int configs = 0, comparisons = 0;
  for (DType dtype : selected_dtypes()) {
    for (const Config& config : plan_configs(dtype, full, seed())) {
      const ConfigResult r = run_config(config, cases, seed());
      std::cout << "sweep: " << config.describe() << ": " << r.cases << " cases, "
                << r.failures.size() << " failures; eager " << r.eager_seconds << " s, compile "
                << r.compile_seconds << " s, runs " << r.run_seconds << " s\n";
      ++configs;
      comparisons += r.compared;
      if (!r.run) {
        std::cout << "sweep: " << config.describe() << ": compile-checked only (" << r.cases
                  << " cases), the CPU lacks " << runtime::simd_level_name(config.level) << "\n";
      }
      for (const fuzz::CatalogEntry* e : cases) {
        if (fuzz::contains(e->dtypes, dtype) && config.runs_case(e->name)) {
          ran.insert(fuzz::failure_key(e->name, std::string(dtype_name(dtype))));
        }
      }
      for (const Failure& f : r.failures) {
        failures[fuzz::failure_key(f.case_name, std::string(dtype_name(f.config.dtype)))].push_back(
            f);
      }
    }
  }
  std::cout << "sweep: " << cases.size() << " runnable cases, " << configs << " configurations, "
            << comparisons << " comparisons, " << failures.size()
            << " failing case x dtype pairs\n";
  std::ostringstream unexpected, rows;
  for (const auto& [key, list] : failures) {
    const bool is_known = known.count(key) != 0;
    const Failure& first = list.front();
    std::cout << (is_known ? "sweep: known failure: " : "sweep: FAILURE: ") << first.describe()
              << (list.size() > 1 ? " (+" + std::to_string(list.size() - 1) + " more)" : "")
              << "\n";
    if (is_known) continue;
    unexpected << first.describe() << "\n" << first.program;
    std::string detail = first.describe().substr(first.case_name.size() + 3);
    for (char& ch : detail) ch = ch == '|' ? ';' : ch == '\n' ? ' ' : ch;
    rows << "| " << first.case_name << " | " << dtype_name(first.config.dtype) << " | " << detail
         << " |\n";
  }
  if (!rows.str().empty()) {
    std::cout << "sweep: KNOWN_FAILURES.md rows of the failures not listed there:\n" << rows.str();
  }
  EXPECT_EQ(unexpected.str(), "") << "failures not listed in tests/sweep/KNOWN_FAILURES.md";
  if (default_sample) {
    // A listed failure that the fixed sample no longer shows has been fixed: its row goes.
    std::string fixed;
    for (const std::string& key : known) {
      if (ran.count(key) && !failures.count(key)) fixed += key + "\n";
    }
    EXPECT_EQ(fixed, "") << "listed in KNOWN_FAILURES.md but passing now: remove these rows";
  }
}

}  // namespace
}  // namespace stax::sweep
