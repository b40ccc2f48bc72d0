// Compiled convolutions (issue 15, point 2) against the eager oracle: one graph of convolution
// cases (stride, padding, dilation, groups with depthwise, bias or none, 1-D, 2-D and 3-D, a
// channels-last input read in place, a computed input stored first, an empty batch, a size
// that reaches the parallel paths), through oneDNN's convolution where it computes the dtype
// and as Stax loop nests (CompileOptions::external_libraries = false, and the dtypes no
// library has: float16, float64, int64, whose sums wrap as eager's), at every SIMD level this CPU
// runs, 1 and 2 threads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/explain.h"
#include "driver/external_calls.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "external/convolution.h"
#include "ir/graph.h"
#include "runtime/simd.h"

namespace stax {
namespace {

std::string convolution_program(const std::string& t) {
  return "def f(x: " + t + "[2, 6, 13, 11], w: " + t + "[8, 6, 3, 3], b: " + t + "[8], wd: " + t +
         "[6, 1, 3, 3], wg: " + t + "[9, 2, 3, 2], cl: " + t +
         "[2, 6, 13, 11] strides=[858, 1, 66, 6], x1: " + t + "[3, 4, 29], w1: " + t +
         "[5, 4, 4], x3: " + t + "[1, 2, 5, 6, 4], w3: " + t + "[3, 2, 2, 3, 2], e: " + t +
         "[0, 6, 13, 11], big: " + t + "[2, 32, 40, 40], wbig: " + t + "[32, 32, 3, 3]):\n" +
         // plain with bias; strided without; dilated and padded
         "    c1 = convolution(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    c2 = convolution(x, w, None, [2, 3], [0, 1], [1, 1], False, [0, 0], 1)\n"
         "    c3 = convolution(x, w, b, [1, 1], [2, 2], [2, 2], False, [0, 0], 1)\n"
         // depthwise, grouped with an asymmetric kernel
         "    c4 = convolution(x, wd, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 6)\n"
         "    c5 = convolution(x, wg, None, [1, 1], [1, 0], [1, 1], False, [0, 0], 3)\n"
         // a channels-last input, and a computed input (stored before the call)
         "    c6 = convolution(cl, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    r = relu(x)\n"
         "    c7 = convolution(r, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)\n"
         // 1-D and 3-D
         "    c8 = convolution(x1, w1, None, [2], [1], [1], False, [0], 1)\n"
         "    c9 = convolution(x3, w3, None, [1, 1, 1], [1, 0, 1], [1, 1, 1], False, [0, 0, 0], "
         "1)\n"
         // an empty batch; a size for the parallel paths, with a fused reader after it
         "    c10 = convolution(e, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    c11 = convolution(big, wbig, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    c12 = relu(c11)\n"
         "    return c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c12\n";
}

// Values in [low, 1). The tolerance model (driver/tolerance.h) bounds a sum's error by the sum
// of its terms' magnitudes, which is the result's own size only for terms of one sign: long
// sums (a gradient's over the batch and the positions) take values in [0, 1).
std::vector<Tensor> convolution_inputs(const ir::Graph& g, double low = -1.0) {
  std::vector<Tensor> inputs;
  uint64_t seed = 21;
  for (ir::ValueRef in : g.inputs()) {
    const ir::TensorType& type = g.value(in).type;
    inputs.push_back(
        eager::random_tensor_strided(type.dtype, type.sizes, type.strides, seed++, low, 1.0));
  }
  return inputs;
}

class CompiledConvolutions : public ::testing::TestWithParam<DType> {};

// Compiles `g` through the library (at the detected SIMD level: the calls do not depend on it)
// and as loop nests at every SIMD level this CPU runs, runs each at 1 and 2 threads and
// compares with eager; `library_calls` is how many external calls the library build makes
// (where the library computes the dtype; none otherwise), at least that many when
// `at_least`.
void expect_compiled_convolutions_match(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                        DType dtype, size_t library_calls, bool at_least) {
  const std::string t(dtype_name(dtype));
  const std::vector<Tensor> expected = eager::run(g, inputs);
  const bool library_dtype = dtype == DType::Float32 || dtype == DType::BFloat16;
  for (runtime::SimdLevel simd : runtime::runnable_simd_levels()) {
    for (bool library : {true, false}) {
      if (library && simd != runtime::detect_simd_level()) continue;
      CompileOptions o;
      o.simd = simd;
      o.num_threads = 2;
      o.external_libraries = library;
      const CompiledGraph compiled = compile(g, o);
      const size_t calls = compiled.compilation().module.externals.size();
      if (library && library_dtype) {
        if (at_least) {
          EXPECT_GE(calls, library_calls) << t;
        } else {
          EXPECT_EQ(calls, library_calls) << t;
        }
      } else {
        EXPECT_EQ(calls, 0u) << t;
      }
      for (int threads : {1, 2}) {
        RunOptions r;
        r.num_threads = threads;
        expect_outputs_match(g, compiled.run(inputs, r), expected,
                             t + (library ? " library" : " loop nests") + ", simd " +
                                 std::string(runtime::simd_level_name(simd)) + ", " +
                                 std::to_string(threads) + " threads");
      }
    }
  }
}

TEST_P(CompiledConvolutions, MatchEagerThroughTheLibraryAndAsLoopNests) {
  const ir::Graph g = ir::parse_graph(convolution_program(std::string(dtype_name(GetParam()))));
  // Every convolution but the empty batch's is a library call.
  expect_compiled_convolutions_match(g, convolution_inputs(g), GetParam(), 10, true);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CompiledConvolutions,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64, DType::Int64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// convolution_backward's three gradients: plain with padding, strided and dilated, grouped,
// depthwise, 1-D, a channels-last grad_output, an output mask that leaves grad_input out, and
// a size for the parallel paths.
std::string convolution_backward_program(const std::string& t) {
  return "def f(x: " + t + "[2, 6, 13, 11], w: " + t + "[8, 6, 3, 3], g1: " + t +
         "[2, 8, 13, 11], g2: " + t + "[2, 8, 5, 4], wg: " + t + "[9, 2, 3, 2], g3: " + t +
         "[2, 9, 13, 10], wd: " + t + "[6, 1, 3, 3], g4: " + t +
         "[2, 6, 7, 6] strides=[252, 1, 36, 6], x1: " + t + "[3, 4, 29], w1: " + t +
         "[5, 4, 4], g5: " + t + "[3, 5, 14], big: " + t + "[2, 32, 24, 24], wbig: " + t +
         "[32, 32, 3, 3], gbig: " + t + "[2, 32, 24, 24]):\n" +
         "    a0, a1, a2 = convolution_backward(g1, x, w, [8], [1, 1], [1, 1], [1, 1], False, "
         "[0, 0], 1, [True, True, True])\n"
         "    b0, b1, b2 = convolution_backward(g2, x, w, None, [2, 3], [0, 1], [2, 1], False, "
         "[0, 0], 1, [True, True, False])\n"
         "    c0, c1, c2 = convolution_backward(g3, x, wg, None, [1, 1], [1, 0], [1, 1], False, "
         "[0, 0], 3, [True, True, True])\n"
         "    d0, d1, d2 = convolution_backward(g4, x, wd, [6], [2, 2], [1, 1], [1, 1], False, "
         "[0, 0], 6, [False, True, True])\n"
         "    e0, e1, e2 = convolution_backward(g5, x1, w1, None, [2], [1], [1], False, [0], 1, "
         "[True, True, True])\n"
         "    f0, f1, f2 = convolution_backward(gbig, big, wbig, None, [1, 1], [1, 1], [1, 1], "
         "False, [0, 0], 1, [True, True, False])\n"
         "    return a0, a1, a2, b0, b1, c0, c1, c2, d1, d2, e0, e1, e2, f0, f1\n";
}

class CompiledConvolutionBackward : public ::testing::TestWithParam<DType> {};

TEST_P(CompiledConvolutionBackward, MatchesEagerThroughTheLibraryAndAsLoopNests) {
  const ir::Graph g =
      ir::parse_graph(convolution_backward_program(std::string(dtype_name(GetParam()))));
  // grad_input and grad_weight are library calls (11 of them here), grad_bias never.
  expect_compiled_convolutions_match(g, convolution_inputs(g, 0.0), GetParam(), 11, false);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CompiledConvolutionBackward,
                         ::testing::Values(DType::Float32, DType::BFloat16, DType::Float16,
                                           DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// What eager refuses, refused by name: a grad_output of the wrong size, integer dtypes.
TEST(ConvolutionCalls, ABackwardOfTheWrongShapeOrDtypeIsRefused) {
  auto parse = [](const std::string& t, const std::string& g) {
    return ir::parse_graph("def f(x: " + t + "[1, 2, 5, 5], w: " + t + "[3, 2, 3, 3], g: " + t + g +
                           "):\n    a, b, c = convolution_backward(g, x, w, None, [1, 1], [0, 0], "
                           "[1, 1], False, [0, 0], 1, [True, True, True])\n    return a\n");
  };
  EXPECT_NO_THROW(parse("f32", "[1, 3, 3, 3]"));
  try {
    parse("f32", "[1, 3, 4, 3]");
    FAIL() << "a grad_output of the wrong size was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("expected grad_output of size [1, 3, 3, 3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse("i64", "[1, 3, 3, 3]"), std::exception);
}

// Operands are passed as layouts: the channels-last input is read in place, not copied; explain
// shows the call with its window.
TEST(ConvolutionCalls, OperandsAreLayoutsAndExplainShowsTheWindow) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[2, 8, 10, 10] strides=[800, 1, 80, 8], w: f32[8, 1, 3, 3]):\n"
      "    y = convolution(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 8)\n"
      "    return y\n");
  const auto c = analyze(g);
  ASSERT_EQ(c->module.externals.size(), 1u);
  const lowering::ExternalCall& call = *c->module.externals[0].call;
  EXPECT_EQ(call.a.buffer, "x");
  EXPECT_EQ(call.a.strides, index::to_exprs({800, 1, 80, 8}));
  ASSERT_TRUE(call.convolution.has_value());
  EXPECT_EQ(call.convolution->groups, 8);
  const std::string text = explain_text(*c);
  EXPECT_NE(text.find("convolution"), std::string::npos) << text;
  EXPECT_NE(text.find("groups 8"), std::string::npos) << text;
  // The formats the runtime's plan asks oneDNN for on this CPU, and why (convolution.cpp).
  const std::string formats = external::ConvolutionPlan::automatic_formats(driver::convolution_spec(
      call, index::static_values(c->module.externals[0].output_sizes, "t"),
      index::static_values(c->module.externals[0].output_strides, "t"), DType::Float32));
  EXPECT_NE(formats.find(": "), std::string::npos) << formats;
  EXPECT_NE(text.find("    formats " + formats), std::string::npos) << text;
}

// A transposed convolution is refused by lowering with a message naming it (the bridge leaves
// it to PyTorch); the eager oracle computes it.
TEST(ConvolutionCalls, ATransposedConvolutionIsRefusedByName) {
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[1, 4, 5, 5], w: f32[4, 2, 3, 3]):\n"
      "    y = convolution(x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)\n"
      "    return y\n");
  EXPECT_EQ(eager::run(g, convolution_inputs(g))[0].sizes(), (std::vector<int64_t>{1, 2, 10, 10}));
  try {
    (void)analyze(g);
    FAIL() << "a transposed convolution was lowered";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("transposed convolution"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stax

namespace stax {
namespace {

// An operand dense in neither row-major nor channels-last order (here channels last with a
// padded batch stride, as the [B, 768, 14, 14] view of ViT's [B, 197, 768] tokens without the
// first is) is stored by Stax before the call: the library would reorder it element by element
// (lower_convolution.cpp). A dense channels-last input is still read in place.
TEST(CompiledConvolutions, OperandsDenseInNoOrderAreStoredFirst) {
  for (const std::string t : {"f32", "bf16"}) {
    const ir::Graph g = ir::parse_graph(
        "def f(x: " + t + "[2, 6, 13, 11] strides=[2000, 1, 66, 6], y: " + t +
        "[2, 6, 13, 11] strides=[858, 1, 66, 6], w: " + t + "[8, 6, 3, 3]):\n" +
        "    a = convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "    b = convolution(y, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
        "    return a, b\n");
    const std::vector<Tensor> inputs = convolution_inputs(g);
    const CompiledGraph compiled = compile(g, {});
    std::vector<std::string> read;
    for (const program::ExternalSite& site : compiled.compilation().module.externals) {
      read.push_back(site.call->a.is_input ? site.call->a.buffer : "stored");
    }
    EXPECT_EQ(read, (std::vector<std::string>{"stored", "y"})) << t;
    expect_outputs_match(g, compiled.run(inputs), eager::run(g, inputs), t);
  }
}

}  // namespace
}  // namespace stax
