// End-to-end tests of the `stax` tool: explain (text and JSON), emit, run with random and
// given inputs (NaN and infinities), the outputs file, exit statuses and messages for bad
// input files, failed writes and bad options, and runs of graphs with huge outputs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <chrono>
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

// A hang is a failure too: `timeout` ends the run (status 124) long before ctest would.
Result run_with_env(const std::string& env, const std::string& args);
Result run(const std::string& args) {
  return run_with_env("", args);
}

// The same with environment assignments ("NAME=value ") before the command.
Result run_with_env(const std::string& env, const std::string& args) {
  const std::string cmd = env + "timeout 120 " + std::string(STAX_CLI_PATH) + " " + args + " 2>&1";
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
  // The row sums: one element per outer iteration, held in a register (the memory plan's
  // cost rule), with the reason shown.
  EXPECT_NE(r.out.find("local buf0 in op0_op1 (one element per outer iteration: a register)"),
            std::string::npos)
      << r.out;
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

// Issue 35: Example 7.2 partitioned for a GPU from its offline table, on any machine, as the
// seed's Listing 7.2 has it: e inlined into both reductions, which share one kernel.
TEST(Cli, ExplainExample72ForACudaArchitecture) {
  const Result r = run("explain " + example("example_7_2.stax") + " --device cuda:sm_90");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("target: cuda sm_90 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(not stored): 2 reads, cheap on the GPU: inlined"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fusing op0 with op1: SAME_VARS_REDUCE (GPU: element counts (n, r) = "
                       "(64, 128))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("round 2: found 0 possible fusions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernels (cuda:sm_90): one per final node, 1 in all"), std::string::npos)
      << r.out;
  const Result j = run("explain " + example("example_7_2.stax") + " --device cuda:sm_80 --json");
  ASSERT_EQ(j.status, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["device"], "cuda:sm_80");
  EXPECT_EQ(doc["final_nodes"].size(), 1u);
  // An architecture the table does not know, and a command that would need CUDA kernels.
  const Result unknown = run("explain " + example("example_7_2.stax") + " --device cuda:sm_75");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.out.find("sm_75 is not in the offline table (sm_80, sm_90, sm_100)"),
            std::string::npos)
      << unknown.out;
  EXPECT_EQ(run("run " + example("example_7_2.stax") + " --device cuda:sm_90").status, 2);
  // emit prints the CUDA module: Listing 7.2's one kernel.
  const Result emit = run("emit " + example("example_7_2.stax") + " --device cuda:sm_90");
  ASSERT_EQ(emit.status, 0) << emit.out;
  EXPECT_NE(emit.out.find("#include \"stax_cuda.cuh\""), std::string::npos) << emit.out;
  EXPECT_NE(emit.out.find("extern \"C\" __global__ void __launch_bounds__(128) stax_op0_op1("),
            std::string::npos)
      << emit.out;
}

TEST(Cli, ExplainAndEmitNameTheOpsOfEachKernel) {
  // Example 7.2: exp is stored by one loop, sum and amax read it in the other.
  const Result text = run("explain " + example("example_7_2.stax"));
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_NE(text.out.find("      ops: exp (e)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("      ops: sum (s), amax (m)\n"), std::string::npos) << text.out;
  const Result json = run("explain " + example("example_7_2.stax") + " --json");
  ASSERT_EQ(json.status, 0) << json.out;
  EXPECT_EQ(nlohmann::json::parse(json.out)["kernels"][0]["loops"][0]["ops"],
            nlohmann::json::parse(R"([{"op": "exp", "value": "e"}])"));
  const Result emit = run("emit " + example("example_7_2.stax") + " --simd avx2");
  ASSERT_EQ(emit.status, 0) << emit.out;
  EXPECT_NE(emit.out.find("// ops of op0: exp (e)\n// ops of op1_op2: sum (s), amax (m)\n"
                          "static void kernel0("),
            std::string::npos)
      << emit.out;
}

TEST(Cli, EmitPrintsTheTranslationUnit) {
  const Result r = run("emit " + example("example_1_1.stax") + " --simd avx2 --threads 4");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("stax_graph_run"), std::string::npos);
  EXPECT_NE(r.out.find("#pragma omp for collapse(1)"), std::string::npos);
  EXPECT_NE(r.out.find("stax::reduce_sum("), std::string::npos);
}

TEST(Cli, ExplainIrPrintsTheKernelIrAfterEachPass) {
  const Result r = run("explain " + example("example_7_1.stax") + " --ir --simd avx2");
  ASSERT_EQ(r.status, 0) << r.out;
  const size_t ir = r.out.find("kernel IR after each pass:");
  ASSERT_NE(ir, std::string::npos) << r.out;
  size_t at = ir;
  for (const char* pass :
       {"after build ===", "after kernel form ===", "after parallel depth ===",
        "after apply kernel form ===", "after cascade blocking ===", "after split reductions ===",
        "after parallelize ===", "after simplify ==="}) {
    const size_t next = r.out.find(pass, at);
    EXPECT_NE(next, std::string::npos) << pass << " (in order)";
    if (next != std::string::npos) at = next;
  }
  EXPECT_NE(r.out.find("stax::Vec<float, 8>"), std::string::npos);
  // The JSON form carries the same steps; without --ir there are none.
  const Result j = run("explain " + example("example_7_1.stax") + " --ir --json");
  ASSERT_EQ(j.status, 0) << j.out;
  EXPECT_FALSE(nlohmann::json::parse(j.out)["kernel_ir"].empty());
  EXPECT_EQ(run("explain " + example("example_7_1.stax")).out.find("kernel IR"), std::string::npos);
  // --ir belongs to explain only.
  EXPECT_EQ(run("emit " + example("example_7_1.stax") + " --ir").status, 2);
}

TEST(Cli, StaxLogsIrPrintsTheKernelIr) {
  const Result r = run("emit " + example("example_7_1.stax") + " --simd scalar");
  EXPECT_EQ(r.out.find("after build ==="), std::string::npos);
  const std::string cmd = "STAX_LOGS=fusion,ir timeout 120 " + std::string(STAX_CLI_PATH) +
                          " emit " + example("example_7_1.stax") + " --simd scalar 2>&1 >/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string err;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) err.append(buf.data(), n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_NE(err.find("=== op0_op1 after build ==="), std::string::npos) << err;
  EXPECT_NE(err.find("after simplify ==="), std::string::npos) << err;
}

// The written-out attention becomes one blocked call (graph_passes), which explain states
// with its cost; --no-graph-passes lowers it as written; both runs match the oracle.
TEST(Cli, GraphPassesAndTheirSwitch) {
  const auto path =
      temp_file("written_attention.stax",
                R"(def attn(q: f32[2, 12, 128, 64], k: f32[2, 12, 128, 64], v: f32[2, 12, 128, 64]):
    kt = transpose(k, -1, -2)
    q3 = reshape(q, [24, 128, 64])
    ke = expand(kt, [2, 12, 64, 128])
    kc = clone(ke, memory_format="contiguous_format")
    k3 = reshape(kc, [24, 64, 128])
    s3 = bmm(q3, k3)
    s = reshape(s3, [2, 12, 128, 128])
    x = mul(s, 0.125)
    m = amax(x, [-1], True)
    d = sub(x, m)
    e = exp(d)
    z = sum(e, [-1], True)
    p = div(e, z)
    p3 = reshape(p, [24, 128, 128])
    v3 = reshape(v, [24, 128, 64])
    o3 = bmm(p3, v3)
    o = reshape(o3, [2, 12, 128, 64])
    return o
)");
  const Result passes = run("explain " + path.string());
  ASSERT_EQ(passes.status, 0) << passes.out;
  EXPECT_NE(passes.out.find("written-out attention o [2, 12, 128, 128] becomes softmax_attention: "
                            "blocked moves"),
            std::string::npos)
      << passes.out;
  const Result as_written = run("explain " + path.string() + " --no-graph-passes");
  ASSERT_EQ(as_written.status, 0) << as_written.out;
  EXPECT_EQ(as_written.out.find("written-out attention"), std::string::npos) << as_written.out;
  EXPECT_NE(as_written.out.find("bmm"), std::string::npos) << as_written.out;
  for (const char* flag : {"", " --no-graph-passes"}) {
    const Result r = run("run " + path.string() + flag);
    EXPECT_EQ(r.status, 0) << flag << "\n" << r.out;
  }
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

// Issue 32, point 4: exp of a GEMM's result (up to about 12) multiplies the GEMM's rounding
// error; the tolerance follows exp's condition number, so the correct outputs pass.
TEST(Cli, RunExpOfGemmMatches) {
  const std::string program = std::string(STAX_CLI_PROGRAMS_DIR) + "/exp_of_gemm.stax";
  for (const char* simd : {"", " --simd scalar"}) {
    const Result r = run("run " + program + simd);
    EXPECT_EQ(r.status, 0) << simd << "\n" << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
}

// A matrix product whose B is row-major: explain shows its plan, B timed in place against
// packed when planned (external/matmul_weights_form.h); with --matmul-weights-in-place, B in
// place as asked, unmeasured. A product with a transposed B (a linear layer's weight) is
// timed only against the BLAS. Both runs compute what eager computes.
TEST(Cli, ExplainShowsHowEachProductHandsBToTheLibrary) {
  const auto program = temp_file("row_major_b.stax",
                                 "def g(x: f32[64, 96], w: f32[96, 160], v: f32[72, 160]):\n"
                                 "    h = mm(x, w)\n"
                                 "    t = transpose(v, 0, 1)\n"
                                 "    o = mm(h, t)\n"
                                 "    return o\n");
  const Result measured = run("explain " + program.string());
  ASSERT_EQ(measured.status, 0) << measured.out;
  const size_t first = measured.out.find("    plan: ");
  ASSERT_NE(first, std::string::npos) << measured.out;
  const size_t second = measured.out.find("    plan: ", first + 1);
  ASSERT_NE(second, std::string::npos) << measured.out;
  const std::string row_major = measured.out.substr(first, measured.out.find('\n', first) - first);
  const std::string weight = measured.out.substr(second, measured.out.find('\n', second) - second);
  EXPECT_NE(row_major.find("measured when planned"), std::string::npos) << row_major;
  // A linear layer's weight: nothing to pack; timed against the BLAS where one is loaded (the
  // test command loads MKL: STAX_EXPECT_BLAS=1), else kept in place unmeasured.
  const char* expect_blas = std::getenv("STAX_EXPECT_BLAS");
  if (expect_blas != nullptr && std::string(expect_blas) == "1") {
    EXPECT_NE(weight.find("measured when planned"), std::string::npos) << weight;
  } else {
    EXPECT_TRUE(weight.find("measured when planned") != std::string::npos ||
                weight.find("B's columns are not contiguous") != std::string::npos)
        << weight;
  }

  const Result in_place = run("explain " + program.string() + " --matmul-weights-in-place");
  ASSERT_EQ(in_place.status, 0) << in_place.out;
  EXPECT_NE(in_place.out.find("B read in place: asked for"), std::string::npos) << in_place.out;
  EXPECT_EQ(in_place.out.find("measured when planned"), std::string::npos) << in_place.out;
  // A later process reads the measurement from the cache directory instead of measuring.
  const auto cache = std::filesystem::temp_directory_path() /
                     ("stax-cli-test-" + std::to_string(getpid())) / "plan-cache";
  std::filesystem::remove_all(cache);
  const std::string with_cache = "STAX_CACHE_DIR=" + cache.string() + " ";
  const Result measuring = run_with_env(with_cache, "explain " + program.string());
  ASSERT_EQ(measuring.status, 0) << measuring.out;
  EXPECT_EQ(measuring.out.find("read from the plan cache"), std::string::npos) << measuring.out;
  EXPECT_TRUE(std::filesystem::exists(cache / "library-plans"));
  const Result reading = run_with_env(with_cache, "explain " + program.string());
  ASSERT_EQ(reading.status, 0) << reading.out;
  EXPECT_NE(reading.out.find("read from the plan cache"), std::string::npos) << reading.out;
  for (const char* option : {"", " --matmul-weights-in-place"}) {
    const Result r = run("run " + program.string() + option);
    EXPECT_EQ(r.status, 0) << option << "\n" << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
}

// Issue 32, point 4: hostile sizes (2^32, zero-size dims, products that overflow int64) in
// every family of ops that multiply sizes: contractions, convolutions (forward and backward),
// pooling and attention. Each is explained without a crash and its run is refused with a
// clear message naming what is too large (status 2: never a signal, never a hang), or gives
// PyTorch's empty or zero result (status 0).
TEST(Cli, HostileSizesAreRefusedOrComputedNeverCrashes) {
  const std::string g = "4294967296";
  struct Hostile {
    std::string name, text;
    int run_status;
    std::vector<std::string> words;  // in the run's output
  };
  const Hostile cases[] = {
      // The fuzzer's find: oneDNN divided by zero choosing a kernel for K = 2^32.
      {"bmm_k",
       "def g(a: f32[1, 1, " + g +
           "]):\n    v = transpose(a, -2, -1)\n"
           "    w = bmm(a, v)\n    return w\n",
       2,
       {"bmm", g, "products summed"}},
      {"mm_k_bf16",
       "def g(a: bf16[1, " + g + "], b: bf16[" + g +
           ", 1]):\n    c = mm(a, b)\n"
           "    return c\n",
       2,
       {g}},
      {"baddbmm_k",
       "def g(s: f32[1, 1, 1], a: f32[1, 1, " + g + "], b: f32[1, " + g +
           ", 1]):\n    c = baddbmm(s, a, b)\n    return c\n",
       2,
       {g}},
      {"mm_k_zero",
       "def g(a: f32[3, 0], b: f32[0, 4]):\n    c = mm(a, b)\n    return c\n",
       0,
       {"ok"}},
      {"mm_m_zero",
       "def g(a: f32[0, 5], b: f32[5, 3]):\n    c = mm(a, b)\n    return c\n",
       0,
       {"ok"}},
      {"mm_overflow",
       "def g(a: f32[1, 1], b: f32[1, 1]):\n    x = expand(a, [" + g + ", " + g +
           "])\n    c = mm(x, b)\n    return c\n",
       2,
       {"overflows int64"}},
      {"conv_length",
       "def g(x: f32[1, 1, " + g +
           "], w: f32[1, 1, 1]):\n"
           "    c = convolution(x, w, None, [1], [0], [1], False, [0], 1)\n"
           "    return c\n",
       2,
       {g}},
      {"conv_channels",
       "def g(x: f32[1, " + g + ", 1], w: f32[1, " + g +
           ", 1]):\n"
           "    c = convolution(x, w, None, [1], [0], [1], False, [0], 1)\n"
           "    return c\n",
       2,
       {g}},
      {"conv_kernel",
       "def g(x: f32[1, 1, " + g + "], w: f32[1, 1, " + g +
           "]):\n"
           "    c = convolution(x, w, None, [1], [0], [1], False, [0], 1)\n"
           "    return c\n",
       2,
       {g}},
      {"conv_empty_batch",
       "def g(x: f32[0, 1, " + g +
           "], w: f32[1, 1, 1]):\n"
           "    c = convolution(x, w, None, [1], [0], [1], False, [0], 1)\n"
           "    return c\n",
       0,
       {"ok"}},
      {"conv_overflow",
       "def g(x: f32[" + g + ", " + g +
           ", 1], w: f32[1, 1, 1]):\n"
           "    c = convolution(x, w, None, [1], [0], [1], False, [0], 1)\n"
           "    return c\n",
       2,
       {"overflows int64"}},
      {"conv_backward",
       "def g(go: f32[1, 1, " + g + "], x: f32[1, 1, " + g +
           "], w: f32[1, 1, 1]):\n    a0, a1, a2 = convolution_backward(go, x, w, "
           "[1], [1], [0], [1], False, [0], 1, [True, True, True])\n"
           "    return a0, a1, a2\n",
       2,
       {g}},
      {"pool_kernel",
       "def g(x: f32[1, 1, 1, " + g + "]):\n    v = avg_pool2d(x, [1, " + g + "])\n    return v\n",
       2,
       {"kernel_size", g}},
      {"pool_adaptive",
       "def g(x: f32[1, 1, 1, " + g +
           "]):\n"
           "    v = _adaptive_avg_pool2d(x, [1, 1])\n    return v\n",
       2,
       {"_adaptive_avg_pool2d", g}},
      {"pool_overflow",
       "def g(x: f32[" + g + ", " + g +
           ", 1, 1]):\n"
           "    v, i = max_pool2d_with_indices(x, [1, 1])\n    return v, i\n",
       2,
       {"overflows int64"}},
      {"attention_head_size",
       "def g(q: f32[1, 1, 1, " + g +
           "]):\n"
           "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, q, q)\n"
           "    return o, l\n",
       2,
       {"32-bit", g}},
      {"attention_length",
       "def g(q: f32[1, 1, " + g +
           ", 1]):\n"
           "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, q, q)\n"
           "    return o, l\n",
       2,
       {g}},
      // Small inputs, 2^32 scores: the work, not the memory, is refused.
      {"attention_work",
       "def g(q: f32[1, 1, 65536, 1]):\n"
       "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, q, q)\n"
       "    return o, l\n",
       2,
       {"too large to check", "multiply-adds per query row"}},
      {"attention_empty",
       "def g(q: f32[1, 1, 0, " + g +
           "]):\n"
           "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, q, q)\n"
           "    return o, l\n",
       0,
       {"ok"}},
      {"attention_overflow",
       "def g(q: f32[" + g + ", " + g +
           ", 1, 1]):\n"
           "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, q, q)\n"
           "    return o, l\n",
       2,
       {"overflows int64"}},
  };
  for (const Hostile& h : cases) {
    const auto program = temp_file(h.name + ".stax", h.text);
    // Sizes whose products overflow int64 and pooling windows over 32 bits are refused by the
    // types already (as PyTorch refuses them); the rest explain.
    const bool refused_by_types = h.words[0] == "overflows int64" || h.words[0] == "kernel_size";
    const Result explained = run("explain " + program.string());
    EXPECT_EQ(explained.status, refused_by_types ? 2 : 0) << h.name << "\n" << explained.out;
    const Result r = run("run " + program.string());
    EXPECT_EQ(r.status, h.run_status) << h.name << "\n" << r.out;
    for (const std::string& word : h.words) {
      EXPECT_NE(r.out.find(word), std::string::npos) << h.name << ": " << word << "\n" << r.out;
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

// Issue 14: `stax run --eager` runs the eager interpreter alone, so a graph of matrix products
// (which lowering does not handle yet) runs from a file; a contraction counts K steps per
// output element against the eager-work limit.
TEST(Cli, RunEagerOnlyComputesMatrixProducts) {
  const auto program = temp_file("mm.stax", R"(def mmg(c: f32[2], a: f32[2, 3], b: f32[3, 2]):
    p = mm(a, b)
    q = addmm(c, a, b, beta=0.5, alpha=2)
    return p, q
)");
  const auto inputs = temp_file("mm_in.json", R"({"a": [[1, 2, 3], [4, 5, 6]],
    "b": [[1, 0], [0, 1], [1, 1]], "c": [10, 20]})");
  const auto outputs = program.parent_path() / "mm_out.json";
  const Result r = run("run " + program.string() + " --eager --inputs " + inputs.string() +
                       " --outputs " + outputs.string() + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report["eager_only"].get<bool>());
  EXPECT_EQ(report["outputs"][1]["sizes"], nlohmann::json::parse("[2, 2]"));
  std::ifstream in(outputs);
  const auto out = nlohmann::json::parse(in);
  EXPECT_EQ(out["p"], nlohmann::json::parse("[[4.0, 5.0], [10.0, 11.0]]"));
  EXPECT_EQ(out["q"], nlohmann::json::parse("[[13.0, 20.0], [25.0, 32.0]]"));
  // Random inputs and the plain report.
  const Result plain = run("run " + program.string() + " --eager");
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_NE(plain.out.find("eager interpreter only"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("output q: f32[2, 2]"), std::string::npos) << plain.out;
  // 2048^3 multiply-adds are refused before anything runs, naming the product.
  const auto huge = temp_file("mm_huge.stax", R"(def big(a: f32[2048, 2048], b: f32[2048, 2048]):
    p = mm(a, b)
    return p
)");
  const Result refused = run("run " + huge.string() + " --eager");
  EXPECT_EQ(refused.status, 2) << refused.out;
  EXPECT_NE(refused.out.find("'p' (mm to f32[2048, 2048], 2048 products summed per element (K))"),
            std::string::npos)
      << refused.out;
  // --eager belongs to run only.
  EXPECT_EQ(run("explain " + program.string() + " --eager").status, 2);
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

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::filesystem::path neg_program() {
  return temp_file("neg.stax", "def h(x: f32[2]):\n    y = neg(x)\n    return y\n");
}

// The text lists the fusions made and counts the other candidates of each round; --verbose
// lists each with its reason (here a horizontal pair the simulated peak refuses, and legal
// pairs left for a later round); the JSON always lists every candidate.
TEST(Cli, ExplainVerboseListsEachRefusedPairWithItsReason) {
  // a and b share x; merged, b's result would be live over the 256 KiB exp.
  const auto peak = temp_file("peak.stax",
                              "def f(x: f32[64, 64], y: f32[256, 256]):\n"
                              "    a = mul(x, 2.0)\n    e = exp(y)\n    s = sum(e, dim=[1])\n"
                              "    m = amax(e, dim=[0])\n    b = mul(x, 3.0)\n"
                              "    return a, s, m, b\n");
  const std::string refusal =
      "    cannot fuse op0 with op4: horizontal fusion would raise the simulated peak from 280576 "
      "to 296960 bytes (Definition 7.5)\n";
  const Result plain = run("explain " + peak.string());
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_TRUE(contains(plain.out,
                       "  round 1: found 0 possible fusions\n"
                       "    4 pairs refused; --verbose lists each with its reason\n"))
      << plain.out;
  EXPECT_FALSE(contains(plain.out, "cannot fuse")) << plain.out;
  EXPECT_FALSE(contains(plain.out, "simulated peak from")) << plain.out;
  const Result verbose = run("explain " + peak.string() + " --verbose");
  ASSERT_EQ(verbose.status, 0) << verbose.out;
  EXPECT_TRUE(contains(verbose.out, refusal)) << verbose.out;
  EXPECT_FALSE(contains(verbose.out, "--verbose lists")) << verbose.out;
  const Result json = run("explain " + peak.string() + " --json");
  ASSERT_EQ(json.status, 0) << json.out;
  const auto candidates = nlohmann::json::parse(json.out)["fusion_rounds"][0]["candidates"];
  ASSERT_EQ(candidates.size(), 4u);
  EXPECT_EQ(candidates[0]["first"], "op0");
  EXPECT_EQ(candidates[0]["second"], "op4");
  EXPECT_EQ(candidates[0]["legal"], false);
  EXPECT_EQ(candidates[0]["reason"],
            "horizontal fusion would raise the simulated peak from 280576 to 296960 bytes "
            "(Definition 7.5)");

  // Three readers of x: one pair fuses in round 1, the two others wait for round 2.
  const auto three = temp_file("three.stax",
                               "def g(x: f32[64, 64]):\n    a = mul(x, 2.0)\n"
                               "    b = mul(x, 3.0)\n    c = mul(x, 4.0)\n    return a, b, c\n");
  const Result counted = run("explain " + three.string());
  ASSERT_EQ(counted.status, 0) << counted.out;
  EXPECT_TRUE(contains(counted.out,
                       "    fusing op0 with op1: SAME_VARS_REDUCE, score (1, 16384, 1, -1)\n"
                       "    2 pairs legal but not fused; --verbose lists each with its reason\n"))
      << counted.out;
  const Result listed = run("explain " + three.string() + " --verbose");
  EXPECT_TRUE(contains(listed.out,
                       "    not fusing op0 with op2: SAME_VARS_REDUCE (skipped: already fused this "
                       "round)\n"))
      << listed.out;
  // --verbose belongs to explain only.
  const Result emit = run("emit " + three.string() + " --verbose");
  EXPECT_EQ(emit.status, 2) << emit.out;
  EXPECT_TRUE(contains(emit.out, "does not apply to")) << emit.out;
}

TEST(CliInputs, DeeplyNestedJsonIsRejectedWithItsPosition) {
  // A million levels inside x's list: parsing is iterative, but describing the wrong value
  // (and nlohmann's dump) recursed once per level.
  const auto inputs = temp_file(
      "deep.json", "{\"x\": [" + std::string(1000000, '[') + std::string(1000000, ']') + ", 1]}");
  const Result r = run("run " + neg_program().string() + " --inputs " + inputs.string());
  EXPECT_EQ(r.status, 2) << r.out.substr(0, 500);
  EXPECT_TRUE(contains(r.out, inputs.string() + ": line 1 col ")) << r.out.substr(0, 500);
  EXPECT_TRUE(contains(r.out, "nested deeper than 64 levels")) << r.out.substr(0, 500);
  EXPECT_LT(r.out.size(), 1000u);
}

TEST(CliInputs, KeyThatIsNotAnInputListsTheInputs) {
  // 'y' names a value of the graph, but not an input: it used to be ignored silently.
  const auto inputs = temp_file("not_input.json", R"({"x": [1, 2], "y": [3, 4]})");
  const Result r = run("run " + neg_program().string() + " --inputs " + inputs.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, inputs.string() + ": 'y' is not an input of h (its inputs: x)"))
      << r.out;
}

TEST(CliInputs, NumbersOutOfRangeNameFileAndPosition) {
  const auto program = neg_program();
  const auto overflow = temp_file("overflow.json", "{\"x\": [1,\n  1e400]}");
  Result r = run("run " + program.string() + " --inputs " + overflow.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(
      contains(r.out, overflow.string() + ": line 2 col 3: number overflow parsing '1e400'"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "json.exception")) << r.out;
  // Finite as a double, infinite as f32: silently became inf.
  const auto f32_range = temp_file("f32_range.json", R"({"x": [1e39, 1]})");
  r = run("run " + program.string() + " --inputs " + f32_range.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, f32_range.string() + ": input 'x' at [0]: value 1e+39 out of range "
                                                   "for f32"))
      << r.out;
}

TEST(CliInputs, SyntaxErrorsAreTranslatedToFileLineColumn) {
  const auto inputs = temp_file("syntax.json", "{\"x\": [1,\n 2 x]}");
  const Result r = run("run " + neg_program().string() + " --inputs " + inputs.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, inputs.string() + ": line 2 col 4: syntax error")) << r.out;
  EXPECT_FALSE(contains(r.out, "json.exception")) << r.out;
}

TEST(CliInputs, MissingDirectoryAndUnreadableFiles) {
  const auto program = neg_program();
  const std::string missing = (program.parent_path() / "no_such_inputs.json").string();
  Result r = run("run " + program.string() + " --inputs " + missing);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, missing + ": cannot open: No such file or directory")) << r.out;
  const std::string dir = program.parent_path().string();
  r = run("run " + program.string() + " --inputs " + dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, dir + ": is a directory")) << r.out;
  EXPECT_FALSE(contains(r.out, "basic_filebuf")) << r.out;
  // Opens, but reading fails (address 0 is not mapped).
  r = run("run " + program.string() + " --inputs /proc/self/mem");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "/proc/self/mem: read failed: Input/output error")) << r.out;
}

TEST(CliInputs, BroadcastInputNeedsEqualValuesAlongBroadcastDims) {
  const auto program = temp_file(
      "bcast.stax", "def b(x: f32[2, 2] strides=[0, 1]):\n    y = neg(x)\n    return y\n");
  const auto unequal = temp_file("unequal.json", R"({"x": [[1, 2], [3, 4]]})");
  Result r = run("run " + program.string() + " --inputs " + unequal.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(
      contains(r.out, unequal.string() + ": input 'x' at [0, 0]: value 1.0 differs from 3.0"))
      << r.out;
  const auto equal = temp_file("equal.json", R"({"x": [[1, 2], [1, 2]]})");
  const auto outputs = program.parent_path() / "bcast_out.json";
  r = run("run " + program.string() + " --inputs " + equal.string() + " --outputs " +
          outputs.string());
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(outputs);
  EXPECT_EQ(nlohmann::json::parse(in)["y"], nlohmann::json::parse("[[-1.0, -2.0], [-1.0, -2.0]]"));
}

TEST(CliOutputs, FailedWritesAreErrorsNamingTheFile) {
  const auto program = neg_program();
  // Disk full: every write fails, but only when the buffer is flushed.
  Result r = run("run " + program.string() + " --outputs /dev/full");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "/dev/full: write failed: No space left on device")) << r.out;
  const std::string dir = program.parent_path().string();
  r = run("run " + program.string() + " --outputs " + dir);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, dir + ": cannot create: Is a directory")) << r.out;
  const std::string unwritable = "/nonexistent-stax-dir/out.json";
  r = run("run " + program.string() + " --outputs " + unwritable);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, unwritable + ": cannot create: No such file or directory")) << r.out;
}

TEST(CliOptions, OptionsThatDoNotApplyToTheCommandAreErrors) {
  const std::string file = neg_program().string();
  for (const std::string& args :
       {"emit " + file + " --json", "emit " + file + " --inputs in.json",
        "explain " + file + " --outputs out.json", "explain " + file + " --inputs in.json"}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "does not apply to")) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "usage:")) << r.out;
  }
}

TEST(CliOptions, ThreadsAreParsedStrictly) {
  const std::string file = neg_program().string();
  for (const std::string value : {"2x", "''", "-1", "99999999999", "+2", "' 2'", "0", "1e3"}) {
    const Result r = run("run " + file + " --threads " + value);
    EXPECT_EQ(r.status, 2) << value << "\n" << r.out;
    std::string shown = value;
    if (shown.front() == '\'') shown = shown.substr(1, shown.size() - 2);
    EXPECT_TRUE(contains(r.out, "--threads needs an integer from 1 to 1024, got '" + shown + "'"))
        << value << "\n"
        << r.out;
  }
  const Result ok = run("explain " + file + " --threads 3");
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_TRUE(contains(ok.out, "3 threads")) << ok.out;
}

TEST(CliOptions, MissingAndRepeatedOptionValues) {
  const std::string file = neg_program().string();
  Result r = run("run " + file + " --threads");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "option --threads needs a value")) << r.out;
  // The next option is not the value of --inputs.
  r = run("run " + file + " --inputs --json");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "option --inputs needs a value")) << r.out;
  // Repeating an option is an error for every option, with or without a value.
  for (const std::string& args :
       {"run " + file + " --threads 2 --threads 3", "explain " + file + " --json --json",
        "run " + file + " --simd scalar --simd avx2"}) {
    r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "is given twice")) << args << "\n" << r.out;
  }
}

std::filesystem::path expand_program() {
  return temp_file("expand.stax",
                   "def g(x: f32[1]):\n    y = expand(x, [100000, 100000])\n    return y\n");
}

TEST(CliHugeOutputs, ExpandedViewOfTenBillionElementsRunsQuickly) {
  // Both results are stride-0 views of the input: comparing them is one element, not 10^10.
  const auto start = std::chrono::steady_clock::now();
  const Result r = run("run " + expand_program().string() + " --json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.status, 0) << r.out;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_TRUE(report["match"].get<bool>());
  EXPECT_EQ(report["outputs"][0]["name"], "y");
  // Generous for a loaded machine and a cold JIT cache; per-element work would take minutes.
  EXPECT_LT(seconds, 60.0);
}

TEST(CliHugeOutputs, BroadcastInputOfTenBillionElementsIsDrawnOnce) {
  const auto program =
      temp_file("bcast_input.stax",
                "def b(x: f32[100000, 100000] strides=[0, 0]):\n    y = permute(x, [1, 0])\n"
                "    return y\n");
  const Result r = run("run " + program.string() + " --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["match"].get<bool>());
}

TEST(CliHugeOutputs, OutputsFileOfAHugeOutputIsRefused) {
  const auto outputs = expand_program().parent_path() / "huge_out.json";
  const Result r = run("run " + expand_program().string() + " --outputs " + outputs.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, outputs.string() + ": output 'y' has 10000000000 elements (sizes "
                                                 "[100000, 100000]), more than the 100000000"))
      << r.out;
}

TEST(CliHugeOutputs, MaterializedOutputTooLargeForMemoryIsRefused) {
  // 10^12 contiguous f32 elements: 4 TB for the compiled result and again for the eager one.
  const auto program = temp_file(
      "huge_neg.stax",
      "def g(x: f32[1]):\n    y = expand(x, [1000000, 1000000])\n    z = neg(y)\n    return z\n");
  const Result r = run("run " + program.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "output 'z' (f32[1000000, 1000000]) needs 4000000000000 bytes"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "bytes of memory available")) << r.out;
}

TEST(CliHugeOutputs, ReductionOverAHugeBroadcastIsRefusedNotAttempted) {
  // The output is small, but the eager oracle would add 10^10 elements one by one (hours).
  const auto program =
      temp_file("huge_sum.stax",
                "def r(x: f32[1]):\n    y = expand(x, [100000, 100000])\n    s = sum(y, dim=[1])\n"
                "    return s\n");
  const Result r = run("run " + program.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "graph 'r' is too large to check: the eager interpreter would take "
                       "10000000000 element steps"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "for 's' (sum of f32[100000, 100000])")) << r.out;
}

}  // namespace

namespace {

// Issue 33: a program with a size symbol runs at the sizes --sizes gives (or at its hints);
// explain and emit without sizes show the one program of every size, or name the stage that
// refuses the symbols and ask for the sizes.
TEST(Cli, SymbolicProgramsRunAtTheSizesGiven) {
  const auto program = temp_file("rows.stax",
                                 "def rows(x: f32[s0, 24]) where s0: [1, 4096] hint=40:\n"
                                 "    m = amax(x, dim=[1], keepdim=True)\n"
                                 "    d = sub(x, m)\n"
                                 "    e = exp(d)\n"
                                 "    s = sum(e, dim=[1], keepdim=True)\n"
                                 "    y = div(e, s)\n"
                                 "    return y\n");
  for (const char* sizes : {"s0=1", "s0=37", "s0=4096"}) {
    const Result r = run("run " + program.string() + " --sizes " + sizes);
    EXPECT_EQ(r.status, 0) << sizes << "\n" << r.out;
    EXPECT_NE(r.out.find("median time"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
  const Result at_hints = run("run " + program.string());
  EXPECT_EQ(at_hints.status, 0) << at_hints.out;
  EXPECT_NE(at_hints.out.find("running at the size symbols' hints (--sizes s0=40)"),
            std::string::npos)
      << at_hints.out;
  const Result explained = run("explain " + program.string() + " --sizes s0=37");
  EXPECT_EQ(explained.status, 0) << explained.out;
  // A block with products and attention: one program for every size, checked and timed.
  const Result block = run("run " + example("symbolic_block.stax") + " --sizes s0=37");
  EXPECT_EQ(block.status, 0) << block.out;
  EXPECT_NE(block.out.find("one program for every size; the static program of these sizes"),
            std::string::npos)
      << block.out;
  EXPECT_EQ(block.out.find("MISMATCH"), std::string::npos) << block.out;
  const Result unbound = run("emit " + program.string());
  EXPECT_EQ(unbound.status, 0) << unbound.out;
  EXPECT_NE(unbound.out.find("const int64_t s0 = inputs[0].sizes[0];"), std::string::npos)
      << unbound.out;
  const auto power = temp_file("power.stax",
                               "def c(x: f32[s0, 3]) where s0: [1, 64] hint=2:\n"
                               "    y = pow(x, s0)\n"
                               "    return y\n");
  const Result refused = run("emit " + power.string());
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.out.find("lowering pow: argument 1 = s0 is a value over size symbols"),
            std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("give the sizes with --sizes s0=N"), std::string::npos) << refused.out;
  const Result broken = run("run " + program.string() + " --sizes s0=5000");
  EXPECT_EQ(broken.status, 2);
  EXPECT_NE(broken.out.find("size symbol s0 = 5000 breaks its facts (s0 in [1, 4096])"),
            std::string::npos)
      << broken.out;
  const Result unknown = run("run " + program.string() + " --sizes s1=5");
  EXPECT_NE(unknown.out.find("'s1' is not a size symbol of graph 'rows'"), std::string::npos)
      << unknown.out;
  const Result malformed = run("run " + program.string() + " --sizes s0=-3");
  EXPECT_EQ(malformed.status, 2);
  EXPECT_NE(malformed.out.find("--sizes takes SYMBOL=N,... with N >= 0 (s0=37,s1=5), got 's0=-3'"),
            std::string::npos)
      << malformed.out;
  // The inputs file's values give the sizes: 5 rows.
  const auto inputs =
      temp_file("rows_in.json", "{\"x\": [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1], [2, 2, 2]]}");
  const auto outputs = temp_file("rows_out.json", "");
  const auto sums = temp_file("sums.stax",
                              "def sums(x: f32[s0, 3]) where s0: [1, 100]:\n"
                              "    s = sum(x, dim=[1])\n"
                              "    return s\n");
  const Result given = run("run " + sums.string() + " --inputs " + inputs.string() + " --outputs " +
                           outputs.string());
  EXPECT_EQ(given.status, 0) << given.out;
  std::ifstream written(outputs);
  const std::string text((std::istreambuf_iterator<char>(written)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("[6.0,15.0,24.0,3.0,6.0]"), std::string::npos) << text;
  const Result static_graph = run("run " + example("example_7_1.stax") + " --sizes s0=3");
  EXPECT_NE(static_graph.out.find("--sizes: graph"), std::string::npos) << static_graph.out;
}

// Issue 34: `stax compile FILE -o PKG` writes an ahead-of-time package; `stax run PKG` loads it
// without compiling and checks it against the eager interpreter, at any size of its symbols.
TEST(Cli, CompileWritesAPackageThatRunLoads) {
  const auto pkg = temp_file("rows.staxpkg", "");
  const Result compiled = run("compile " + example("symbolic_rows.stax") + " -o " + pkg.string());
  ASSERT_EQ(compiled.status, 0) << compiled.out;
  EXPECT_NE(compiled.out.find("one program for every size"), std::string::npos) << compiled.out;
  for (const char* sizes : {"s0=37", "s0=1", "s0=4096"}) {
    const Result ran = run("run " + pkg.string() + " --sizes " + sizes + " --json");
    ASSERT_EQ(ran.status, 0) << ran.out;
    const nlohmann::json report = nlohmann::json::parse(ran.out.substr(ran.out.find('{')));
    EXPECT_TRUE(report["match"].get<bool>()) << ran.out;
    EXPECT_EQ(report["package"], pkg.string());
  }
  // Sizes the package's facts refuse, a package cut short, options that do not apply.
  const Result too_big = run("run " + pkg.string() + " --sizes s0=4097");
  EXPECT_EQ(too_big.status, 2);
  EXPECT_NE(too_big.out.find("s0"), std::string::npos) << too_big.out;
  std::ifstream in(pkg, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto cut = temp_file("cut.staxpkg", bytes.substr(0, bytes.size() / 2));
  const Result truncated = run("run " + cut.string());
  EXPECT_EQ(truncated.status, 2);
  EXPECT_NE(truncated.out.find("truncated"), std::string::npos) << truncated.out;
  const Result no_output = run("compile " + example("example_7_2.stax"));
  EXPECT_EQ(no_output.status, 2);
  EXPECT_NE(no_output.out.find("compile needs --output PKG"), std::string::npos) << no_output.out;
  const Result eager = run("run " + pkg.string() + " --eager");
  EXPECT_EQ(eager.status, 2);
  EXPECT_NE(eager.out.find("is a package"), std::string::npos) << eager.out;
  const Result inputs_option = run("compile " + example("example_7_2.stax") + " -o x --inputs y");
  EXPECT_EQ(inputs_option.status, 2);
}

}  // namespace
