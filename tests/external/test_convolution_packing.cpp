// ConvolutionPlan::pack_weights (freeze_parameters, docs/freeze_parameters.md): a run given
// the weights packed once computes the same bits as a run that reorders them (and reads the
// copy, not the caller's weights), and the packed
// copy is read only where it belongs: made from the run's weights pointer, in the format the
// primitive reads. A copy from another plan (another weights descriptor) or from other
// weights is ignored and the run reorders as without one, so a stale or foreign copy can never
// be read. Expectations come from what oneDNN picks on the CPU the test runs on.
#include "convolution_case.h"

namespace stax::external {
namespace {

using namespace convolution_testing;  // NOLINT: the suite's own helpers

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// run() of a Forward or BackwardData case with `packed`.
void run_packed(Case& c, const ConvolutionPlan& plan, int threads, const PackedWeights* packed) {
  if (c.spec.pass == ConvolutionPass::Forward) {
    plan.run(c.input.data(), c.weight.data(), c.bias ? c.bias->data() : nullptr, c.output.data(),
             threads, packed);
  } else {
    plan.run(c.output.data(), c.weight.data(), nullptr, c.input.data(), threads, packed);
  }
}

// ResNet-like layers (the 3x3, the strided 3x3, the 1x1 downsample, a grouped one), NCHW and
// channels-last, with and without bias.
std::vector<ConvolutionSpec> layers(DType dt) {
  std::vector<ConvolutionSpec> specs;
  for (bool channels_last : {false, true}) {
    specs.push_back(make_spec(dt, {2, 64, 14, 14}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true,
                              channels_last));
    specs.push_back(make_spec(dt, {1, 32, 16, 16}, {64, 32, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false,
                              channels_last));
    specs.push_back(make_spec(dt, {2, 32, 16, 16}, {64, 32, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, false,
                              channels_last));
    specs.push_back(make_spec(dt, {2, 48, 10, 10}, {32, 12, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, true,
                              channels_last));
  }
  return specs;
}

TEST(ConvolutionPacking, PackedWeightsGiveTheSameBitsAsPerCallReorders) {
  int packed_cases = 0;
  for (DType dt : kDtypes) {
    for (const ConvolutionSpec& geometry : layers(dt)) {
      for (ConvolutionPass pass : {ConvolutionPass::Forward, ConvolutionPass::BackwardData}) {
        const ConvolutionSpec spec = for_pass(geometry, pass);
        for (int threads : {1, 2}) {
          const auto plan = ConvolutionPlan::create(spec, threads);
          const std::string what =
              spec.describe() + " on " + std::to_string(threads) + ": " + plan->implementation();
          Case reordered(spec), frozen(spec);
          reordered.fill(7);
          frozen.fill(7);
          const auto packed = plan->pack_weights(frozen.weight.data(), threads);
          if (!has(plan->implementation(), "weights reordered per call")) {
            // The primitive reads the caller's weights in place: nothing to pack.
            EXPECT_EQ(packed, nullptr) << what;
            continue;
          }
          ASSERT_NE(packed, nullptr) << what;
          ++packed_cases;
          EXPECT_EQ(packed->source(), frozen.weight.data()) << what;
          EXPECT_GE(packed->bytes(), frozen.weight.elements() * dtype_size(dt)) << what;
          EXPECT_TRUE(plan->takes(*packed, threads)) << what;
          const std::string implementation = plan->implementation(packed.get());
          EXPECT_TRUE(has(implementation, "weights packed once (frozen)")) << implementation;
          EXPECT_FALSE(has(implementation, "reordered per call")) << implementation;
          EXPECT_EQ(plan->implementation(nullptr), plan->implementation()) << what;
          reordered.run(*plan, threads);
          run_packed(frozen, *plan, threads, packed.get());
          EXPECT_TRUE(frozen.result() == reordered.result()) << what;
          // The run reads the packed copy, not the caller's weights: weights changed in place
          // after packing are not seen (why the bridge checks them before every call).
          std::mt19937 rng(99);
          frozen.weight.fill(rng);
          frozen.result().fill_all(0.0f);
          run_packed(frozen, *plan, threads, packed.get());
          EXPECT_TRUE(frozen.result() == reordered.result()) << what;
          frozen.run(*plan, threads);
          EXPECT_FALSE(frozen.result() == reordered.result()) << what;
        }
      }
    }
  }
  // Every CPU oneDNN runs reorders OIHW weights into a blocked format for these layers.
  EXPECT_GT(packed_cases, 0);
}

TEST(ConvolutionPacking, CopyOfOtherWeightsIsNotRead) {
  for (DType dt : kDtypes) {
    const ConvolutionSpec spec =
        make_spec(dt, {2, 64, 14, 14}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
    const auto plan = ConvolutionPlan::create(spec, 2);
    Case first(spec), second(spec), expected(spec);
    first.fill(1);
    second.fill(2);
    expected.fill(2);
    const auto packed = plan->pack_weights(first.weight.data(), 2);
    ASSERT_NE(packed, nullptr) << plan->implementation();
    // A call with the second case's weights and the first's packed copy reads its own weights.
    run_packed(second, *plan, 2, packed.get());
    expected.run(*plan, 2);
    EXPECT_TRUE(second.output == expected.output) << spec.describe();
  }
}

TEST(ConvolutionPacking, CopyForAnotherDescriptorIsNotRead) {
  for (DType dt : kDtypes) {
    // The same number of weights in another geometry: another weights descriptor.
    const ConvolutionSpec a =
        make_spec(dt, {2, 32, 14, 14}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false);
    const ConvolutionSpec b =
        make_spec(dt, {2, 64, 14, 14}, {32, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false);
    const auto plan_a = ConvolutionPlan::create(a, 2);
    const auto plan_b = ConvolutionPlan::create(b, 2);
    Case with_packed(b), expected(b);
    with_packed.fill(3);
    expected.fill(3);
    const auto packed = plan_a->pack_weights(with_packed.weight.data(), 2);
    ASSERT_NE(packed, nullptr) << plan_a->implementation();
    EXPECT_FALSE(plan_b->takes(*packed, 2));
    EXPECT_EQ(plan_b->implementation(packed.get()), plan_b->implementation());
    run_packed(with_packed, *plan_b, 2, packed.get());
    expected.run(*plan_b, 2);
    EXPECT_TRUE(with_packed.output == expected.output) << b.describe();

    // One geometry, two kernels: where the blocked formats' kernel reads another weights
    // format than oneDNN's own choice (AMX's VNNI blocks against the AVX-512 ones, say), a copy
    // packed for one is not read by the other.
    const auto any = ConvolutionPlan::create(a, 2, Formats::Any);
    const auto blocked = ConvolutionPlan::create(a, 2, Formats::Blocked);
    Case c(a), reference(a);
    c.fill(4);
    reference.fill(4);
    const auto for_any = any->pack_weights(c.weight.data(), 2);
    ASSERT_NE(for_any, nullptr) << any->implementation();
    if (blocked->takes(*for_any, 2)) continue;  // the same format on this CPU
    run_packed(c, *blocked, 2, for_any.get());
    reference.run(*blocked, 2);
    EXPECT_TRUE(c.output == reference.output) << a.describe();
  }
}

TEST(ConvolutionPacking, Refusals) {
  const ConvolutionSpec geometry =
      make_spec(DType::Float32, {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false);
  const auto weights_pass =
      ConvolutionPlan::create(for_pass(geometry, ConvolutionPass::BackwardWeights), 1);
  Case c(geometry);
  try {
    weights_pass->pack_weights(c.weight.data(), 1);
    ADD_FAILURE() << "pack_weights on backward-weights";
  } catch (const LibraryError& e) {
    EXPECT_TRUE(has(e.what(), "writes the weights")) << e.what();
  }
  const auto forward = ConvolutionPlan::create(geometry, 1);
  EXPECT_THROW(forward->pack_weights(nullptr, 1), LibraryError);
  EXPECT_THROW(forward->pack_weights(c.weight.data(), -1), LibraryError);
  // No library call (an empty batch): nothing to pack.
  const auto empty = ConvolutionPlan::create(
      make_spec(DType::Float32, {0, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false), 1);
  EXPECT_EQ(empty->pack_weights(c.weight.data(), 1), nullptr);
}

}  // namespace
}  // namespace stax::external
