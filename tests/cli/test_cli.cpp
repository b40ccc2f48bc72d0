// End-to-end tests of the `stax` tool: explain (text and JSON), emit, run with random and
// given inputs (NaN and infinities), the outputs file, and exit statuses for bad input.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct Result {
  int status;
  std::string out;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(STAX_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int raw = pclose(pipe);
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, out};
}

std::string example(const std::string& name) {
  return std::string(STAX_EXAMPLES_DIR) + "/" + name;
}

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("stax-cli-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, ExplainExample71) {
  const Result r = run("explain " + example("example_7_1.stax"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("found 1 possible fusions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fusing op0 with op1: OUTER_LOOP_FUSED depth 1, score (0, 33024"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("op0_op1: OuterLoopFusedSchedulerNode(SchedulerNode,SchedulerNode)"),
            std::string::npos);
  EXPECT_NE(r.out.find("op0.group.iteration = ((64,), (128,))"), std::string::npos);
  EXPECT_NE(r.out.find("op1.group.iteration = ((64, 128), ())"), std::string::npos);
  EXPECT_NE(r.out.find("free buf0 after kernel0 (last used by op0_op1)"), std::string::npos);
}

TEST(Cli, ExplainJsonExample72) {
  const Result r = run("explain " + example("example_7_2.stax") + " --json --threads 2");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["fusion_rounds"].size(), 2u);
  EXPECT_EQ(doc["fusion_rounds"][0]["possible_fusions"], 1);
  EXPECT_EQ(doc["fusion_rounds"][1]["possible_fusions"], 0);
  EXPECT_EQ(doc["final_nodes"].size(), 2u);
  EXPECT_EQ(doc["kernels"].size(), 1u);
  EXPECT_EQ(doc["kernels"][0]["loops"].size(), 2u);
}

TEST(Cli, EmitPrintsTheTranslationUnit) {
  const Result r = run("emit " + example("example_1_1.stax") + " --simd avx2 --threads 4");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("stax_graph_run"), std::string::npos);
  EXPECT_NE(r.out.find("#pragma omp for collapse(1)"), std::string::npos);
  EXPECT_NE(r.out.find("vec_reduce_sum"), std::string::npos);
}

TEST(Cli, RunExamplesMatchEager) {
  for (const char* name : {"example_1_1.stax", "example_7_1.stax", "example_7_2.stax"}) {
    for (const char* simd : {"scalar", "avx2"}) {
      const Result r = run(std::string("run ") + example(name) + " --simd " + simd);
      EXPECT_EQ(r.status, 0) << name << " " << simd << "\n" << r.out;
      EXPECT_NE(r.out.find("median time"), std::string::npos);
      EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos);
    }
  }
}

TEST(Cli, RunWithGivenInputsNanAndInf) {
  const auto program = temp_file("g.stax", R"(def g(x: f32[2, 3]):
    e = relu(x)
    s = sum(x, dim=[1])
    return e, s
)");
  const auto inputs = temp_file("in.json", R"({"x": [[1, "nan", -2], ["inf", 0.5, 1]]})");
  const auto outputs = program.parent_path() / "out.json";
  const Result r = run("run " + program.string() + " --inputs " + inputs.string() + " --outputs " +
                       outputs.string() + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report["match"].get<bool>());
  std::ifstream in(outputs);
  const auto out = nlohmann::json::parse(in);
  EXPECT_EQ(out["e"], nlohmann::json::parse(R"([[1.0, "nan", 0.0], ["inf", 0.5, 1.0]])"));
  EXPECT_EQ(out["s"], nlohmann::json::parse(R"(["nan", "inf"])"));
}

TEST(Cli, BadInputsExitWithMessage) {
  const auto program = temp_file("h.stax", "def h(x: f32[2]):\n    y = neg(x)\n    return y\n");
  const auto missing = temp_file("missing.json", R"({"z": [1, 2]})");
  Result r = run("run " + program.string() + " --inputs " + missing.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("'z' is not an input"), std::string::npos) << r.out;
  const auto short_list = temp_file("short.json", R"({"x": [1]})");
  r = run("run " + program.string() + " --inputs " + short_list.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("x"), std::string::npos) << r.out;

  const auto bad = temp_file("bad.stax", "def h(x: f32[2]):\n    y = nosuchop(x)\n    return y\n");
  r = run("explain " + bad.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("bad.stax:2:"), std::string::npos) << r.out;

  r = run("frobnicate " + program.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("usage"), std::string::npos);
  r = run("run " + program.string() + " --threads zero");
  EXPECT_EQ(r.status, 2);
  r = run("run " + program.string() + " --simd sse9");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
