// ConvolutionPlan (src/external): oneDNN convolutions and both of their gradients
// (backward-data, backward-weights) against naive direct sums accumulating in double, float32
// and bfloat16, 1-D to 3-D, stride / padding / dilation / groups (depthwise included), bias or
// none, NCHW and channels-last activations, strided weights, odd sizes (every kernel tail),
// each memory format the plan can ask for, empty batches and channels (a gradient of zeros),
// 1 and 2 threads, concurrent runs of one plan, refusals, describe() and implementation().
#include "convolution_case.h"

namespace stax::external {
namespace {

using namespace convolution_testing;  // NOLINT: the suite's own helpers

TEST(Convolution, Conv2dLayoutsAndBias) {
  // Odd sizes: channel, row and column tails of every kernel.
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      for (bool with_bias : {false, true}) {
        check_passes(make_spec(dt, {2, 5, 9, 11}, {7, 5, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1,
                               with_bias, channels_last),
                     "3x3");
        check_passes(make_spec(dt, {3, 19, 7, 6}, {21, 19, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1,
                               with_bias, channels_last),
                     "1x1");
      }
    }
  }
}

TEST(Convolution, StridePaddingDilation) {
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      // Strides that do not divide the padded input: the last input rows are never read.
      check_passes(make_spec(dt, {2, 6, 10, 13}, {8, 6, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true,
                             channels_last),
                   "stride 2");
      check_passes(make_spec(dt, {1, 4, 12, 11}, {5, 4, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, true,
                             channels_last),
                   "dilation 2");
      check_passes(make_spec(dt, {2, 3, 11, 14}, {4, 3, 3, 2}, {2, 1}, {0, 1}, {1, 3}, 1, false,
                             channels_last),
                   "per-dimension");
      // A stem: few input channels, a large kernel with stride (ResNet's 7x7, ViT's patches).
      check_passes(make_spec(dt, {1, 3, 30, 30}, {16, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1, true,
                             channels_last),
                   "7x7 stem");
      check_passes(make_spec(dt, {2, 3, 32, 32}, {24, 3, 8, 8}, {8, 8}, {0, 0}, {1, 1}, 1, true,
                             channels_last),
                   "patch embedding");
    }
  }
}

TEST(Convolution, Groups) {
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      check_passes(
          make_spec(dt, {2, 8, 9, 9}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, true, channels_last),
          "groups 2");
      check_passes(make_spec(dt, {2, 32, 10, 12}, {64, 8, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 4, false,
                             channels_last),
                   "groups 4, 8 channels each");
      check_passes(make_spec(dt, {2, 19, 11, 9}, {19, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 19, true,
                             channels_last),
                   "depthwise");
      check_passes(make_spec(dt, {1, 32, 14, 14}, {32, 1, 5, 5}, {2, 2}, {2, 2}, {2, 2}, 32, true,
                             channels_last),
                   "depthwise strided dilated");
      check_passes(make_spec(dt, {2, 4, 7, 8}, {12, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, true,
                             channels_last),
                   "depthwise multiplier 3");
    }
  }
}

TEST(Convolution, OneAndThreeSpatialDimensions) {
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      check_passes(make_spec(dt, {2, 6, 23}, {10, 6, 5}, {2}, {2}, {1}, 1, true, channels_last),
                   "conv1d");
      check_passes(make_spec(dt, {3, 16, 31}, {16, 1, 4}, {1}, {3}, {2}, 16, false, channels_last),
                   "conv1d depthwise dilated");
      check_passes(make_spec(dt, {2, 3, 5, 6, 7}, {8, 3, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1},
                             1, true, channels_last),
                   "conv3d");
      check_passes(make_spec(dt, {1, 8, 6, 7, 9}, {10, 4, 3, 1, 3}, {2, 1, 2}, {1, 0, 2}, {1, 1, 2},
                             2, false, channels_last),
                   "conv3d groups strided dilated");
    }
  }
}

// Geometry at the edges of what oneDNN's kernels take (some fall back to another format):
// padding wider than the kernel, a stride longer than it, a kernel wider than the input,
// dilations that skip most of the input, a single channel.
TEST(Convolution, UnusualGeometry) {
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      check_passes(make_spec(dt, {2, 16, 9, 9}, {16, 16, 3, 3}, {1, 1}, {5, 5}, {1, 1}, 1, true,
                             channels_last),
                   "padding 5 around 3x3");
      check_passes(make_spec(dt, {2, 16, 9, 9}, {16, 16, 1, 1}, {1, 1}, {2, 2}, {1, 1}, 1, true,
                             channels_last),
                   "padded 1x1");
      check_passes(make_spec(dt, {2, 16, 9, 9}, {16, 16, 2, 2}, {4, 4}, {0, 0}, {1, 1}, 1, true,
                             channels_last),
                   "stride 4 over 2x2");
      check_passes(make_spec(dt, {2, 16, 4, 4}, {16, 16, 5, 5}, {1, 1}, {3, 3}, {1, 1}, 1, true,
                             channels_last),
                   "5x5 over 4x4");
      check_passes(make_spec(dt, {2, 16, 30, 30}, {16, 16, 3, 3}, {3, 3}, {0, 0}, {5, 5}, 1, true,
                             channels_last),
                   "dilation 5 stride 3");
      check_passes(
          make_spec(dt, {1, 1, 9, 9}, {1, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, channels_last),
          "one channel");
    }
  }
}

// oneDNN's 1x1 backward-weights kernels write past their workspace when they copy a strided
// channels-last input of a channel count that is not a multiple of their block into a
// unit-stride one (oneDNN issue #6035; convolution_backward.cpp): the plan must not pick them
// there. Without that, these runs corrupt the heap (an abort in a later free(), or a crash)
// on AVX-512 and give a wrong grad_weight on AVX2. Channel counts below, at and above a
// block, both layouts, several runs per plan.
TEST(Convolution, StridedOneByOneBackwardWeightsOfFewChannels) {
  for (int64_t channels : {4, 8, 12, 15, 16, 24}) {
    for (bool channels_last : {false, true}) {
      const ConvolutionSpec s =
          for_pass(make_spec(DType::Float32, {8, channels, 40, 40}, {16, channels, 1, 1}, {2, 2},
                             {0, 0}, {1, 1}, 1, false, channels_last),
                   ConvolutionPass::BackwardWeights);
      const std::string what =
          std::to_string(channels) + " channels" + (channels_last ? ", channels-last" : "");
      auto plan = ConvolutionPlan::create(s, 2);
      if (channels % 16 != 0 && channels_last) {
        const std::string impl = plan->implementation();
        EXPECT_FALSE(impl.find("1x1") != std::string::npos &&
                     impl.find("(nhwc") != std::string::npos)
            << what << ": " << impl;
      }
      for (int run = 0; run < 4; ++run) {
        std::optional<Case::Reference> reference;
        for (int t : {1, 2}) {
          Case c(s);
          c.fill(static_cast<uint32_t>(run + 1));
          if (!reference) reference = c.reference();
          c.run(*plan, t);
          c.expect_matches(*reference, what + " (" + std::to_string(t) + " threads, " +
                                           plan->implementation() + ")");
        }
      }
    }
  }
}

// Operands as views: the weight a permutation of how it is stored ([kh][kw][C_in][C_out], as
// a transposed export would give), an input sliced from a wider one, an output written into
// a wider buffer (a slice of a concatenation).
TEST(Convolution, StridedOperands) {
  for (DType dt : kDtypes) {
    ConvolutionSpec s = make_spec(dt, {2, 6, 9, 10}, {7, 6, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
    s.weight.strides = {1, 7, 3 * 6 * 7, 6 * 7};
    check_passes(s, "permuted weight");
    s.input.strides = {6 * 9 * 13, 9 * 13, 13, 1};  // columns 0..9 of 13
    check_passes(s, "sliced input");
    s.output.strides = {11 * 9 * 10, 9 * 10, 10, 1};  // channels 0..6 of 11
    s.bias = TensorLayout{{7}, {2}};                  // every other element
    check_passes(s, "sliced output, strided bias");
  }
}

// Each memory format the plan can ask oneDNN for computes the same convolution; the blocked
// one pads 20 and 7 channels to a multiple of its block (its reorders must zero the padding),
// and reads the 3 channels of a stem plain.
TEST(Convolution, EachFormat) {
  const int64_t block = ConvolutionPlan::blocked_channels();
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      const ConvolutionSpec specs[] = {
          make_spec(dt, {2, 20, 9, 11}, {7, 20, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true,
                    channels_last),
          make_spec(dt, {2, 3, 17, 15}, {24, 3, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 1, true,
                    channels_last),
      };
      for (const ConvolutionSpec& s : specs) {
        for (Formats f : {Formats::Any, Formats::ChannelsLast, Formats::Blocked, Formats::Caller}) {
          for (ConvolutionPass pass : kPasses) {
            const ConvolutionSpec p = for_pass(s, pass);
            // oneDNN 2.6 has only its reference kernel for some passes of the stem (fewer
            // channels than its block) in the blocked format asked for alone: with 16-channel
            // blocks (AVX-512) a bfloat16 backward-weights pass reading that input plain, with
            // 8-channel ones (AVX2) a backward-data pass writing its grad_input blocked.
            // create() refuses those, naming the reference kernel (Automatic falls back to
            // nhwc there); every other format and pass has a plan.
            const bool stem_blocked = f == Formats::Blocked && s.input.sizes[1] < block;
            const bool refused =
                stem_blocked &&
                (block == 16 ? pass == ConvolutionPass::BackwardWeights && dt == DType::BFloat16
                             : pass == ConvolutionPass::BackwardData);
            if (refused) {
              try {
                ConvolutionPlan::create(p, 1, f);
                ADD_FAILURE() << "created " << p.describe();
              } catch (const LibraryError& e) {
                EXPECT_NE(std::string(e.what()).find("reference"), std::string::npos) << e.what();
              }
              continue;
            }
            check(p, "formats " + std::to_string(static_cast<int>(f)), f, 3);
          }
        }
      }
    }
  }
}

// Eager's bfloat16 convolution and its gradients accumulate in float32 (the forward one with
// the bias) and round to bfloat16 once: on inputs whose float32 sums are exact, every element
// is the exact sum rounded once (rounding the product sum and then the sum with the bias, or
// partial sums of a gradient, would differ on some). Both geometries' kernels: oneDNN's
// direct ones, and for the backward passes of padding wider than the kernel its GEMM ones.
TEST(Convolution, BFloat16RoundsOnceOnExactInputs) {
  for (bool channels_last : {false, true}) {
    const ConvolutionSpec geometries[] = {
        make_spec(DType::BFloat16, {2, 24, 10, 10}, {32, 24, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true,
                  channels_last),
        make_spec(DType::BFloat16, {2, 16, 9, 9}, {16, 16, 3, 3}, {1, 1}, {5, 5}, {1, 1}, 1, true,
                  channels_last),
    };
    for (const ConvolutionSpec& geometry : geometries) {
      for (ConvolutionPass pass : kPasses) {
        const ConvolutionSpec s = for_pass(geometry, pass);
        auto plan = ConvolutionPlan::create(s, 2);
        Case c(s);
        c.fill(7, /*exact=*/true);
        c.run(*plan, 2);
        // The exact sums, from a float32 plan of the same exact operands (its sums are exact).
        ConvolutionSpec s32 = s;
        s32.dtype = DType::Float32;
        Case exact(s32);
        auto copy = [](const Tensor& from, Tensor& to) {
          for (size_t o = 0; o < from.elements(); ++o) to.f32[o] = from.at_offset(o);
        };
        copy(c.input, exact.input);
        copy(c.weight, exact.weight);
        copy(c.output, exact.output);
        if (c.bias) copy(*c.bias, *exact.bias);
        exact.run(*ConvolutionPlan::create(s32, 2), 2);
        int differ = 0, rounded = 0;
        for (size_t o = 0; o < c.result().elements(); ++o) {
          const float sum = exact.result().f32[o];
          differ += c.result().bf16[o] != float_to_bf16(sum);
          rounded += bf16_to_float(float_to_bf16(sum)) != sum;
        }
        EXPECT_EQ(differ, 0) << s.describe() << ": " << plan->implementation();
        EXPECT_GT(rounded, 100) << "the sums should need rounding to bfloat16";
      }
    }
  }
}

// Large enough for oneDNN to split the work over both threads.
TEST(Convolution, ParallelPath) {
  for (DType dt : kDtypes) {
    check_passes(make_spec(dt, {2, 64, 28, 28}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true),
                 "64ch", Formats::Automatic, 5, {2, 1});
    check_passes(
        make_spec(dt, {1, 48, 20, 20}, {96, 48, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, true),
        "64ch channels-last", Formats::Automatic, 5, {2, 1});
  }
}

TEST(Convolution, EmptyBatchAndChannels) {
  for (DType dt : kDtypes) {
    const ConvolutionSpec cases[] = {
        make_spec(dt, {0, 4, 5, 5}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true),
        // Eager gives an input without channels an output without channels.
        make_spec(dt, {2, 0, 5, 5}, {6, 0, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true),
    };
    for (const ConvolutionSpec& s : cases) {
      std::string why;
      ASSERT_TRUE(ConvolutionPlan::supported(s, &why)) << s.describe() << ": " << why;
      auto plan = ConvolutionPlan::create(s);
      EXPECT_EQ(plan->implementation(), "no library call: the output is empty");
      plan->run(nullptr, nullptr, nullptr, nullptr, 1);  // nothing is read or written
    }
  }
}

// A backward pass whose sums have no terms writes zeros without a library call: grad_weight
// of an empty batch, grad_input of a convolution without output channels (written through
// strided and channels-last layouts too); an empty gradient is not written at all.
TEST(Convolution, EmptyOperandsOfBackwardPasses) {
  using P = ConvolutionPass;
  for (DType dt : kDtypes) {
    for (bool channels_last : {false, true}) {
      struct Empty {
        ConvolutionSpec spec;
        const char* implementation;
      };
      ConvolutionSpec permuted_weight = make_spec(dt, {0, 6, 5, 5}, {8, 3, 3, 3}, {1, 1}, {1, 1},
                                                  {1, 1}, 2, false, channels_last);
      permuted_weight.weight.strides = {1, 8, 3 * 3 * 8, 3 * 8};
      const Empty cases[] = {
          {for_pass(make_spec(dt, {0, 4, 5, 5}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false,
                              channels_last),
                    P::BackwardWeights),
           "no library call: grad_weight is zeros (grad_output and input are empty)"},
          {for_pass(permuted_weight, P::BackwardWeights),
           "no library call: grad_weight is zeros (grad_output and input are empty)"},
          {for_pass(make_spec(dt, {2, 5, 7, 6}, {0, 5, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false,
                              channels_last),
                    P::BackwardData),
           "no library call: grad_input is zeros (grad_output and weight are empty)"},
          {for_pass(make_spec(dt, {0, 4, 5, 5}, {6, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false,
                              channels_last),
                    P::BackwardData),
           "no library call: grad_input is empty"},
          {for_pass(make_spec(dt, {2, 5, 7, 6}, {0, 5, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false,
                              channels_last),
                    P::BackwardWeights),
           "no library call: grad_weight is empty"},
          {for_pass(make_spec(dt, {2, 0, 5}, {6, 0, 3}, {1}, {1}, {1}, 1, false, channels_last),
                    P::BackwardWeights),
           "no library call: grad_weight is empty"},
      };
      for (const Empty& e : cases) {
        std::string why;
        ASSERT_TRUE(ConvolutionPlan::supported(e.spec, &why)) << e.spec.describe() << ": " << why;
        auto plan = ConvolutionPlan::create(e.spec);
        EXPECT_EQ(plan->implementation(), e.implementation) << e.spec.describe();
        for (int threads : {1, 2}) {
          Case c(e.spec);
          c.fill(1);
          plan->run(nullptr, nullptr, nullptr, c.result().data(), threads);  // nothing is read
          c.expect_matches_reference("empty operands");
        }
      }
    }
  }
}

TEST(Convolution, ConcurrentRunsOfOnePlan) {
  for (ConvolutionPass pass : kPasses) {
    const ConvolutionSpec s = for_pass(
        make_spec(DType::Float32, {2, 24, 17, 17}, {32, 24, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true),
        pass);
    auto plan = ConvolutionPlan::create(s, 1);
    // What each thread count gives when nothing runs concurrently (a separate plan, so that
    // `plan` has no 2-thread primitive yet).
    Case serial(s);
    serial.fill(9);
    Case serial_two_threads = serial;
    serial.run(*plan, 1);
    serial_two_threads.run(*ConvolutionPlan::create(s, 2), 2);
    std::vector<Case> cases(2, serial);
    std::vector<std::thread> workers;
    std::vector<int> mismatches(2, 0);
    // The second worker alternates 1 and 2 threads: the plan builds its 2-thread primitives
    // while the first worker runs the 1-thread ones.
    for (int w = 0; w < 2; ++w) {
      workers.emplace_back([&, w] {
        for (int r = 0; r < 30; ++r) {
          const int threads = w == 1 ? 1 + r % 2 : 1;
          cases[w].result().fill_all(0.0f);
          cases[w].run(*plan, threads);
          mismatches[w] +=
              !(cases[w].result() == (threads == 1 ? serial : serial_two_threads).result());
        }
      });
    }
    for (auto& t : workers) t.join();
    EXPECT_EQ(mismatches, (std::vector<int>{0, 0})) << s.describe();
  }
}

// Issue 32, point 4: oneDNN counts in 32-bit ints and divides by zero (SIGFPE) choosing a
// kernel for sizes of 2^32. Such specs are refused with what is too large named (a Stax loop
// nest computes them), never handed to oneDNN; analysis needs no buffers.
TEST(Convolution, SizesOver32BitsAreRefusedNotHandedToTheLibrary) {
  const int64_t g = int64_t{1} << 32;
  const std::pair<ConvolutionSpec, std::string> cases[] = {
      {make_spec(DType::Float32, {1, 1, g}, {1, 1, 1}, {1}, {0}, {1}, 1, false), "4294967296"},
      {make_spec(DType::Float32, {1, g, 1}, {1, g, 1}, {1}, {0}, {1}, 1, false), "4294967296"},
      {make_spec(DType::Float32, {1, 1, g}, {1, 1, g}, {1}, {0}, {1}, 1, false), "4294967296"},
      {make_spec(DType::Float32, {1, 1, 1}, {g, 1, 1}, {1}, {0}, {1}, 1, true), "4294967296"},
      {make_spec(DType::BFloat16, {g, 1, 1}, {1, 1, 1}, {1}, {0}, {1}, 1, false), "4294967296"},
      {make_spec(DType::Float32, {1, 1, 3}, {1, 1, 1}, {g}, {0}, {1}, 1, false),
       "the stride 4294967296"},
      {make_spec(DType::Float32, {1, 1, 1 << 16, 1 << 16}, {1, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1,
                 false),
       ""}};
  for (const auto& [spec, word] : cases) {
    for (ConvolutionPass pass : kPasses) {
      const ConvolutionSpec s = for_pass(spec, pass);
      std::string why;
      const bool supported = ConvolutionPlan::supported(s, &why);
      if (word.empty()) {  // 2^32 elements, every size and stride below 2^31: oneDNN's
        EXPECT_EQ(why.find("32-bit"), std::string::npos) << why;
        continue;
      }
      EXPECT_FALSE(supported) << s.describe();
      EXPECT_NE(why.find(word), std::string::npos) << why;
      EXPECT_NE(why.find("32-bit"), std::string::npos) << why;
      EXPECT_THROW(ConvolutionPlan::create(s), LibraryError) << s.describe();
    }
  }
}

TEST(Convolution, Refusals) {
  ConvolutionSpec s =
      make_spec(DType::Float32, {1, 4, 6, 6}, {8, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
  std::string why;
  s.dtype = DType::Float64;
  EXPECT_FALSE(ConvolutionPlan::supported(s, &why));
  EXPECT_NE(why.find("f64 convolution"), std::string::npos) << why;
  EXPECT_THROW(ConvolutionPlan::create(s), LibraryError);
  try {
    ConvolutionPlan::create(s);
  } catch (const LibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("f64 conv2d [1x4x6x6]"), std::string::npos) << e.what();
  }
  s.dtype = DType::Int32;
  EXPECT_FALSE(ConvolutionPlan::supported(s, &why));
  // Malformed specs: a reason naming what is wrong.
  const std::pair<std::string, std::function<void(ConvolutionSpec&)>> malformed[] = {
      {"output spatial", [](ConvolutionSpec& c) { c.output.sizes[3] = 5; }},
      {"multiples of groups", [](ConvolutionSpec& c) { c.groups = 3; }},
      {"input channels", [](ConvolutionSpec& c) { c.weight.sizes[1] = 3; }},
      {"per spatial dimension", [](ConvolutionSpec& c) { c.stride = {1}; }},
      {"larger than the padded input", [](ConvolutionSpec& c) { c.weight.sizes[2] = 9; }},
      {"bias", [](ConvolutionSpec& c) { c.bias->sizes[0] = 7; }},
      {"overlap", [](ConvolutionSpec& c) { c.output.strides[1] = 1; }},
      {"empty", [](ConvolutionSpec& c) { c.input.sizes[2] = 0; }},
  };
  for (const auto& [word, change] : malformed) {
    ConvolutionSpec bad =
        make_spec(DType::Float32, {1, 4, 6, 6}, {8, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
    change(bad);
    EXPECT_FALSE(ConvolutionPlan::supported(bad, &why)) << word;
    EXPECT_NE(why.find("malformed"), std::string::npos) << why;
    EXPECT_NE(why.find(word), std::string::npos) << why;
  }
  auto plan = ConvolutionPlan::create(
      make_spec(DType::Float32, {1, 4, 6, 6}, {8, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true));
  EXPECT_THROW(plan->run(nullptr, nullptr, nullptr, nullptr, 1), LibraryError);
  EXPECT_THROW(plan->run(nullptr, nullptr, nullptr, nullptr, -1), LibraryError);
}

TEST(Convolution, BackwardRefusals) {
  const ConvolutionSpec with_bias =
      make_spec(DType::Float32, {1, 4, 6, 6}, {8, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
  std::string why;
  for (ConvolutionPass pass : {ConvolutionPass::BackwardData, ConvolutionPass::BackwardWeights}) {
    // A bias is the forward pass's: Stax sums grad_bias itself.
    ConvolutionSpec s = with_bias;
    s.pass = pass;
    EXPECT_FALSE(ConvolutionPlan::supported(s, &why));
    EXPECT_NE(why.find("malformed"), std::string::npos) << why;
    EXPECT_NE(why.find("backward pass has no bias"), std::string::npos) << why;
    EXPECT_THROW(ConvolutionPlan::create(s), LibraryError);
    s = for_pass(with_bias, pass);
    ASSERT_TRUE(ConvolutionPlan::supported(s, &why)) << why;
    // The result's elements must not overlap: grad_input or grad_weight here, not the output.
    ConvolutionSpec overlapping = s;
    TensorLayout& result =
        pass == ConvolutionPass::BackwardData ? overlapping.input : overlapping.weight;
    result.strides[1] = 1;
    EXPECT_FALSE(ConvolutionPlan::supported(overlapping, &why));
    EXPECT_NE(why.find(pass == ConvolutionPass::BackwardData ? "grad_input's elements overlap"
                                                             : "grad_weight's elements overlap"),
              std::string::npos)
        << why;
    ConvolutionSpec output_overlaps = s;  // read, not written: nothing to check
    output_overlaps.output.strides[1] = 1;
    EXPECT_EQ(output_overlaps.error(), "");
    // Dtypes oneDNN has no backward pass for.
    ConvolutionSpec f64 = s;
    f64.dtype = DType::Float64;
    EXPECT_FALSE(ConvolutionPlan::supported(f64, &why));
    EXPECT_NE(why.find(pass == ConvolutionPass::BackwardData ? "f64 convolution backward-data"
                                                             : "f64 convolution backward-weights"),
              std::string::npos)
        << why;
    // Null operands.
    auto plan = ConvolutionPlan::create(s);
    Case c(s);
    EXPECT_THROW(plan->run(c.output.data(), nullptr, nullptr, c.result().data(), 1), LibraryError);
    EXPECT_THROW(plan->run(c.output.data(), c.weight.data(), nullptr, nullptr, 1), LibraryError);
  }
}

TEST(Convolution, Describe) {
  ConvolutionSpec s =
      make_spec(DType::Float32, {8, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
  EXPECT_EQ(s.describe(),
            "f32 conv2d [8x64x56x56] * w[64x64x3x3] stride 1 pad 1 -> [8x64x56x56] + bias");
  s = make_spec(DType::BFloat16, {1, 32, 14, 15}, {32, 1, 3, 5}, {2, 1}, {1, 2}, {1, 2}, 32, false,
                true);
  EXPECT_EQ(s.describe(),
            "bf16 conv2d [1x32x14x15](channels-last) * w[32x1x3x5] stride 2x1 pad 1x2 dilation "
            "1x2 groups 32 (depthwise) -> [1x32x7x11](channels-last)");
  s.weight.strides = {1, 1, 5 * 32, 32};
  EXPECT_NE(s.describe().find("w[32x1x3x5](strides 1,1,160,32)"), std::string::npos)
      << s.describe();
  s = make_spec(DType::Float32, {2, 3, 4, 5, 6}, {4, 3, 1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1},
                1, false, true);
  EXPECT_EQ(s.describe(),
            "f32 conv3d [2x3x4x5x6](channels-last) * w[4x3x1x1x1] stride 1 pad 0 -> "
            "[2x4x4x5x6](channels-last)");
  // The backward passes: the forward convolution whose gradient is computed, and which.
  s = make_spec(DType::Float32, {8, 64, 56, 56}, {64, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false);
  s.pass = ConvolutionPass::BackwardData;
  EXPECT_EQ(s.describe(),
            "f32 conv2d backward-data [8x64x56x56] * w[64x64x3x3] stride 1 pad 1 -> [8x64x56x56]");
  s.pass = ConvolutionPass::BackwardWeights;
  s.dtype = DType::BFloat16;
  EXPECT_EQ(
      s.describe(),
      "bf16 conv2d backward-weights [8x64x56x56] * w[64x64x3x3] stride 1 pad 1 -> [8x64x56x56]");
}

TEST(Convolution, Implementation) {
  const std::string version = "oneDNN " + std::string("2.");
  const ConvolutionSpec nchw =
      make_spec(DType::Float32, {2, 16, 12, 12}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true);
  const std::string text = ConvolutionPlan::create(nchw)->implementation();
  EXPECT_EQ(text.rfind(version, 0), 0u) << text;
  EXPECT_NE(text.find(" convolution "), std::string::npos) << text;
  EXPECT_NE(text.find("weights reordered per call"), std::string::npos) << text;
  // The caller's strides as the primitive's formats: nothing reordered but the weights.
  const std::string caller = ConvolutionPlan::create(nchw, 0, Formats::Caller)->implementation();
  EXPECT_NE(caller.find("(nchw), input in place"), std::string::npos) << caller;
  EXPECT_NE(caller.find("output in place"), std::string::npos) << caller;
  const ConvolutionSpec nhwc = make_spec(DType::Float32, {2, 16, 12, 12}, {32, 16, 3, 3}, {1, 1},
                                         {1, 1}, {1, 1}, 1, true, true);
  const std::string cl = ConvolutionPlan::create(nhwc, 0, Formats::ChannelsLast)->implementation();
  EXPECT_NE(cl.find("(nhwc), input in place"), std::string::npos) << cl;
  const std::string cl_from_nchw =
      ConvolutionPlan::create(nchw, 0, Formats::ChannelsLast)->implementation();
  EXPECT_NE(cl_from_nchw.find("input reordered from nchw"), std::string::npos) << cl_from_nchw;
  EXPECT_NE(cl_from_nchw.find("output reordered to nchw"), std::string::npos) << cl_from_nchw;
  const std::string blocked = ConvolutionPlan::create(nhwc, 0, Formats::Blocked)->implementation();
  EXPECT_NE(blocked.find("(" + blocked_format() + "), input reordered from nhwc"),
            std::string::npos)
      << blocked;
  // The measured choice (convolution.cpp): blocked for NCHW callers, channels-last callers'
  // own layout unless the output has at most 64 positions.
  const std::string automatic = ConvolutionPlan::create(nchw)->implementation();
  EXPECT_NE(automatic.find("(" + blocked_format() + "), input reordered from nchw"),
            std::string::npos)
      << automatic;
  const std::string automatic_cl = ConvolutionPlan::create(nhwc)->implementation();
  EXPECT_NE(automatic_cl.find("(nhwc), input in place"), std::string::npos) << automatic_cl;
  const ConvolutionSpec small = make_spec(DType::Float32, {1, 64, 8, 8}, {64, 64, 3, 3}, {1, 1},
                                          {1, 1}, {1, 1}, 1, false, true);
  const std::string automatic_small = ConvolutionPlan::create(small)->implementation();
  EXPECT_NE(automatic_small.find("(" + blocked_format() + "), input reordered from nhwc"),
            std::string::npos)
      << automatic_small;
}

// The backward passes name themselves and their operands; formats by the forward rule.
TEST(Convolution, BackwardImplementation) {
  const std::string version = "oneDNN " + std::string("2.");
  using P = ConvolutionPass;
  for (bool channels_last : {false, true}) {
    const ConvolutionSpec geometry = make_spec(DType::Float32, {2, 16, 12, 12}, {32, 16, 3, 3},
                                               {1, 1}, {1, 1}, {1, 1}, 1, false, channels_last);
    const std::string data =
        ConvolutionPlan::create(for_pass(geometry, P::BackwardData))->implementation();
    const std::string weights =
        ConvolutionPlan::create(for_pass(geometry, P::BackwardWeights))->implementation();
    EXPECT_EQ(data.rfind(version, 0), 0u) << data;
    EXPECT_NE(data.find(" convolution backward-data "), std::string::npos) << data;
    EXPECT_NE(weights.find(" convolution backward-weights "), std::string::npos) << weights;
    EXPECT_NE(data.find("weights reordered per call"), std::string::npos) << data;
    EXPECT_NE(weights.find("grad_weight reordered per call"), std::string::npos) << weights;
    if (channels_last) {
      EXPECT_NE(data.find("(nhwc), grad_output in place, weights reordered per call, grad_input "
                          "in place"),
                std::string::npos)
          << data;
      EXPECT_NE(weights.find("(nhwc), grad_output in place, input in place"), std::string::npos)
          << weights;
    } else {
      EXPECT_NE(data.find("(" + blocked_format() +
                          "), grad_output reordered from nchw, weights reordered per call, "
                          "grad_input reordered to nchw"),
                std::string::npos)
          << data;
      EXPECT_NE(weights.find("(" + blocked_format() +
                             "), grad_output reordered from nchw, input reordered from nchw"),
                std::string::npos)
          << weights;
    }
  }
}

TEST(Convolution, RestoresTheCallersThreadCount) {
  const ConvolutionSpec s =
      make_spec(DType::Float32, {1, 8, 8, 8}, {8, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false);
  auto plan = ConvolutionPlan::create(s, 2);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  Case c(s);
  c.fill(1);
  c.run(*plan, 1);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace stax::external
