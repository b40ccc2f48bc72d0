// The sweep's configuration space and its deterministic sample (see sweep_plan.h).
#include "sweep_plan.h"

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

namespace stax::sweep {

namespace {

const runtime::SimdLevel kLevels[] = {runtime::SimdLevel::Scalar, runtime::SimdLevel::Avx2,
                                      runtime::SimdLevel::Avx512};

runtime::SimdLevel widest_runnable() {
  return runtime::detect_simd_level();
}

}  // namespace

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::Broadcast:
      return "broadcast";
    case Layout::Sliced:
      return "sliced";
    case Layout::Overlapping:
      return "overlapping";
  }
  return "?";
}

std::vector<Layout> all_layouts() {
  return {Layout::Contiguous, Layout::Transposed, Layout::Broadcast, Layout::Sliced,
          Layout::Overlapping};
}

std::vector<int64_t> layout_strides(Layout layout, int64_t rows, int64_t cols) {
  switch (layout) {
    case Layout::Contiguous:
      return {cols, 1};
    case Layout::Transposed:
      return {1, rows};
    case Layout::Broadcast:
      return {0, 1};
    case Layout::Sliced:
      return {2 * cols + 3, 2};
    case Layout::Overlapping:
      return {std::max<int64_t>(1, cols / 2), 1};
  }
  return {cols, 1};
}

bool Config::runs_case(const std::string& case_name) const {
  if (case_share <= 1) return true;
  uint64_t h = 1469598103934665603ull ^ sample_seed;  // FNV-1a: the same everywhere
  for (unsigned char c : case_name + describe()) h = (h ^ c) * 1099511628211ull;
  return h % static_cast<uint64_t>(case_share) == 0;
}

std::string Config::describe() const {
  return std::string(dtype_name(dtype)) + " [" + std::to_string(rows) + ", " +
         std::to_string(cols) + "] " + layout_name(layout) + " " +
         std::string(runtime::simd_level_name(level));
}

std::vector<int64_t> tail_columns(DType dtype) {
  std::set<int64_t> cols;
  for (runtime::SimdLevel level : {runtime::SimdLevel::Avx2, runtime::SimdLevel::Avx512}) {
    const int64_t w = runtime::simd_width(level, dtype);
    for (int64_t c = 1; c <= 2 * w + 1; ++c) cols.insert(c);
  }
  return {cols.begin(), cols.end()};
}

std::vector<std::pair<int64_t, int64_t>> large_shapes() {
  // 67 x 531 = 35577 elements: 69 parallel chunks of 512 elements, a full reduction long
  // enough to split across 3 threads, rows and columns past the 64-wide tiles with tails of
  // 3 and 19; and its transpose, for column reductions with many rows. (The eager oracle
  // takes about a microsecond per element and case, so larger shapes cost CI minutes.)
  return {{67, 531}, {531, 67}};
}

std::vector<Config> plan_configs(DType dtype, bool full, uint64_t seed) {
  std::vector<Config> out;
  const std::vector<int64_t> tails = tail_columns(dtype);
  if (full) {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (int64_t c : tails) shapes.emplace_back(3, c);
    for (auto s : large_shapes()) shapes.push_back(s);
    for (auto [rows, cols] : shapes) {
      for (Layout layout : all_layouts()) {
        for (runtime::SimdLevel level : kLevels) out.push_back({dtype, rows, cols, layout, level});
      }
    }
    return out;
  }
  const int64_t widest = runtime::simd_width(runtime::SimdLevel::Avx512, dtype);
  out.push_back({dtype, 3, 2 * widest + 1, Layout::Contiguous, widest_runnable()});
  // One sampled configuration per level; the draw depends on the seed and the dtype, so that
  // different dtypes cover different corners.
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(dtype));
  const size_t large_at = rng() % 3;
  for (size_t k = 0; k < 3; ++k) {
    Config c;
    c.dtype = dtype;
    c.level = kLevels[k];
    c.case_share = 6;
    c.sample_seed = seed;
    const std::vector<Layout> layouts = all_layouts();
    c.layout = layouts[rng() % layouts.size()];
    if (k == large_at) {
      const auto shapes = large_shapes();
      std::tie(c.rows, c.cols) = shapes[rng() % shapes.size()];
    } else {
      // Around the level's own width (Scalar: the AVX2 width), where its masked tails are.
      const int64_t w = runtime::simd_width(
          c.level == runtime::SimdLevel::Scalar ? runtime::SimdLevel::Avx2 : c.level, dtype);
      const int64_t around[] = {1, w - 1, w, w + 1, 2 * w - 1, 2 * w + 1};
      c.rows = 1 + static_cast<int64_t>(rng() % 5);
      c.cols = std::max<int64_t>(1, around[rng() % 6]);
    }
    out.push_back(c);
  }
  return out;
}

std::vector<int> sweep_thread_counts() {
  return {1, 2, 3};
}

}  // namespace stax::sweep
