// What the differential sweep runs: the configurations (operand sizes, input layout, SIMD
// level) of each dtype, and which of them a run covers. Every op x dtype of the catalogue
// runs in every chosen configuration of its dtype, each compiled graph at 1, 2 and 3 threads.
//
// Sizes are [rows, cols]: cols take the tails 1 ... 2W+1 around each vector width W of the
// dtype (its lanes at AVX2 and at AVX-512), and two large shapes reach the parallel loops,
// reductions split across threads, column reductions and 2-D tiles of transposed inputs.
//
// CI runs, per dtype, a base configuration with every case (3 x (2W+1) for the widest W,
// contiguous, the widest level the CPU runs) and one sampled configuration per SIMD level
// (sizes and layout drawn with a fixed seed, one of them large) with a sixth of the cases
// each; STAX_SWEEP_SEED=N draws another sample, and STAX_SWEEP_FULL=1 runs the whole cross
// product with every case. Almost all of the time is the C++ compiler's (one JIT compile per
// configuration), so this keeps CI within about two minutes on two cores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "runtime/simd.h"

namespace stax::sweep {

enum class Layout : uint8_t {
  Contiguous,
  Transposed,   // column-major (strides [1, rows])
  Broadcast,    // every row the same element (stride 0 along rows, as torch.expand gives)
  Sliced,       // every other element of padded rows (a stepped slice of a larger tensor)
  Overlapping,  // rows overlapping in storage (as_strided windows: strides [cols / 2, 1])
};
const char* layout_name(Layout layout);
std::vector<Layout> all_layouts();
// Strides in elements of a [rows, cols] input laid out as `layout`.
std::vector<int64_t> layout_strides(Layout layout, int64_t rows, int64_t cols);

struct Config {
  DType dtype = DType::Float32;
  int64_t rows = 1;
  int64_t cols = 1;
  Layout layout = Layout::Contiguous;
  runtime::SimdLevel level = runtime::SimdLevel::Scalar;
  // Runs one case in `case_share` (1: every case), chosen by a hash of the seed, the
  // configuration and the case name, so that sampled configurations stay cheap.
  int case_share = 1;
  uint64_t sample_seed = 0;
  bool runs_case(const std::string& case_name) const;
  std::string describe() const;  // "f32 [3, 33] transposed avx2"
};

// Column counts of the dtype's tails: 1 ... 2W+1 for each of its vector widths.
std::vector<int64_t> tail_columns(DType dtype);
// The large [rows, cols] shapes.
std::vector<std::pair<int64_t, int64_t>> large_shapes();

// The configurations of `dtype` for a run: full = the whole cross product.
std::vector<Config> plan_configs(DType dtype, bool full, uint64_t seed);

// The thread counts every compiled graph runs with.
std::vector<int> sweep_thread_counts();

}  // namespace stax::sweep
