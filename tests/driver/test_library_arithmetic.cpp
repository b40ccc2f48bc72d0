// bfloat16 calls end to end where the library may lack bfloat16 kernels (external/arithmetic.h):
// a bfloat16 linear layer, convolution and attention compile to library calls on every CPU,
// lowering's reason and explain say how the library computes each (natively, or through
// float32 with the library's refusal), the target description lists what is not native, and
// the results match the eager oracle. Expectations come from what Stax detects of the library
// (the plans' arithmetic()), not from the CPU the test runs on.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "external/attention.h"
#include "external/convolution.h"
#include "external/matmul.h"
#include "ir/graph.h"

namespace stax {
namespace {

using external::Arithmetic;

TEST(LibraryArithmetic, Bfloat16CallsSayHowTheLibraryComputesThem) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: bf16[16, 32], w: bf16[24, 32], b: bf16[24], img: bf16[2, 8, 10, 10], "
      "k: bf16[16, 8, 3, 3], q: bf16[1, 2, 12, 16], kk: bf16[1, 2, 12, 16], "
      "v: bf16[1, 2, 12, 16]):\n"
      "    wt = permute(w, [1, 0])\n"
      "    y = addmm(b, x, wt)\n"
      "    c = convolution(img, k, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
      "    o, l = _scaled_dot_product_flash_attention_for_cpu(q, kk, v)\n"
      "    return y, c, o\n");
  const auto compilation = analyze(g);
  const auto& externals = compilation->module.externals;
  ASSERT_EQ(externals.size(), 3u);
  const bool matmul_through =
      external::MatmulPlan::arithmetic(DType::BFloat16) == Arithmetic::ThroughFloat32;
  const bool convolution_through =
      external::ConvolutionPlan::arithmetic(DType::BFloat16, external::ConvolutionPass::Forward) ==
      Arithmetic::ThroughFloat32;
  const bool attention_through =
      external::AttentionPlan::arithmetic(DType::BFloat16) == Arithmetic::ThroughFloat32;
  for (const program::ExternalSite& site : externals) {
    const std::string& reason = site.call->reason;
    const bool through = site.call->attention     ? attention_through
                         : site.call->convolution ? convolution_through
                                                  : matmul_through;
    EXPECT_EQ(reason.find("through float32 (") != std::string::npos, through) << reason;
    if (through) {
      // The library's own refusal of bfloat16 on this CPU is named.
      EXPECT_NE(reason.find("has no bf16"), std::string::npos) << reason;
    }
  }
  const std::string text = explain_text(*compilation);
  for (const program::ExternalSite& site : externals) {
    EXPECT_NE(text.find(site.call->reason), std::string::npos) << text;
  }
  // The target description lists what its libraries do not compute natively.
  const std::string target = compilation->module.options.describe();
  EXPECT_EQ(target.find("oneDNN matmul: bf16 through float32") != std::string::npos, matmul_through)
      << target;
  EXPECT_EQ(target.find("oneDNN convolution: bf16 through float32") != std::string::npos,
            convolution_through)
      << target;
  EXPECT_EQ(target.find("attention: bf16 block products through float32") != std::string::npos,
            attention_through)
      << target;

  std::vector<Tensor> inputs;
  uint64_t seed = 11;
  for (ir::ValueRef in : g.inputs()) {
    inputs.push_back(eager::random_tensor(DType::BFloat16, g.value(in).type.sizes, seed++));
  }
  const std::vector<Tensor> expected = eager::run(g, inputs);
  const CompiledGraph compiled = compile(g);
  for (int threads : {1, 2}) {
    RunOptions r;
    r.num_threads = threads;
    const std::vector<Tensor> actual = compiled.run(inputs, r);
    const std::string where = std::to_string(threads) + " threads";
    // The products within Stax's tolerance per element, the attention's relative to its
    // largest element (expect_outputs_match.h says why).
    expect_outputs_match(g, {actual[0], actual[1], expected[2]}, expected, where);
    expect_attention_outputs_match(g, {expected[0], expected[1], actual[2]}, expected, where);
  }
}

}  // namespace
}  // namespace stax
