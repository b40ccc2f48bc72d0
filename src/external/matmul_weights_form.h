// How a matmul plan hands B (oneDNN's "weights") to the library: as it lies in memory
// ("direct"), or reordered on every run into the layout the library's kernel prefers
// (format_tag::any; "packed"), into a workspace of the process's pool. Internal to
// src/external.
//
// Why a plan chooses at all: oneDNN 2.6's float32 kernels (brg:avx512_core) read a B whose
// columns are contiguous (row-major B: GPT-2's Conv1D weights, and the activations and
// weights the backward products read) in place, and for some shapes that runs at half the
// rate of the same kernel on its own blocked layout, even with the reorder paid on every run.
// Measured on the Intel Xeon with AMX, 2 threads, float32 (bench/gemm/RESULTS.md, "Direct or
// packed weights"): 394x768x3072 16.5 ms direct against 0.7 + 6.3 packed; ViT's weight
// gradient 768x394x3072 14.4 against 0.2 + 6.1; but 128x768x50257 51 against 19 + 40 (the
// reorder of 154 MB is memory-bound) and 128x768x2304 even. No rule over the sizes separates
// them and the blocking behind it is the library's, so a plan measures both forms once per
// shape and process (`measure_weights_form`) wherever B's columns are contiguous. Where its
// rows are (a linear layer's weight, B = W^T), the library packs B itself inside the kernel
// and the direct form is kept unmeasured.
// A float32 product without post-ops is also timed through the BLAS where one is loaded
// (blas_library.h: MKL's sgemm, which is eager's float32 torch.mm; matmul_blas.h), since
// packing closes only part of the gap: 394x3072x768 in place 1.17x eager, packed 1.19x,
// MKL 0.88x. That holds for a linear layer's weight too (B's rows contiguous, nothing to
// pack): at a few rows, a decoding step's products, oneDNN 2.6 took 1.7-3.4x MKL's time
// (1x768x768 0.066 ms against 0.019, 1x768x50257 9.0 against 6.3), at 128 rows 0.91-1.07x, so
// such plans time B in place against the BLAS.
// A product whose operands exceed the measurement's budget is timed on its first columns
// (measurement_spec): a product's time per column is its time per column at any width here,
// and GPT-2's LM head (154 MB of weights) is the product a decoding step spends most on.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "external/blas_library.h"
#include "external/matmul.h"

namespace stax::external::detail {

// Whether B can be packed by the plan (B's columns contiguous: unit column stride, more than
// one column); otherwise the library packs it inside its kernel.
bool b_columns_contiguous(const MatmulSpec& spec);

// The spec a measurement times for `spec`: `spec` itself when its scratch operands fit
// kMeasurementBudgetBytes; else, for one matrix (batch 1), the same product on its first N'
// columns (N' a multiple of 64, the widest that fits; row-major operands get rows of N'
// elements); nullopt when neither fits.
std::optional<MatmulSpec> measurement_spec(const MatmulSpec& spec);

// Elements a layout spans in memory: 1 + sum of (size - 1) * stride; 0 when it is empty.
int64_t layout_extent(const MatrixLayout& layout);

// The bytes of scratch operands a measurement allocates and frees around its timing (a, b, c,
// bias, post-op operands). At most kMeasurementBudgetBytes are allocated: a plan may be built
// while a training step's activations are alive (the backward graph loads after the forward
// ran), and its measurement must not raise the process's peak by much. The largest model
// products fit whole (BERT-base at 1024 tokens, 1024x768x3072: 25 MB); GPT-2's LM head (154 MB
// of weights) is timed on its first columns (measurement_spec).
int64_t measurement_bytes(const MatmulSpec& spec);
inline constexpr int64_t kMeasurementBudgetBytes = int64_t{64} << 20;

// One way to run a plan's product, timed against the others.
struct WeightsFormCandidate {
  MatmulWeights form;         // Direct, Packed or Blas
  std::function<void()> run;  // runs the product once on scratch operands
};

// Times the candidates interleaved: one untimed run each, then the best of as many rounds as
// give the first candidate about kMeasuredSeconds of runs, at least kMinRounds and at most
// kMaxRounds (a best of 3 picked the slower form on about one shape in five on the shared
// 2-core machine; more rounds for the short products, whose timings vary the most). They come
// in order of preference (Direct, B in place through oneDNN; then Blas, no
// workspace; then Packed, a reorder into a workspace of B's size on every run), and the first
// within kNoiseMargin of the fastest is kept: within it the forms are this measurement's
// noise. 10% kept B in place on shapes where the BLAS ran 11-15% faster in steady runs
// (128x768x2304, 256x1024x2752: 1.10-1.13x eager), with best-of-3 it had also put packed and
// the BLAS within 1% where steady runs had the BLAS 10% ahead; with the adaptive rounds 5%
// separated them. Kept per `key` for the process and, when `directory`
// is not empty, on disk (measurement_cache.h): later processes on this machine read the
// decision instead of measuring. Returns the note explain shows; `chosen` gets the decision.
inline constexpr double kMeasuredSeconds = 0.03;
inline constexpr double kNoiseMargin = 0.05;
inline constexpr int kMinRounds = 5, kMaxRounds = 15;
std::string measure_weights_form(const std::string& key, const std::string& directory,
                                 const std::vector<WeightsFormCandidate>& candidates,
                                 MatmulWeights* chosen);

// The memo key of a spec planned for `threads`: every size, stride, scalar and post-op, and
// the BLAS timed with the oneDNN forms (blas_library.h; none: nullptr).
std::string weights_form_key(const MatmulSpec& spec, int threads, const BlasLibrary* blas);

}  // namespace stax::external::detail
