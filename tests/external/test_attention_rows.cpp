// attention's exp row (src/external/attention_rows.cpp): every form this CPU runs (portable
// clones; AVX-512 with AVX512-BF16) gives exp within the polynomial's error of a double
// reference, the edge values eager's softmax needs (-inf to 0, NaN kept, no denormals), the
// bfloat16 rounding of exactly the float values it stored, and the sum in the one order every
// form uses, at every tail length.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "external/attention_internal.h"

namespace stax::external::detail {
namespace {

uint16_t bf16_round(float f) {  // round to nearest even, NaN quiet
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The order of attention_rows.cpp: element j into lane j mod 16, then the lanes halve.
float ordered_sum(const std::vector<float>& e) {
  float lane[16] = {};
  for (size_t j = 0; j < e.size(); ++j) lane[j % 16] += e[j];
  for (int k = 8; k >= 1; k /= 2) {
    for (int l = 0; l < k; ++l) lane[l] += lane[l + k];
  }
  return lane[0];
}

TEST(AttentionRows, EveryExpFormMatchesADoubleReferenceAndSumsInOneOrder) {
  const auto forms = exp_row_forms();
  ASSERT_FALSE(forms.empty());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-100.0f, 5.0f);
  for (const auto& [name, exp_row_form] : forms) {
    SCOPED_TRACE(name);
    for (int64_t n = 1; n <= 67; ++n) {
      std::vector<float> s(static_cast<size_t>(n));
      for (float& v : s) v = value(rng);
      s[0] = -std::numeric_limits<float>::infinity();  // a masked score
      if (n > 3) s[3] = 0.0f;
      const float ref = 0.5f;
      std::vector<float> in = s;
      std::vector<uint16_t> p16(static_cast<size_t>(n));
      const float sum = exp_row_form(s.data(), n, ref, p16.data(), true);
      for (int64_t j = 0; j < n; ++j) {
        // The difference is a float (as in the kernel); exp of it is what is checked.
        const double want = std::exp(static_cast<double>(in[j] - ref));
        const float got = s[j];
        if (want < 1.1754943508222875e-38) {  // below FLT_MIN: zero, never a denormal
          EXPECT_EQ(got, 0.0f) << "n " << n << " j " << j << " x " << in[j];
        } else {
          EXPECT_NEAR(got, want, 3 * std::numeric_limits<float>::epsilon() * want)
              << "n " << n << " j " << j << " x " << in[j];
        }
        EXPECT_EQ(p16[j], bf16_round(got)) << "n " << n << " j " << j;
      }
      EXPECT_EQ(sum, ordered_sum(s)) << "n " << n;
      // Without the 16-bit copy: the same values.
      std::vector<float> again = in;
      EXPECT_EQ(exp_row_form(again.data(), n, ref, nullptr, false), sum);
      EXPECT_EQ(again, s);
      // The forward's call: the same sum and 16-bit values, the floats not needed.
      std::vector<float> scratch = in;
      std::vector<uint16_t> p16_only(static_cast<size_t>(n));
      EXPECT_EQ(exp_row_form(scratch.data(), n, ref, p16_only.data(), false), sum);
      EXPECT_EQ(p16_only, p16);
    }
    std::vector<float> nan = {std::numeric_limits<float>::quiet_NaN(), 200.0f};
    exp_row_form(nan.data(), 2, 0.0f, nullptr, true);
    EXPECT_TRUE(std::isnan(nan[0]));
    EXPECT_TRUE(std::isfinite(nan[1]));  // above the range: the largest power, not inf
  }
}

// Where the CPU has AVX-512 with AVX512-BF16 both forms run, and give the same bits: the
// vector form computes the portable clone's steps, so a model's results do not depend on
// which form the CPU picks.
TEST(AttentionRows, TheFormsAgreeBitForBit) {
  const auto forms = exp_row_forms();
  if (forms.size() < 2) {
    EXPECT_EQ(forms.size(), 1u);
    return;  // one form: nothing to compare on this CPU
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> value(0.0f, 4.0f);
  for (int64_t n : {1, 15, 16, 17, 64, 127, 128, 1000}) {
    std::vector<float> in(static_cast<size_t>(n));
    for (float& v : in) v = value(rng);
    std::vector<float> a = in, b = in;
    std::vector<uint16_t> pa(static_cast<size_t>(n)), pb(static_cast<size_t>(n));
    const float sa = forms[0].second(a.data(), n, 1.0f, pa.data(), true);
    const float sb = forms[1].second(b.data(), n, 1.0f, pb.data(), true);
    EXPECT_EQ(a, b) << n;
    EXPECT_EQ(pa, pb) << n;
    EXPECT_EQ(sa, sb) << n;
  }
}

}  // namespace
}  // namespace stax::external::detail
