// Compiled attention (issue 15, point 1: _scaled_dot_product_flash_attention_for_cpu and its
// backward, one call of Stax's runtime attention each, external/attention.h) against the eager
// oracle, within the tolerance Stax derives for attention (driver/tolerance.h): grouped-query
// heads, causal with fewer and more queries than keys, additive masks of rank 2 and 4 that
// broadcast, a bfloat16 query with a float32 mask, transposed operands (the [B, L, H, E]
// storage that models produce), an explicit scale, a row every key is masked from, lengths
// that leave vector tails, and sizes that split over threads; 1, 2 and 3 threads give the same
// bits. The forward's logsumexp and the backward's key and value gradients are further results
// of one call (lowering::ResultOf): the program makes one call per op, and a result no one
// reads is written to scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "ir/graph.h"

namespace stax {
namespace {

std::vector<Tensor> attention_inputs(const ir::Graph& g, uint64_t seed = 5) {
  std::vector<Tensor> inputs;
  for (ir::ValueRef in : g.inputs()) {
    const ir::TensorType& type = g.value(in).type;
    inputs.push_back(
        eager::random_tensor_strided(type.dtype, type.sizes, type.strides, seed++, -1.0, 1.0));
  }
  return inputs;
}

// Compiles `program`, checks it makes `calls` external calls, and compares every output with
// the oracle at 1, 2 and 3 threads, which must agree bit for bit.
void expect_attention_matches(const std::string& program, size_t calls) {
  const ir::Graph g = ir::parse_graph(program, "attention.stax");
  const std::vector<Tensor> inputs = attention_inputs(g);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  CompileOptions o;
  o.num_threads = 2;
  const CompiledGraph compiled = compile(g, o);
  EXPECT_EQ(compiled.compilation().module.externals.size(), calls);
  std::vector<Tensor> first;
  for (int threads : {1, 2, 3}) {
    RunOptions r;
    r.num_threads = threads;
    std::vector<Tensor> actual = compiled.run(inputs, r);
    expect_attention_outputs_match(g, actual, expected, std::to_string(threads) + " threads");
    if (first.empty()) {
      first = std::move(actual);
      continue;
    }
    for (size_t k = 0; k < actual.size(); ++k) {
      const eager::Difference d = eager::compare(actual[k], first[k], 0.0, 0.0);
      EXPECT_TRUE(d.within_tolerance)
          << "output " << k << " differs between 1 and " << threads << " threads";
    }
  }
}

std::string forward_and_backward(const std::string& t, const std::string& q_sizes,
                                 const std::string& kv_sizes, const std::string& extra_params,
                                 const std::string& args) {
  return "def f(q: " + t + q_sizes + ", k: " + t + kv_sizes + ", v: " + t + kv_sizes + ", g: " + t +
         q_sizes + extra_params + "):\n" +
         "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, k, v" + args + ")\n" +
         "    dq, dk, dv = _scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, o, l, "
         "0.0" +
         (args.find("True") != std::string::npos ? std::string(", True") : std::string(", False")) +
         (args.find("attn_mask") != std::string::npos ? std::string(", attn_mask=m")
                                                      : std::string()) +
         (args.find("scale") != std::string::npos ? std::string(", scale=0.3") : std::string()) +
         ")\n" + "    return o, l, dq, dk, dv\n";
}

class CompiledAttention : public ::testing::TestWithParam<DType> {};

TEST_P(CompiledAttention, GroupedQueryHeadsForwardAndBackward) {
  const std::string t(dtype_name(GetParam()));
  expect_attention_matches(forward_and_backward(t, "[2, 4, 33, 16]", "[2, 2, 33, 16]", "", ""), 2);
}

TEST_P(CompiledAttention, CausalWithFewerAndMoreQueriesThanKeys) {
  const std::string t(dtype_name(GetParam()));
  expect_attention_matches(
      forward_and_backward(t, "[1, 3, 7, 24]", "[1, 3, 19, 24]", "", ", 0.0, True"), 2);
  expect_attention_matches(
      forward_and_backward(t, "[1, 3, 21, 24]", "[1, 3, 9, 24]", "", ", 0.0, True"), 2);
}

TEST_P(CompiledAttention, AdditiveMasksThatBroadcastWithAScale) {
  const std::string t(dtype_name(GetParam()));
  for (const std::string mask :
       {"[17, 30]", "[1, 30]", "[2, 1, 17, 30]", "[1, 1, 1, 30]", "[2, 3, 17, 30]"}) {
    SCOPED_TRACE(mask);
    expect_attention_matches(
        forward_and_backward(t, "[2, 3, 17, 8]", "[2, 3, 30, 8]", ", m: " + t + mask,
                             ", 0.0, False, attn_mask=m, scale=0.3"),
        2);
  }
}

TEST_P(CompiledAttention, TransposedOperandsAndAComputedQuery) {
  const std::string t(dtype_name(GetParam()));
  // q, k, v stored [B, L, H, E] (as a model's projections) and read as [B, H, L, E].
  const std::string program =
      "def f(q: " + t + "[2, 3, 40, 16] strides=[1920, 16, 48, 1], k: " + t +
      "[2, 3, 40, 16] strides=[1920, 16, 48, 1], v: " + t +
      "[2, 3, 40, 16] strides=[1920, 16, 48, 1], g: " + t + "[2, 3, 40, 16]):\n" +
      "    q2 = mul(q, 2.0)\n"
      "    o, l = _scaled_dot_product_flash_attention_for_cpu(q2, k, v)\n"
      "    dq, dk, dv = _scaled_dot_product_flash_attention_for_cpu_backward(g, q2, k, v, o, l, "
      "0.0, False)\n"
      "    return o, dq, dk, dv\n";
  expect_attention_matches(program, 2);
}

TEST_P(CompiledAttention, SizesThatSplitOverThreads) {
  const std::string t(dtype_name(GetParam()));
  expect_attention_matches(
      forward_and_backward(t, "[2, 6, 200, 64]", "[2, 6, 200, 64]", "", ", 0.0, True"), 2);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CompiledAttention,
                         ::testing::Values(DType::Float32, DType::BFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(CompiledAttentionForward, OnlyTheOutputReadWritesNoLogsumexp) {
  expect_attention_matches(
      "def f(q: float32[1, 2, 9, 8], k: float32[1, 2, 12, 8], v: float32[1, 2, 12, 8]):\n"
      "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, k, v)\n"
      "    return o\n",
      1);
}

TEST(CompiledAttentionForward, BFloat16QueryWithAFloat32Mask) {
  expect_attention_matches(
      "def f(q: bfloat16[1, 2, 9, 8], k: bfloat16[1, 2, 12, 8], v: bfloat16[1, 2, 12, 8], "
      "m: float32[9, 12]):\n"
      "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=m)\n"
      "    return o, l\n",
      1);
}

TEST(CompiledAttentionForward, ARowEveryKeyIsMaskedFromGivesZeros) {
  const ir::Graph g = ir::parse_graph(
      "def f(q: float32[1, 1, 3, 4], k: float32[1, 1, 5, 4], v: float32[1, 1, 5, 4], "
      "m: float32[3, 5]):\n"
      "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=m)\n"
      "    return o, l\n");
  std::vector<Tensor> inputs = attention_inputs(g);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < 5; ++j) inputs[3].set({0, j}, -inf);  // row 0: every key masked
  inputs[3].set({1, 2}, -inf);
  CompileOptions o;
  const std::vector<Tensor> actual = compile(g, o).run(inputs);
  for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(actual[0].get({0, 0, 0, c}), 0.0);
  EXPECT_EQ(actual[1].get({0, 0, 0}), 0.0);
  expect_attention_outputs_match(g, actual, eager::run(g, inputs), "masked row");
}

TEST(CompiledAttentionForward, RefusesWhatEagerRefuses) {
  auto refusal = [](const std::string& params, const std::string& args) {
    try {
      ir::parse_graph("def f(" + params +
                      "):\n    o, l = _scaled_dot_product_flash_attention_for_cpu(" + args +
                      ")\n    return o\n");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("q: float32[2, 8, 16], k: float32[2, 8, 16], v: float32[2, 8, 16]", "q, k, v")
                .find("Accept only 4 dims inputs shape of {B, H, T, K}"),
            std::string::npos);
  EXPECT_NE(
      refusal("q: float32[2, 4, 8, 16], k: float32[2, 4, 8, 8], v: float32[2, 4, 8, 16]", "q, k, v")
          .find("Q/K/V should have the same head size"),
      std::string::npos);
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[2, 4, 8, 16], v: float32[2, 4, 8, 16], "
                    "m: float32[2, 4, 8, 7]",
                    "q, k, v, attn_mask=m")
                .find("The expanded size of the tensor (8) must match the existing size (7) at "
                      "non-singleton dimension 3"),
            std::string::npos);
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[2, 4, 8, 16], v: float32[2, 4, 8, 16], "
                    "m: float32[4, 8, 8]",
                    "q, k, v, attn_mask=m")
                .find("Attention mask dim in {2, 4}"),
            std::string::npos);
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[2, 4, 8, 16], v: float32[2, 4, 8, 16], "
                    "m: float64[8, 8]",
                    "q, k, v, attn_mask=m")
                .find("Attention mask is the same data type as query"),
            std::string::npos);
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[2, 4, 8, 16], v: float32[2, 4, 8, 16]",
                    "q, k, v, 0.1")
                .find("Currently do not support dropout > 0"),
            std::string::npos);
  // What eager's kernel reads out of bounds for instead of refusing.
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[2, 3, 8, 16], v: float32[2, 3, 8, 16]",
                    "q, k, v")
                .find("multiple of the key's"),
            std::string::npos);
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[3, 4, 8, 16], v: float32[3, 4, 8, 16]",
                    "q, k, v")
                .find("the query's batch size"),
            std::string::npos);
  EXPECT_NE(refusal("q: float32[2, 4, 8, 16], k: float32[2, 4, 8, 16], v: float32[2, 4, 7, 16]",
                    "q, k, v")
                .find("same heads and length"),
            std::string::npos);
}

TEST(CompiledAttentionForward, EmptyBatchAndNoKeys) {
  expect_attention_matches(
      "def f(q: float32[0, 2, 9, 8], k: float32[0, 2, 12, 8], v: float32[0, 2, 12, 8], "
      "q1: float32[1, 2, 5, 8], k1: float32[1, 2, 0, 8], v1: float32[1, 2, 0, 8]):\n"
      "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, k, v)\n"
      "    o1, l1 = _scaled_dot_product_flash_attention_for_cpu(q1, k1, v1)\n"
      "    return o, l, o1, l1\n",
      2);
}

}  // namespace
}  // namespace stax
