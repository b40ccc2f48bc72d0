// Lowering of the pointwise ops of issue 6, checked by evaluating the lowered loop bodies
// (tests/lowering/pointwise_evaluating_handler.h) against the eager interpreter on every case of
// the torch-derived table (tests/eager/pointwise_torch_cases.inc: every op over every dtype class,
// edge values, scalars and 0-dim operands). This checks that every apply() type-checks, that
// every stored buffer has eager's dtype, and that conversions to the computation dtype, the
// roundings of 16-bit floats after every op and the decompositions of composite ops give
// eager's values. Bit for bit, except where eager uses a fused multiply-add that the primitive
// vocabulary has no op for (f32/f64 add/sub with an alpha, lerp): there the lowered a + alpha*b
// rounds twice, within 1 ulp of the result dtype per operation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "eager/interpreter.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "pointwise_evaluating_handler.h"
#include "pointwise_torch_cases.h"
#include "scheduler/recording_handler.h"

namespace stax::lowering {
namespace {

using eager::testing::InputCase;
using eager::testing::make_input;
using eager::testing::TorchCase;

std::string program(const TorchCase& c) {
  return "def g(" + c.signature + "):\n    r = " + c.call + "\n    return r\n";
}

// Runs every buffer of the lowered graph under the evaluating handler and returns the output.
Tensor evaluate_lowered(const LoweredGraph& lowered, const std::vector<Tensor>& inputs) {
  testing::PointwiseEvaluatingHandler h;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor contiguous = inputs[k].contiguous_copy();
    h.storage[lowered.inputs.at(k).name] = contiguous.as_strided({contiguous.numel()}, {1}, 0);
  }
  for (const ComputedBuffer& buf : lowered.buffers) {
    EXPECT_FALSE(buf.is_reduction()) << buf.name;
    h.storage[buf.name] = Tensor::empty(buf.dtype, {index::static_value(buf.numel(), "test")});
    std::vector<index::Expr> idx;
    for (size_t d = 0; d < buf.ranges.size(); ++d) {
      idx.push_back(index::Expr::var("i" + std::to_string(d)));
    }
    const std::vector<int64_t> ranges = index::static_values(buf.ranges, "test");
    int64_t count = 1;
    for (int64_t r : ranges) count *= r;
    for (int64_t p = 0; p < count; ++p) {
      const std::vector<int64_t> at = unravel_index(p, ranges);
      for (size_t d = 0; d < at.size(); ++d) h.vars["i" + std::to_string(d)] = at[d];
      buf.run_body(h, idx, {});
    }
  }
  const OutputSpec& out = lowered.outputs.at(0);
  const Tensor& storage = h.storage.at(out.buffer);
  const std::vector<int64_t> out_sizes = index::static_values(out.sizes, "test");
  const std::vector<int64_t> out_strides = index::static_values(out.strides, "test");
  Tensor result = Tensor::empty(out.dtype, out_sizes);
  for (int64_t p = 0; p < result.numel(); ++p) {
    const std::vector<int64_t> at = unravel_index(p, out_sizes);
    int64_t offset = index::static_value(out.offset, "test");
    for (size_t d = 0; d < at.size(); ++d) offset += at[d] * out_strides[d];
    if (is_floating(out.dtype)) {
      result.set(at, storage.get({offset}));
    } else {
      eager::detail::store_int(result, at, eager::detail::load_int(storage, {offset}));
    }
  }
  return result;
}

bool fused_in_eager(const TorchCase& c, DType dtype) {
  const std::string& call = c.call;
  if (call.rfind("lerp(", 0) == 0) return true;
  return (dtype == DType::Float32 || dtype == DType::Float64) &&
         call.find("alpha=") != std::string::npos && call.rfind("elu(", 0) != 0;
}

TEST(LowerPointwise, LoweredBodiesEqualEager) {
  int compared = 0;
  for (const TorchCase& c : eager::testing::torch_cases()) {
    SCOPED_TRACE(c.call + " over (" + c.signature + ")");
    const ir::Graph graph = ir::parse_graph(program(c));
    std::vector<Tensor> inputs;
    for (const InputCase& in : c.inputs) inputs.push_back(make_input(in));
    const Tensor expected = eager::run(graph, inputs).at(0);
    Tensor got;
    try {
      got = evaluate_lowered(lower(graph), inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    ASSERT_EQ(got.dtype(), expected.dtype());
    ASSERT_EQ(got.sizes(), expected.sizes());
    for (int64_t p = 0; p < got.numel(); ++p) {
      if (!is_floating(got.dtype())) {
        EXPECT_EQ(eager::detail::load_int(got, unravel_index(p, got.sizes())),
                  eager::detail::load_int(expected, unravel_index(p, got.sizes())))
            << "at " << p;
        continue;
      }
      const double g = got.get_flat(p);
      const double e = expected.get_flat(p);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(g)) << "at " << p << ": " << g;
      } else if (fused_in_eager(c, got.dtype()) && !std::isinf(e)) {
        const double ulp = got.dtype() == DType::Float64 ? 0x1p-52 : 0x1p-23;
        EXPECT_NEAR(g, e, 4 * ulp * std::max(std::abs(e), 1.0)) << "at " << p;
      } else {
        EXPECT_TRUE(g == e && std::signbit(g) == std::signbit(e))
            << "at " << p << ": lowered " << g << ", eager " << e;
      }
    }
    ++compared;
  }
  EXPECT_GT(compared, 1000);
}

// A bf16 chain stays in float32 between primitives but is rounded to bf16 after every ATen op.
TEST(LowerPointwise, SixteenBitFloatsRoundAfterEveryOp) {
  const LoweredGraph g = lower(ir::parse_graph(R"(
def f(x: bf16[8]):
    a = mul(x, 3.0)
    b = add(a, 1.7)
    return b
)"));
  ASSERT_EQ(g.buffers.size(), 1u);
  EXPECT_EQ(g.buffers[0].dtype, DType::BFloat16);
  scheduler::RecordingHandler rec;
  g.buffers[0].run_body(rec, {index::Expr::var("i0")}, {});
  // mul then add, both on float32 operands (apply() checked it).
  EXPECT_EQ(rec.ops, (std::vector<PointwiseOp>{PointwiseOp::Mul, PointwiseOp::Add}));
  ASSERT_EQ(rec.stores.size(), 1u);
  EXPECT_EQ(rec.stores[0].dtype, DType::BFloat16);
}

// The one promotion rule: u8 with i8 computes in i16, f16 with bf16 in f32, and a 0-dim f32
// tensor does not widen an f16 tensor.
TEST(LowerPointwise, OperandsPromoteLikeTheIr) {
  struct Case {
    const char* program;
    DType stored;
  };
  for (const Case& c : {
           Case{"def f(x: u8[4], y: i8[4]):\n    r = add(x, y)\n    return r\n", DType::Int16},
           Case{"def f(x: f16[4], y: bf16[4]):\n    r = mul(x, y)\n    return r\n", DType::Float32},
           Case{"def f(x: f16[4], y: f32[]):\n    r = sub(x, y)\n    return r\n", DType::Float16},
           Case{"def f(x: i32[4]):\n    r = div(x, 2)\n    return r\n", DType::Float32},
           Case{"def f(x: i32[4]):\n    r = lt(x, 2.5)\n    return r\n", DType::Bool},
       }) {
    const LoweredGraph g = lower(ir::parse_graph(c.program));
    ASSERT_EQ(g.buffers.size(), 1u) << c.program;
    EXPECT_EQ(g.buffers[0].dtype, c.stored) << c.program;
    scheduler::RecordingHandler rec;
    EXPECT_NO_THROW(g.buffers[0].run_body(rec, {index::Expr::var("i0")}, {})) << c.program;
  }
}

}  // namespace
}  // namespace stax::lowering
