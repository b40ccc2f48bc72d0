// ConvolutionPlan's automatic choice of memory formats per CPU kind (convolution.cpp): where
// oneDNN's kernel for its own formats runs on AMX tiles, Automatic takes that kernel (channels-
// last activations, NCHW callers' reordered); elsewhere the measured rule without AMX (blocked
// for NCHW callers). Expectations come from what oneDNN reports on the CPU the test runs on, so
// they hold on Xeons with AMX and on AMD Zen 4/5 alike. And the chosen path computes what the
// plain one does: tails, strides, groups, both dtypes, every pass.
#include "convolution_case.h"

namespace stax::external {
namespace {

using namespace convolution_testing;  // NOLINT: the suite's own helpers

bool on_matrix_engine(const ConvolutionPlan& plan) {
  return plan.implementation().find("amx") != std::string::npos;
}

// ResNet-like geometries: a 3x3, a strided 3x3 and a 1x1 downsample.
std::vector<ConvolutionSpec> resnet_like(DType dt, bool channels_last) {
  return {make_spec(dt, {2, 64, 14, 14}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false,
                    channels_last),
          make_spec(dt, {2, 32, 16, 16}, {64, 32, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false,
                    channels_last),
          make_spec(dt, {2, 32, 16, 16}, {64, 32, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, false,
                    channels_last)};
}

TEST(Convolution, AutomaticTakesTheMatrixEngineWhereOneDnnOffersIt) {
  int matrix_engine_cases = 0;
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      for (const ConvolutionSpec& geometry : resnet_like(dt, channels_last)) {
        for (ConvolutionPass pass : kPasses) {
          const ConvolutionSpec s = for_pass(geometry, pass);
          const auto preferred = ConvolutionPlan::create(s, 2, Formats::Any);
          const auto automatic = ConvolutionPlan::create(s, 2);
          const std::string what = s.describe() + ": " + automatic->implementation() +
                                   " (any: " + preferred->implementation() + ")";
          EXPECT_EQ(on_matrix_engine(*automatic), on_matrix_engine(*preferred)) << what;
          EXPECT_EQ(ConvolutionPlan::automatic_formats(s, 2), automatic->formats_reason()) << what;
          if (on_matrix_engine(*preferred)) {
            ++matrix_engine_cases;
            EXPECT_NE(automatic->formats_reason().find("AMX tiles"), std::string::npos) << what;
            // NCHW activations reordered to the AMX kernel's channels-last format, a channels-
            // last caller's read in place.
            EXPECT_NE(automatic->implementation().find(channels_last ? "in place"
                                                                     : "reordered from nchw"),
                      std::string::npos)
                << what;
          } else if (!channels_last) {
            // Without AMX, NCHW callers get the blocked kernels (bench/conv/RESULTS.md), or the
            // reason names oneDNN's refusal of them.
            const std::string& reason = automatic->formats_reason();
            const std::string blocked =
                "blocked (" + std::to_string(ConvolutionPlan::blocked_channels()) + " channels)";
            if (reason.find(blocked + " refused") == std::string::npos) {
              EXPECT_NE(automatic->implementation().find(blocked_format()), std::string::npos)
                  << what;
              EXPECT_NE(reason.find("without AMX"), std::string::npos) << what;
            }
          }
        }
      }
    }
  }
  // float32 never runs on AMX tiles; bfloat16 does wherever the CPU has them.
  RecordProperty("matrix_engine_cases", matrix_engine_cases);
}

// The exception to the AMX rule: backward weights over fewer than 16 input channels per group
// (ViT's patch embedding: 3 channels, a 16x16 kernel at stride 16) leaves the AMX kernel for
// oneDNN's GEMM-based one on the caller's layouts, measured 10x faster standalone and over 100x
// inside a training step; wider inputs keep AMX where oneDNN offers it.
TEST(Convolution, FewChannelBackwardWeightsLeaveTheMatrixEngine) {
  const ConvolutionSpec patch = for_pass(make_spec(DType::BFloat16, {2, 3, 64, 64}, {96, 3, 16, 16},
                                                   {16, 16}, {0, 0}, {1, 1}, 1, false, false),
                                         ConvolutionPass::BackwardWeights);
  const auto automatic = ConvolutionPlan::create(patch, 2);
  EXPECT_FALSE(on_matrix_engine(*automatic)) << automatic->implementation();
  const auto preferred = ConvolutionPlan::create(patch, 2, Formats::Any);
  if (on_matrix_engine(*preferred)) {
    EXPECT_NE(automatic->formats_reason().find("fewer than 16 input channels"), std::string::npos)
        << automatic->formats_reason();
  }
  const ConvolutionSpec wide =
      for_pass(make_spec(DType::BFloat16, {2, 32, 64, 64}, {96, 32, 16, 16}, {16, 16}, {0, 0},
                         {1, 1}, 1, false, false),
               ConvolutionPass::BackwardWeights);
  EXPECT_EQ(on_matrix_engine(*ConvolutionPlan::create(wide, 2)),
            on_matrix_engine(*ConvolutionPlan::create(wide, 2, Formats::Any)));
}

// Whatever Automatic picks on this CPU (AMX's channels-last kernels with NCHW activations
// reordered in and out, or the blocked ones) computes the direct sum over the caller's plain
// layout (the double reference): channel, row and column tails, strides, groups, bias, every
// pass, both dtypes. (EachFormat in test_convolution.cpp checks each format asked for alone.)
TEST(Convolution, AutomaticFormatsMatchTheReference) {
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      const ConvolutionSpec specs[] = {
          make_spec(dt, {2, 40, 9, 11}, {24, 40, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true,
                    channels_last),
          make_spec(dt, {3, 36, 13, 10}, {20, 36, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false,
                    channels_last),
          make_spec(dt, {2, 48, 10, 10}, {32, 12, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, true,
                    channels_last),
      };
      for (const ConvolutionSpec& geometry : specs) {
        for (ConvolutionPass pass : kPasses) {
          const ConvolutionSpec s = for_pass(geometry, pass);
          check(s, "automatic", Formats::Automatic, 11);
        }
      }
    }
  }
}

}  // namespace
}  // namespace stax::external
