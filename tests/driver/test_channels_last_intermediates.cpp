// Intermediates stored channels last around library convolutions (lowering/channels_last.h):
// a convolution's output is stored channels last exactly where the library's plan says it
// runs in place on that layout, the values computed from it (a batch norm's scale and shift,
// ReLU, a residual add) follow it, the next convolution reads them in place, and graph
// outputs (and the values they view) keep eager's row-major layout. Every result against the
// eager oracle, with the layouts chosen and with every intermediate row-major
// (CompileOptions::channels_last_intermediates = false), at every SIMD level this CPU runs,
// 1 and 2 threads. Expectations come from the library's answer on this machine, never from
// the CPU kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/external_calls.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "external/convolution.h"
#include "ir/graph.h"
#include "runtime/simd.h"

namespace stax {
namespace {

// A residual block (3x3 convolutions, a strided 1x1 shortcut), max pooling, a convolution
// whose output is viewed by a graph output, a small convolution (at most 64 output positions,
// where without AMX the measured rule prefers the blocked format), and a 3-D pair.
std::string block_program(const std::string& t) {
  return "def f(x: " + t + "[2, 16, 12, 10], w1: " + t + "[32, 16, 3, 3], w2: " + t +
         "[32, 32, 3, 3], wd: " + t + "[32, 16, 1, 1], s: " + t + "[32, 1, 1], h: " + t +
         "[32, 1, 1], w3: " + t + "[8, 32, 3, 3], xs: " + t + "[1, 16, 4, 4], x3: " + t +
         "[1, 4, 6, 8, 8], v1: " + t + "[8, 4, 3, 3, 3], v2: " + t + "[8, 8, 3, 3, 3]):\n" +
         "    c1 = convolution(x, w1, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    a1 = mul(c1, s)\n"
         "    b1 = add(a1, h)\n"
         "    r1 = relu(b1)\n"
         "    c2 = convolution(r1, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    d = convolution(x, wd, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1)\n"
         "    a2 = mul(c2, s)\n"
         "    b2 = add(a2, d)\n"
         "    r2 = relu(b2)\n"
         "    p, i = max_pool2d_with_indices(r2, [3, 3], [2, 2], [1, 1])\n"
         "    c3 = convolution(p, w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    flat = reshape(c3, [2, 8, 9])\n"
         "    cs = convolution(xs, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
         "    rs = relu(cs)\n"
         "    e1 = convolution(x3, v1, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], "
         "1)\n"
         "    q1 = relu(e1)\n"
         "    e2 = convolution(q1, v2, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], "
         "1)\n"
         "    return r2, flat, rs, e2\n";
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes) {
  return external::TensorLayout::channels_last(sizes).strides;
}

class ChannelsLastIntermediates : public ::testing::TestWithParam<DType> {};

TEST_P(ChannelsLastIntermediates, FollowTheLibrarysPlanAndMatchEager) {
  const std::string t(dtype_name(GetParam()));
  const ir::Graph g = ir::parse_graph(block_program(t));
  std::vector<Tensor> inputs;
  uint64_t seed = 5;
  // Values in [0, 1) but the shift h, so that ReLU zeroes some: the tolerance model bounds a
  // sum's error by its terms' magnitudes, the result's own size for terms of one sign.
  for (ir::ValueRef in : g.inputs()) {
    const ir::TensorType& type = g.value(in).type;
    const double low = g.value(in).name == "h" ? -1.0 : 0.0;
    inputs.push_back(eager::random_tensor(type.dtype, type.sizes, seed++, low, 1.0));
  }
  const std::vector<Tensor> expected = eager::run(g, inputs);

  CompileOptions o;
  o.num_threads = 2;
  const CompiledGraph compiled = compile(g, o);
  const lowering::LoweredGraph& lowered = compiled.compilation().lowered;
  std::map<std::string, const lowering::ComputedBuffer*> buffers;
  for (const lowering::ComputedBuffer& b : lowered.buffers) buffers[b.name] = &b;

  // Each forward convolution: channels last exactly where the library runs it in place so,
  // except c3, whose output a graph output views.
  size_t convolutions = 0;
  for (const lowering::ComputedBuffer& b : lowered.buffers) {
    if (!b.external || !b.external->convolution) continue;
    ++convolutions;
    const std::vector<int64_t> sizes =
        stax::index::static_values(b.external->convolution->result_sizes, "test");
    // c3, which `flat` views, and e2, itself an output.
    const bool viewed_by_output =
        sizes == std::vector<int64_t>{2, 8, 3, 3} ||
        std::any_of(lowered.outputs.begin(), lowered.outputs.end(),
                    [&b](const lowering::OutputSpec& out) { return out.buffer == b.name; });
    const bool in_place = external::ConvolutionPlan::runs_channels_last_in_place(
        driver::convolution_spec(*b.external, sizes, ir::contiguous_strides(sizes), b.dtype),
        nullptr);
    if (in_place && !viewed_by_output) {
      EXPECT_EQ(stax::index::static_values(b.strides, "test"), channels_last_strides(sizes))
          << t << ", " << b.name;
    } else {
      EXPECT_EQ(stax::index::static_values(b.strides, "test"), ir::contiguous_strides(sizes))
          << t << ", " << b.name;
    }
  }
  EXPECT_EQ(convolutions, 7u) << t;
  // Where c1 is stored channels last, r1 = relu(c1 * s + h) is too, and c2 reads it in place;
  // the residual sum r2, a graph output, is row-major whatever it reads.
  for (const lowering::ComputedBuffer& b : lowered.buffers) {
    if (!b.external || !b.external->convolution) continue;
    if (b.external->convolution->result_sizes != index::to_exprs({2, 32, 6, 5})) continue;
    const lowering::ExternalOperand& input = b.external->a;
    if (input.is_input) continue;  // the shortcut d reads x
    if (input.buffer.empty()) continue;
    const lowering::ComputedBuffer& read = *buffers.at(input.buffer);
    if (read.external) continue;  // c2 reads r1's buffer
    const auto c1 = std::find_if(lowered.buffers.begin(), lowered.buffers.end(), [](const auto& x) {
      return x.external && x.external->convolution && x.external->a.is_input &&
             x.external->convolution->result_sizes == index::to_exprs({2, 32, 6, 5}) &&
             x.external->b.sizes == index::to_exprs({32, 16, 3, 3});
    });
    ASSERT_NE(c1, lowered.buffers.end());
    const bool c1_channels_last =
        c1->strides == index::to_exprs(channels_last_strides({2, 32, 6, 5}));
    const std::vector<int64_t> read_sizes = index::static_values(read.sizes, "test");
    EXPECT_EQ(read.strides, index::to_exprs(c1_channels_last ? channels_last_strides(read_sizes)
                                                             : ir::contiguous_strides(read_sizes)))
        << t << ", " << read.name << " (relu) read by the second convolution";
    EXPECT_EQ(input.strides, read.strides) << t << ": the second convolution reads it in place";
  }
  for (const lowering::OutputSpec& out : lowered.outputs) {
    EXPECT_EQ(out.strides, index::contiguous_strides(out.sizes)) << t << ", output " << out.buffer;
  }
  for (runtime::SimdLevel simd : runtime::runnable_simd_levels()) {
    for (bool chosen : {true, false}) {
      CompileOptions c;
      c.simd = simd;
      c.num_threads = 2;
      c.channels_last_intermediates = chosen;
      const CompiledGraph run = compile(g, c);
      for (int threads : {1, 2}) {
        RunOptions r;
        r.num_threads = threads;
        expect_outputs_match(g, run.run(inputs, r), expected,
                             t + (chosen ? " channels last" : " row-major") + ", simd " +
                                 std::string(runtime::simd_level_name(simd)) + ", " +
                                 std::to_string(threads) + " threads");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ChannelsLastIntermediates,
                         ::testing::Values(DType::Float32, DType::BFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Without the option no value is stored channels last.
TEST(ChannelsLastIntermediates, OffStoresEveryIntermediateRowMajor) {
  const ir::Graph g = ir::parse_graph(block_program("f32"));
  CompileOptions o;
  o.channels_last_intermediates = false;
  const CompiledGraph compiled = compile(g, o);
  for (const lowering::ComputedBuffer& b : compiled.compilation().lowered.buffers) {
    EXPECT_EQ(b.strides, index::contiguous_strides(b.sizes)) << b.name;
  }
}

}  // namespace
}  // namespace stax
