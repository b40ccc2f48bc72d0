// MatmulPlan (src/external): oneDNN matrix products against a naive reference accumulating in
// double, for every dtype a plan exists for, transposed / sliced / batch-strided / broadcast
// operands, alpha and beta, beta == 0 with a NaN bias, empty dimensions, 1 and 2 threads,
// sizes that reach the library's parallel path, concurrent runs of one plan, the error
// paths, and eager's epilogue rounding bit for bit on inputs whose products and sums are
// exact (torch 2.13.0's formulas, probed: matmul.cpp). bfloat16 runs natively or through
// float32 as Stax detects the library's kernels (MatmulPlan::arithmetic), against the same
// references either way; alpha == 0 gives eager's NaN on every CPU.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "external/host_loops.h"
#include "external/matmul.h"
#include "external/matmul_blas.h"
#include "external/matmul_through_float32.h"
#include "external/matmul_weights_form.h"

namespace stax::external {
namespace {

using detail::bf16_to_float;
using detail::float_to_bf16;

// One operand's storage: enough elements for its layout's largest offset.
struct Buffer {
  DType dtype;
  MatrixLayout layout;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;

  Buffer(DType dt, MatrixLayout l) : dtype(dt), layout(l) {
    int64_t extent = 1;
    bool empty = false;
    for (int d = 0; d < 3; ++d) {
      empty |= l.sizes[d] == 0;
      extent += (l.sizes[d] - 1) * l.strides[d];
    }
    const size_t n = empty ? 1 : static_cast<size_t>(extent);
    if (dt == DType::Float32) f32.assign(n, 0.0f);
    if (dt == DType::BFloat16) bf16.assign(n, 0);
  }
  size_t elements() const { return dtype == DType::Float32 ? f32.size() : bf16.size(); }
  void* data() { return dtype == DType::Float32 ? static_cast<void*>(f32.data()) : bf16.data(); }
  float at_offset(int64_t o) const {
    return dtype == DType::Float32 ? f32[o] : bf16_to_float(bf16[o]);
  }
  void set_offset(int64_t o, float v) {
    if (dtype == DType::Float32) {
      f32[o] = v;
    } else {
      bf16[o] = float_to_bf16(v);
    }
  }
  int64_t offset(int64_t b, int64_t i, int64_t j) const {
    auto idx = [&](int d, int64_t x) { return layout.sizes[d] == 1 ? 0 : x * layout.strides[d]; };
    return idx(0, b) + idx(1, i) + idx(2, j);
  }
  float at(int64_t b, int64_t i, int64_t j) const { return at_offset(offset(b, i, j)); }
  // Every stored element (padding included): random normal values, or when `exact`,
  // multiples of 1/8 in [-1, 1) whose products and sums of a few terms are exact in float32.
  void fill(std::mt19937& rng, bool exact) {
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> eighths(-8, 7);
    for (size_t o = 0; o < elements(); ++o) {
      set_offset(static_cast<int64_t>(o), exact ? eighths(rng) / 8.0f : normal(rng));
    }
  }
  void fill_all(float v) {
    for (size_t o = 0; o < elements(); ++o) set_offset(static_cast<int64_t>(o), v);
  }
};

struct Case {
  MatmulSpec spec;
  Buffer a, b, c;
  std::optional<Buffer> bias;

  explicit Case(const MatmulSpec& s) : spec(s), a(s.dtype, s.a), b(s.dtype, s.b), c(s.dtype, s.c) {
    if (s.bias) bias.emplace(s.dtype, *s.bias);
  }
  void fill(uint32_t seed, bool exact = false) {
    std::mt19937 rng(seed);
    a.fill(rng, exact);
    b.fill(rng, exact);
    if (bias) bias->fill(rng, exact);
    c.fill_all(std::numeric_limits<float>::quiet_NaN());  // every element must be written
  }
  void run(const MatmulPlan& plan, int threads) {
    plan.run(a.data(), b.data(), bias ? bias->data() : nullptr, c.data(), threads);
  }
  // Compares every output element (rows strided by `row_step` for the large cases) with a
  // reference in double, within the bound the dtype and K allow: float32 accumulation (K + 2
  // roundings of the magnitudes summed), plus for bfloat16 one rounding of the result (unit
  // roundoff 2^-8). Each batch's b is read once into a double matrix (k-major), so the
  // reference stays fast under the sanitizers.
  void expect_matches_reference(const std::string& what, int64_t row_step = 1) const {
    const auto& [batches, m, n] = spec.c.sizes;
    const int64_t k_size = spec.a.sizes[2];
    const double eps32 = std::ldexp(1.0, -24);
    int failures = 0;
    std::vector<double> b_matrix(static_cast<size_t>(k_size * n)), a_row(k_size);
    std::vector<double> sum(n), magnitude(n);
    for (int64_t bi = 0; bi < batches; ++bi) {
      for (int64_t k = 0; k < k_size; ++k) {
        for (int64_t j = 0; j < n; ++j) b_matrix[k * n + j] = b.at(bi, k, j);
      }
      for (int64_t i = 0; i < m; i += row_step) {
        for (int64_t k = 0; k < k_size; ++k) a_row[k] = a.at(bi, i, k);
        std::fill(sum.begin(), sum.end(), 0.0);
        std::fill(magnitude.begin(), magnitude.end(), 0.0);
        for (int64_t k = 0; k < k_size; ++k) {
          for (int64_t j = 0; j < n; ++j) {
            const double p = a_row[k] * b_matrix[k * n + j];
            sum[j] += p;
            magnitude[j] += std::fabs(p);
          }
        }
        for (int64_t j = 0; j < n; ++j) {
          double want = spec.alpha * sum[j];
          double scale = std::fabs(spec.alpha) * magnitude[j];
          if (bias && spec.beta != 0.0) {
            const double t = spec.beta * bias->at(bi, i, j);
            want += t;
            scale += std::fabs(t);
          }
          double bound = 2.0 * (k_size + 2) * eps32 * scale + 1e-30;
          if (spec.dtype == DType::BFloat16) bound += std::ldexp(1.0, -8) * std::fabs(want);
          const double got = c.at(bi, i, j);
          if (!(std::fabs(got - want) <= bound) && ++failures <= 3) {
            ADD_FAILURE() << what << " " << spec.describe() << " at [" << bi << "," << i << "," << j
                          << "]: got " << got << ", want " << want << " +- " << bound;
          }
        }
      }
    }
    EXPECT_EQ(failures, 0) << what;
  }
};

MatrixLayout contiguous(int64_t b, int64_t r, int64_t c) {
  return MatrixLayout::contiguous(b, r, c);
}
// Column-major matrices, batches outermost: what a transposed contiguous tensor looks like.
MatrixLayout column_major(int64_t b, int64_t r, int64_t c) {
  return MatrixLayout::contiguous(b, c, r).transposed();
}

MatmulSpec make_spec(DType dt, MatrixLayout a, MatrixLayout b, int64_t batch, int64_t m,
                     int64_t n) {
  MatmulSpec s;
  s.dtype = dt;
  s.a = a;
  s.b = b;
  s.c = contiguous(batch, m, n);
  return s;
}

const DType kDtypes[] = {DType::Float32, DType::BFloat16};

// Whether a plan of `spec` goes through a float32 plan of the same layouts on this machine
// (matmul_through_float32.h): bfloat16 where oneDNN has only float32 kernels (what Stax
// detects, not the CPU the test expects), and a product scaled by alpha == 0 that eager
// computes.
bool goes_through_float32(const MatmulSpec& spec) {
  const bool has_product = spec.a.sizes[2] > 0 && spec.c.sizes[0] > 0 && spec.c.sizes[1] > 0 &&
                           spec.c.sizes[2] > 0 &&
                           !(spec.alpha == 0.0 && spec.alpha_zero_skips_product);
  return has_product &&
         (spec.alpha == 0.0 || MatmulPlan::arithmetic(spec.dtype) == Arithmetic::ThroughFloat32);
}

// The spec the library multiplies: the float32 plan's where the plan goes through one.
MatmulSpec library_spec(const MatmulSpec& spec) {
  return goes_through_float32(spec) ? detail::float32_spec(spec, spec.alpha == 0.0) : spec;
}

// Whether the BLAS takes `spec`'s product in this process (one loaded, and matmul_blas.h's
// conditions on the spec the library multiplies).
bool blas_takes(const MatmulSpec& spec) {
  return !blas_description().empty() && detail::blas_refusal(library_spec(spec)).empty();
}

// Every spec runs in each way a plan may hand B to the library (B in place, B packed on every
// run, the whole product to the BLAS where it takes it, and the plan's measured choice), so
// that each path runs on every machine whatever the measurement picks there.
void check(const MatmulSpec& spec, const std::string& what, uint32_t seed = 1,
           std::vector<int> threads = {1, 2}) {
  std::string why;
  ASSERT_TRUE(MatmulPlan::supported(spec, &why)) << what << " " << spec.describe() << ": " << why;
  const bool has_product = spec.a.sizes[2] > 0 && spec.c.sizes[0] > 0 && spec.c.sizes[1] > 0 &&
                           spec.c.sizes[2] > 0 &&
                           !(spec.alpha == 0.0 && spec.alpha_zero_skips_product);
  if (has_product && !blas_takes(spec)) {
    EXPECT_THROW(MatmulPlan::create(spec, threads.front(), MatmulWeights::Blas), LibraryError)
        << what;
  }
  std::vector<MatmulWeights> forms{MatmulWeights::Direct, MatmulWeights::Packed,
                                   MatmulWeights::Measured};
  if (blas_takes(spec)) forms.push_back(MatmulWeights::Blas);
  for (MatmulWeights weights : forms) {
    auto plan = MatmulPlan::create(spec, threads.front(), weights);
    // Through float32 where Stax detects that the library has no kernel for the dtype (and
    // for alpha == 0): the plan says so, and its numbers are checked like a native plan's.
    const bool through_float32 = goes_through_float32(spec) && spec.dtype != DType::Float32;
    EXPECT_EQ(plan->arithmetic(), through_float32 ? Arithmetic::ThroughFloat32 : Arithmetic::Native)
        << plan->implementation();
    EXPECT_EQ(plan->implementation().find("bf16 through float32") != std::string::npos,
              through_float32 && spec.alpha != 0.0)
        << plan->implementation();
    if (weights != MatmulWeights::Measured && has_product) {
      EXPECT_EQ(plan->weights_form(), weights) << plan->implementation();
    }
    EXPECT_EQ(plan->packs_weights(),
              weights == MatmulWeights::Packed ||
                  (weights == MatmulWeights::Measured &&
                   plan->implementation().find("B packed") != std::string::npos))
        << plan->implementation();
    for (int t : threads) {
      Case c(spec);
      c.fill(seed);
      c.run(*plan, t);
      c.expect_matches_reference(what + " (" + std::to_string(t) + " threads, " +
                                 plan->implementation() + ")");
    }
  }
}

TEST(Matmul, LayoutsOfAAndB) {
  const int64_t m = 37, k = 29, n = 45;  // odd sizes: every kernel tail
  for (DType dt : kDtypes) {
    check(make_spec(dt, contiguous(1, m, k), contiguous(1, k, n), 1, m, n), "row-major");
    check(make_spec(dt, column_major(1, m, k), contiguous(1, k, n), 1, m, n), "a^T");
    check(make_spec(dt, contiguous(1, m, k), column_major(1, k, n), 1, m, n), "b^T (a weight)");
    check(make_spec(dt, column_major(1, m, k), column_major(1, k, n), 1, m, n), "a^T b^T");
    // Sliced: a narrow view of wider rows (row stride > cols), and of wider columns.
    check(make_spec(dt, MatrixLayout{{1, m, k}, {0, k + 11, 1}}, contiguous(1, k, n), 1, m, n),
          "a sliced");
    check(make_spec(dt, contiguous(1, m, k), MatrixLayout{{1, k, n}, {0, 1, k + 3}}, 1, m, n),
          "b^T sliced");
    // c a slice of a wider buffer (a product written into its place in a concatenation).
    MatmulSpec sliced_c = make_spec(dt, contiguous(1, m, k), column_major(1, k, n), 1, m, n);
    sliced_c.c = MatrixLayout{{1, m, n}, {0, n + 7, 1}};
    check(sliced_c, "c sliced");
  }
}

TEST(Matmul, BatchesAndBroadcasts) {
  const int64_t batch = 3, m = 20, k = 17, n = 24;
  for (DType dt : kDtypes) {
    check(make_spec(dt, contiguous(batch, m, k), contiguous(batch, k, n), batch, m, n), "bmm");
    check(make_spec(dt, contiguous(batch, m, k), column_major(batch, k, n), batch, m, n),
          "bmm b^T");
    // b shared by every batch (an expanded weight: batch stride 0), and a of batch size 1.
    check(
        make_spec(dt, contiguous(batch, m, k), MatrixLayout{{batch, k, n}, {0, n, 1}}, batch, m, n),
        "b broadcast over the batch");
    check(make_spec(dt, contiguous(1, m, k), contiguous(batch, k, n), batch, m, n),
          "a of batch size 1");
    check(make_spec(dt, contiguous(1, m, k), MatrixLayout{{batch, k, n}, {0, n, 1}}, batch, m, n),
          "a and b both broadcast over the batch");
    // Batch strides that are not the matrix size: heads interleaved in a wider tensor.
    check(make_spec(dt, MatrixLayout{{batch, m, k}, {k, batch * k, 1}}, contiguous(batch, k, n),
                    batch, m, n),
          "a with batch inside rows");
    // Every bias shape: a row broadcast over rows and batches (a linear layer's), a row per
    // batch, a full matrix per batch, a column, one scalar; alpha and beta 1 and not.
    const MatrixLayout biases[] = {MatrixLayout{{batch, m, n}, {0, 0, 1}},
                                   MatrixLayout{{batch, 1, n}, {n, n, 1}},
                                   contiguous(batch, m, n),
                                   MatrixLayout{{batch, m, n}, {0, 1, 0}},
                                   MatrixLayout{{1, 1, 1}, {1, 1, 1}},
                                   column_major(batch, m, n)};
    for (const MatrixLayout& bias : biases) {
      for (auto [alpha, beta] : {std::pair{1.0, 1.0}, {0.5, 1.0}, {1.0, 0.25}, {-1.5, 2.0}}) {
        MatmulSpec s =
            make_spec(dt, contiguous(batch, m, k), column_major(batch, k, n), batch, m, n);
        s.bias = bias;
        s.alpha = alpha;
        s.beta = beta;
        check(s, "baddbmm");
      }
      // a and b the same for every batch, the bias not: one library call per batch.
      MatmulSpec s =
          make_spec(dt, MatrixLayout{{batch, m, k}, {0, k, 1}}, column_major(1, k, n), batch, m, n);
      s.bias = bias;
      check(s, "baddbmm of broadcast a and b");
    }
  }
}

TEST(Matmul, BiasRowGoesToTheLibraryOtherwiseCopiedThenSummed) {
  MatmulSpec s = make_spec(DType::Float32, contiguous(1, 8, 8), contiguous(1, 8, 8), 1, 8, 8);
  s.bias = MatrixLayout{{1, 8, 8}, {0, 0, 1}};
  EXPECT_NE(MatmulPlan::create(s)->implementation().find("bias row added by the library"),
            std::string::npos);
  s.alpha = 0.5;  // oneDNN's bias would be scaled by alpha: not eager's rounding
  EXPECT_NE(MatmulPlan::create(s)->implementation().find("sum post-op"), std::string::npos);
}

// Eager's epilogue, bit for bit, where the accumulation is exact (multiples of 1/8, K = 8):
// c = fma(beta, bias, float(alpha * acc)) with alpha and beta as float32, then for bfloat16
// rounded to bfloat16 (not alpha*acc + beta*bias rounded once, nor beta*bias rounded
// separately: those differ on 0.1-0.2% of the elements). Probed on torch 2.13.0 (addmm).
TEST(Matmul, EagerEpilogueRoundingOnExactInputs) {
  const int64_t m = 33, k = 8, n = 40;
  for (DType dt : kDtypes) {
    for (auto [alpha, beta] : {std::pair{1.0, 1.0}, {0.3, 0.7}, {1.0, 0.7}, {0.3, 1.0}}) {
      for (bool row_bias : {true, false}) {
        MatmulSpec s = make_spec(dt, contiguous(1, m, k), column_major(1, k, n), 1, m, n);
        s.bias = row_bias ? MatrixLayout{{1, m, n}, {0, 0, 1}} : contiguous(1, m, n);
        s.alpha = alpha;
        s.beta = beta;
        for (MatmulWeights form : {MatmulWeights::Direct, MatmulWeights::Blas}) {
          if (form == MatmulWeights::Blas && !blas_takes(s)) continue;
          auto plan = MatmulPlan::create(s, 1, form);
          Case c(s);
          c.fill(7, /*exact=*/true);
          std::mt19937 rng(3);  // a bias that is not exact: the epilogue rounds
          std::normal_distribution<float> normal;
          for (size_t o = 0; o < c.bias->elements(); ++o) c.bias->set_offset(o, normal(rng));
          c.run(*plan, 1);
          const float a32 = static_cast<float>(alpha), b32 = static_cast<float>(beta);
          int differ = 0;
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double acc = 0;
              for (int64_t kk = 0; kk < k; ++kk) acc += double(c.a.at(0, i, kk)) * c.b.at(0, kk, j);
              const float bias = c.bias->at(0, i, j);
              float want = std::fmaf(b32, bias, a32 * static_cast<float>(acc));
              if (dt == DType::BFloat16) want = bf16_to_float(float_to_bf16(want));
              const float got = c.c.at(0, i, j);
              differ += std::memcmp(&got, &want, sizeof(float)) != 0;
            }
          }
          EXPECT_EQ(differ, 0) << s.describe() << " (" << plan->implementation() << ")";
        }
      }
    }
  }
}

TEST(Matmul, BetaZeroIgnoresNanBias) {
  for (DType dt : kDtypes) {
    MatmulSpec s = make_spec(dt, contiguous(2, 9, 5), contiguous(2, 5, 7), 2, 9, 7);
    s.bias = contiguous(2, 9, 7);
    s.beta = 0.0;
    s.alpha = 2.0;
    auto plan = MatmulPlan::create(s);
    Case c(s);
    c.fill(5);
    c.bias->fill_all(std::numeric_limits<float>::quiet_NaN());
    c.run(*plan, 2);
    c.expect_matches_reference("beta 0, NaN bias");
  }
}

TEST(Matmul, EmptyDimensions) {
  for (DType dt : kDtypes) {
    // No output elements: nothing is touched (and no buffer needed).
    for (auto [batch, m, n] : {std::tuple{0, 4, 5}, {2, 0, 5}, {2, 4, 0}}) {
      MatmulSpec s = make_spec(dt, contiguous(batch, m, 3), contiguous(batch, 3, n), batch, m, n);
      ASSERT_TRUE(MatmulPlan::supported(s, nullptr)) << s.describe();
      MatmulPlan::create(s)->run(nullptr, nullptr, nullptr, nullptr, 1);
    }
    // K == 0: zeros, or beta * bias (beta == 0: zeros even for a NaN bias), every element
    // written. bfloat16 rounds beta to bfloat16 first, as eager's `bias * beta` does.
    MatmulSpec s = make_spec(dt, contiguous(2, 4, 0), contiguous(2, 0, 5), 2, 4, 5);
    Case none(s);
    none.fill(1);
    none.run(*MatmulPlan::create(s), 1);
    none.expect_matches_reference("K 0, no bias");
    s.bias = contiguous(2, 4, 5);
    s.beta = 0.7;
    Case scaled(s);
    scaled.fill(2);
    scaled.run(*MatmulPlan::create(s), 2);
    const float beta = dt == DType::Float32 ? 0.7f : bf16_to_float(float_to_bf16(0.7f));
    for (int64_t bi = 0; bi < 2; ++bi) {
      for (int64_t i = 0; i < 4; ++i) {
        for (int64_t j = 0; j < 5; ++j) {
          float want = beta * scaled.bias->at(bi, i, j);
          if (dt == DType::BFloat16) want = bf16_to_float(float_to_bf16(want));
          EXPECT_EQ(scaled.c.at(bi, i, j), want) << bi << "," << i << "," << j;
        }
      }
    }
    s.beta = 0.0;
    Case nan_bias(s);
    nan_bias.fill(3);
    nan_bias.bias->fill_all(std::numeric_limits<float>::quiet_NaN());
    nan_bias.run(*MatmulPlan::create(s), 1);
    EXPECT_EQ(nan_bias.c.at(1, 2, 3), 0.0f);
  }
}

// Eager's float32 addmm skips the product when alpha == 0 (inf * 0 gives no NaN); its small
// baddbmm and its bfloat16 products do not (MatmulSpec::alpha_zero_skips_product). The spec says
// which, and every form of the plan follows it on every CPU: oneDNN's GEMM-based float32 kernel
// (its only one without AVX-512) skips the product for a zero output scale, so the plan never
// hands it one. Finite factors give beta * bias either way (0 * a finite product is 0).
TEST(Matmul, AlphaZero) {
  for (DType dt : kDtypes) {
    for (auto [m, k, n] : {std::tuple{3, 4, 2}, {64, 96, 80}}) {
      MatmulSpec s = make_spec(dt, contiguous(1, m, k), contiguous(1, k, n), 1, m, n);
      s.bias = contiguous(1, m, n);
      s.alpha = 0.0;
      s.beta = 0.5;
      for (bool skips : {true, false}) {
        s.alpha_zero_skips_product = skips;
        for (MatmulWeights weights :
             {MatmulWeights::Direct, MatmulWeights::Packed, MatmulWeights::Measured}) {
          if (skips && weights == MatmulWeights::Packed) continue;  // no library call to pack for
          auto plan = MatmulPlan::create(s, 1, weights);
          for (bool infinite : {true, false}) {
            Case c(s);
            c.fill(4);
            if (infinite) c.a.fill_all(std::numeric_limits<float>::infinity());
            c.run(*plan, 1);
            const std::string what =
                s.describe() + (infinite ? ", a inf: " : ": ") + plan->implementation();
            if (skips || !infinite) {
              float want = 0.5f * c.bias->at(0, m - 1, n - 1);
              if (dt == DType::BFloat16) want = bf16_to_float(float_to_bf16(want));
              EXPECT_EQ(c.c.at(0, m - 1, n - 1), want) << what;
            } else {
              EXPECT_TRUE(std::isnan(c.c.at(0, m - 1, n - 1))) << what;
            }
          }
        }
      }
    }
  }
}

// 256 x 768 x 768: large enough for oneDNN to split the work over both threads.
TEST(Matmul, ParallelPath) {
  for (DType dt : kDtypes) {
    MatmulSpec s = make_spec(dt, contiguous(1, 256, 768), column_major(1, 768, 768), 1, 256, 768);
    s.bias = MatrixLayout{{1, 256, 768}, {0, 0, 1}};
    auto plan = MatmulPlan::create(s, 2);
    for (int threads : {2, 1}) {
      Case c(s);
      c.fill(11);
      c.run(*plan, threads);
      c.expect_matches_reference("parallel path", /*row_step=*/7);
    }
  }
}

TEST(Matmul, ConcurrentRunsOfOnePlan) {
  MatmulSpec s =
      make_spec(DType::Float32, contiguous(4, 64, 96), column_major(4, 96, 80), 4, 64, 80);
  s.bias = contiguous(4, 64, 80);  // the copy-then-sum form writes c before the library call
  s.beta = 0.5;
  auto plan = MatmulPlan::create(s, 1);
  // What each thread count gives when nothing runs concurrently (a separate plan, so that
  // `plan` has no 2-thread primitive yet).
  Case serial(s);
  serial.fill(9);
  Case serial_two_threads = serial;
  serial.run(*plan, 1);
  serial_two_threads.run(*MatmulPlan::create(s, 2), 2);
  std::vector<Case> cases(2, serial);
  std::vector<std::thread> workers;
  std::vector<int> mismatches(2, 0);
  // The second worker alternates 1 and 2 threads: the plan builds its 2-thread primitive
  // while the first worker runs the 1-thread one.
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      for (int r = 0; r < 30; ++r) {
        const int threads = w == 1 ? 1 + r % 2 : 1;
        cases[w].c.fill_all(0.0f);
        cases[w].run(*plan, threads);
        mismatches[w] += cases[w].c.f32 != (threads == 1 ? serial : serial_two_threads).c.f32;
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0}));
}

TEST(Matmul, RestoresTheCallersThreadCount) {
  MatmulSpec s = make_spec(DType::Float32, contiguous(1, 16, 16), contiguous(1, 16, 16), 1, 16, 16);
  auto plan = MatmulPlan::create(s, 2);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  Case c(s);
  c.fill(1);
  c.run(*plan, 1);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(saved);
}

// Stax's kernels, oneDNN and PyTorch share libgomp: no second OpenMP runtime in the process.
TEST(Matmul, OneOpenMpRuntime) {
  MatmulSpec s = make_spec(DType::Float32, contiguous(1, 64, 64), contiguous(1, 64, 64), 1, 64, 64);
  Case c(s);
  c.fill(1);
  c.run(*MatmulPlan::create(s), 2);
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  EXPECT_NE(text.str().find("libgomp"), std::string::npos);
  EXPECT_EQ(text.str().find("libiomp"), std::string::npos);
  EXPECT_EQ(text.str().find("libomp.so"), std::string::npos);
}

TEST(Matmul, Refusals) {
  // Dtypes without a library plan: a reason, and create() throws LibraryError naming the op.
  // float16: oneDNN 2.6 (Debian's) has no CPU matmul for it; a newer oneDNN would change this.
  for (auto [dt, word] : {std::pair{DType::Float64, "f64"},
                          {DType::Int64, "i64"},
                          {DType::Int32, "i32"},
                          {DType::Float16, "f16"}}) {
    MatmulSpec s = make_spec(dt, contiguous(1, 4, 4), contiguous(1, 4, 4), 1, 4, 4);
    std::string why;
    EXPECT_FALSE(MatmulPlan::supported(s, &why));
    EXPECT_NE(why.find(word), std::string::npos) << why;
    try {
      MatmulPlan::create(s);
      ADD_FAILURE() << "create() accepted " << s.describe();
    } catch (const LibraryError& e) {
      EXPECT_NE(std::string(e.what()).find("matmul " + std::string(word) + " [1x4x4]"),
                std::string::npos)
          << e.what();
    }
  }
  // A layout oneDNN runs only with its reference kernel: no unit stride in a.
  MatmulSpec strided =
      make_spec(DType::Float32, MatrixLayout{{1, 8, 8}, {0, 16, 2}}, contiguous(1, 8, 8), 1, 8, 8);
  std::string why;
  EXPECT_FALSE(MatmulPlan::supported(strided, &why));
  EXPECT_NE(why.find("reference"), std::string::npos) << why;
  EXPECT_THROW(MatmulPlan::create(strided), LibraryError);
  // Malformed specs: inner dimensions, batch, bias shape, an overlapping output.
  MatmulSpec inner = make_spec(DType::Float32, contiguous(1, 4, 5), contiguous(1, 6, 4), 1, 4, 4);
  EXPECT_FALSE(MatmulPlan::supported(inner, &why));
  EXPECT_NE(why.find("[1x4x5] @ [1x6x4]"), std::string::npos) << why;
  EXPECT_THROW(MatmulPlan::create(inner), LibraryError);
  MatmulSpec batch = make_spec(DType::Float32, contiguous(2, 4, 4), contiguous(3, 4, 4), 3, 4, 4);
  EXPECT_FALSE(MatmulPlan::supported(batch, &why));
  MatmulSpec bias = make_spec(DType::Float32, contiguous(1, 4, 4), contiguous(1, 4, 4), 1, 4, 4);
  bias.bias = contiguous(1, 4, 3);
  EXPECT_FALSE(MatmulPlan::supported(bias, &why));
  MatmulSpec overlap = make_spec(DType::Float32, contiguous(1, 4, 4), contiguous(1, 4, 4), 1, 4, 4);
  overlap.c.strides = {16, 2, 1};
  EXPECT_FALSE(MatmulPlan::supported(overlap, &why));
  EXPECT_NE(why.find("overlap"), std::string::npos) << why;
  // run() with a missing buffer is an error, not a crash.
  auto plan = MatmulPlan::create(
      make_spec(DType::Float32, contiguous(1, 4, 4), contiguous(1, 4, 4), 1, 4, 4));
  std::vector<float> x(16);
  EXPECT_THROW(plan->run(x.data(), nullptr, nullptr, x.data(), 1), LibraryError);
}

// Issue 32, point 4: oneDNN counts sizes and strides in 32-bit ints and divides by zero
// (SIGFPE) choosing a kernel for a size of 2^32. Such specs are refused with the size named
// (a Stax loop nest computes them), never handed to oneDNN; analysis needs no buffers.
TEST(Matmul, SizesOver32BitsAreRefusedNotHandedToTheLibrary) {
  const int64_t huge[] = {int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 40};
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    for (int64_t v : huge) {
      const std::string size = std::to_string(v);
      const MatmulSpec specs[] = {
          make_spec(dt, contiguous(1, 1, v), contiguous(1, v, 1), 1, 1, 1),  // K
          make_spec(dt, contiguous(1, v, 1), contiguous(1, 1, 1), 1, v, 1),  // M
          make_spec(dt, contiguous(1, 1, 1), contiguous(1, 1, v), 1, 1, v),  // N
          make_spec(dt, contiguous(v, 1, 1), contiguous(v, 1, 1), v, 1, 1),  // batch
          // A row stride over 2^31 - 1 (a view of every 2^31st element).
          make_spec(dt, MatrixLayout{{1, 2, 2}, {0, v, 1}}, contiguous(1, 2, 2), 1, 2, 2)};
      for (const MatmulSpec& s : specs) {
        std::string why;
        EXPECT_FALSE(MatmulPlan::supported(s, &why)) << s.describe();
        EXPECT_NE(why.find(size), std::string::npos) << why;
        EXPECT_NE(why.find("32-bit"), std::string::npos) << why;
        EXPECT_THROW(MatmulPlan::create(s), LibraryError) << s.describe();
      }
    }
  }
  // Just below the limit oneDNN still plans (no buffers are touched).
  const int64_t largest = (int64_t{1} << 31) - 1;
  std::string why;
  MatmulPlan::supported(
      make_spec(DType::Float32, contiguous(1, 1, largest), contiguous(1, largest, 1), 1, 1, 1),
      &why);
  EXPECT_EQ(why.find("32-bit"), std::string::npos) << why;
}

TEST(Matmul, Describe) {
  MatmulSpec s =
      make_spec(DType::BFloat16, contiguous(2, 128, 768), column_major(2, 768, 3072), 2, 128, 3072);
  s.bias = MatrixLayout{{2, 128, 3072}, {0, 0, 1}};
  s.beta = 0.5;
  EXPECT_EQ(s.describe(),
            "bf16 [2x128x768] @ [2x768x3072]^T -> [2x128x3072] + "
            "0.5*bias[2x128x3072](strides 0,0,1)");
}

// matmul_weights_form.h: where B's columns are contiguous a float32 or bfloat16 plan times B
// in place against B packed (and the BLAS where it takes the spec), once per shape, layout and
// thread count in the process (a second plan of the same spec reports the same measurement,
// not a new one); where its rows are (a linear layer's weight) the library packs it inside its
// kernel, and only the BLAS is timed against it; a product whose operands exceed the
// measurement's budget is timed on its first columns, and one of several matrices that does is
// kept in place unmeasured.
TEST(Matmul, WeightsFormIsMeasuredOncePerShapeWhereThereIsAChoice) {
  for (DType dt : kDtypes) {
    const MatmulSpec row_major_b =
        make_spec(dt, contiguous(1, 96, 80), contiguous(1, 80, 112), 1, 96, 112);
    const std::string first = MatmulPlan::create(row_major_b, 2)->implementation();
    EXPECT_NE(first.find("measured when planned"), std::string::npos) << first;
    EXPECT_EQ(MatmulPlan::create(row_major_b, 2)->implementation(), first);
    check(row_major_b, "row-major b, measured");
    // The BLAS is one of the forms timed where it takes the spec (the float32 one where the
    // plan goes through float32), and none without it.
    EXPECT_EQ(first.find("by the BLAS") != std::string::npos, blas_takes(row_major_b)) << first;
    const auto on_onednn = MatmulPlan::create(row_major_b, 1, MatmulWeights::MeasuredWithoutBlas);
    EXPECT_NE(on_onednn->weights_form(), MatmulWeights::Blas);
    EXPECT_EQ(on_onednn->implementation().find("by the BLAS"), std::string::npos)
        << on_onednn->implementation();

    const MatmulSpec weight =
        make_spec(dt, contiguous(1, 96, 80), column_major(1, 80, 112), 1, 96, 112);
    const auto plan = MatmulPlan::create(weight, 2);
    EXPECT_FALSE(plan->packs_weights());
    if (blas_takes(weight)) {
      EXPECT_NE(plan->implementation().find("measured when planned"), std::string::npos)
          << plan->implementation();
      EXPECT_EQ(plan->implementation().find("packed, reorder included"), std::string::npos)
          << plan->implementation();
    } else {
      EXPECT_NE(plan->implementation().find("B's columns are not contiguous"), std::string::npos)
          << plan->implementation();
    }
    const auto weight_on_onednn = MatmulPlan::create(weight, 2, MatmulWeights::MeasuredWithoutBlas);
    EXPECT_NE(weight_on_onednn->implementation().find("B's columns are not contiguous"),
              std::string::npos)
        << weight_on_onednn->implementation();
    check(weight, "column-major b, measured");

    // 8 x 4096 x 4608: float32 B alone is 72 MiB, timed on its first columns (bfloat16's 36 MiB
    // fit whole, unless the plan multiplies in float32); the plan runs the whole product.
    const MatmulSpec large =
        make_spec(dt, contiguous(1, 8, 4096), contiguous(1, 4096, 4608), 1, 8, 4608);
    const std::string note = MatmulPlan::create(large, 2)->implementation();
    EXPECT_NE(note.find("measured when planned"), std::string::npos) << note;
    EXPECT_EQ(note.find("of 4608 columns") != std::string::npos,
              library_spec(large).dtype == DType::Float32)
        << note;
    const auto narrowed = detail::measurement_spec(large);
    ASSERT_TRUE(narrowed.has_value());
    EXPECT_LE(detail::measurement_bytes(*narrowed), detail::kMeasurementBudgetBytes);
    EXPECT_EQ(narrowed->c.sizes[2] % 64, 0);
    if (dt == DType::Float32) {
      EXPECT_LT(narrowed->c.sizes[2], 4608);
      // The widest multiple of 64 that fits.
      EXPECT_GT(detail::measurement_bytes(make_spec(dt, contiguous(1, 8, 4096),
                                                    contiguous(1, 4096, narrowed->c.sizes[2] + 64),
                                                    1, 8, narrowed->c.sizes[2] + 64)),
                detail::kMeasurementBudgetBytes);
    }
    // Two such matrices (72 MiB of B in bfloat16 too): nothing narrower is timed, B in place
    // unmeasured.
    const MatmulSpec batched =
        make_spec(dt, contiguous(2, 8, 4096), contiguous(2, 4096, 4608), 2, 8, 4608);
    const std::string batched_note = MatmulPlan::create(batched, 2)->implementation();
    EXPECT_NE(batched_note.find("unmeasured"), std::string::npos) << batched_note;
  }
}

// blas_library.h: the test command (scripts/test.sh) points STAX_BLAS_LIBRARY at the MKL that
// scripts/setup_python.sh installed and sets STAX_EXPECT_BLAS=1, so that the BLAS paths above
// run there rather than being skipped because nothing was found.
TEST(Blas, LoadsWhereTheTestCommandPutsIt) {
  const char* expect = std::getenv("STAX_EXPECT_BLAS");
  std::string why;
  const std::string description = blas_description(&why);
  if (expect != nullptr && std::string(expect) == "1") {
    ASSERT_FALSE(description.empty()) << why;
    EXPECT_NE(description.find("the process's libgomp"), std::string::npos) << description;
  } else if (description.empty()) {
    EXPECT_FALSE(why.empty());
  }
}

// Where nothing loads, every candidate that failed is named, and plans keep oneDNN. A child
// process (gtest re-runs this binary for the death test) so that the parent's loaded BLAS is
// not the one asked.
TEST(Blas, AMissingLibraryIsReportedAndPlansKeepOneDnn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("STAX_BLAS_LIBRARY", "/nonexistent/libmkl_rt.so.3", 1);
        std::string why;
        const bool none = blas_description(&why).empty();
        const MatmulSpec spec =
            make_spec(DType::Float32, contiguous(1, 16, 24), contiguous(1, 24, 32), 1, 16, 32);
        const auto plan = MatmulPlan::create(spec, 1);
        std::fprintf(stderr, "%s | %s", why.c_str(), plan->implementation().c_str());
        std::exit(none && plan->weights_form() != MatmulWeights::Blas ? 0 : 1);
      },
      testing::ExitedWithCode(0), "no MKL found .*/nonexistent/libmkl_rt.so.3.* \\| oneDNN");
  EXPECT_EXIT(
      {
        setenv("STAX_BLAS_LIBRARY", "none", 1);
        std::string why;
        const bool none = blas_description(&why).empty();
        std::fprintf(stderr, "%s", why.c_str());
        std::exit(none ? 0 : 1);
      },
      testing::ExitedWithCode(0), "turned off");
}

// matmul_blas.h: what the BLAS takes (float32, no post-ops, one matrix, rows or columns), and
// why not otherwise, whatever is loaded.
TEST(Blas, TakesFloat32ProductsOfOneMatrixWithoutPostOps) {
  const MatmulSpec plain =
      make_spec(DType::Float32, contiguous(1, 16, 24), contiguous(1, 24, 32), 1, 16, 32);
  EXPECT_EQ(detail::blas_refusal(plain), "");
  MatmulSpec s = plain;
  s.a = column_major(1, 16, 24);
  s.b = column_major(1, 24, 32);
  EXPECT_EQ(detail::blas_refusal(s), "") << "both transposed";
  s = plain;
  s.dtype = DType::BFloat16;
  EXPECT_NE(detail::blas_refusal(s).find("float32"), std::string::npos);
  s = plain;
  s.post_ops.push_back(PostOp{});
  EXPECT_NE(detail::blas_refusal(s).find("post-ops"), std::string::npos);
  s = make_spec(DType::Float32, contiguous(2, 16, 24), contiguous(2, 24, 32), 2, 16, 32);
  EXPECT_NE(detail::blas_refusal(s).find("batch"), std::string::npos);
  s = plain;
  s.a = MatrixLayout{{1, 16, 24}, {0, 48, 2}};  // every other column: neither form
  EXPECT_NE(detail::blas_refusal(s).find("neither by rows nor by columns"), std::string::npos);
  s = plain;
  s.c = column_major(1, 16, 32);
  EXPECT_NE(detail::blas_refusal(s).find("c not stored by rows"), std::string::npos);
  s = plain;
  s.alpha = 0.0;  // baddbmm's and bfloat16 addmm's 0 * (a @ b): NaN where a holds inf
  EXPECT_NE(detail::blas_refusal(s).find("alpha == 0"), std::string::npos);
  // Scales: MKL's epilogue rounds unlike eager's fma(beta, bias, alpha * acc)
  // (EagerEpilogueRoundingOnExactInputs runs the BLAS where it takes the spec).
  s = plain;
  s.alpha = 0.5;
  EXPECT_NE(detail::blas_refusal(s).find("alpha or beta"), std::string::npos);
  s = plain;
  s.bias = MatrixLayout{{1, 16, 32}, {0, 0, 1}};
  EXPECT_EQ(detail::blas_refusal(s), "") << "a linear layer's addmm";
  s.beta = 0.5;
  EXPECT_NE(detail::blas_refusal(s).find("alpha or beta"), std::string::npos);
  s.beta = 0.0;
  EXPECT_EQ(detail::blas_refusal(s), "") << "beta == 0: the bias is not read";
  s = plain;
  s.b = MatrixLayout{{1, 24, 32}, {0, 0, 1}};  // one row broadcast: no leading dimension
  EXPECT_NE(detail::blas_refusal(s).find("neither"), std::string::npos);
}

// The BLAS form of addmm is eager's: the bias copied into c, then alpha * a @ b + beta * c
// (beta == 0: the bias never read, NaN included); every bias shape, sliced operands, a single
// row or column, and the library's parallel sizes. Without a BLAS, check() asserts that a plan
// asked for it is refused.
TEST(Blas, ComputesEagersAddmm) {
  const int64_t m = 37, k = 29, n = 45;
  const MatrixLayout biases[] = {MatrixLayout{{1, m, n}, {0, 0, 1}}, contiguous(1, m, n),
                                 MatrixLayout{{1, m, n}, {0, 1, 0}},
                                 MatrixLayout{{1, 1, 1}, {1, 1, 1}}, column_major(1, m, n)};
  for (const MatrixLayout& bias : biases) {
    for (auto [alpha, beta] : {std::pair{1.0, 1.0}, {0.5, 1.0}, {1.0, 0.25}, {-1.5, 0.0}}) {
      MatmulSpec s = make_spec(DType::Float32, column_major(1, m, k), contiguous(1, k, n), 1, m, n);
      s.bias = bias;
      s.alpha = alpha;
      s.beta = beta;
      check(s, "addmm through the BLAS");
    }
  }
  check(make_spec(DType::Float32, contiguous(1, 1, k), contiguous(1, k, n), 1, 1, n), "one row");
  check(make_spec(DType::Float32, contiguous(1, m, k), contiguous(1, k, 1), 1, m, 1), "one column");
  check(make_spec(DType::Float32, MatrixLayout{{1, m, k}, {0, k + 5, 1}},
                  MatrixLayout{{1, k, n}, {0, n + 3, 1}}, 1, m, n),
        "a and b sliced");
  check(make_spec(DType::Float32, contiguous(1, 256, 512), contiguous(1, 512, 384), 1, 256, 384),
        "parallel sizes", 5);
}

}  // namespace
}  // namespace stax::external
