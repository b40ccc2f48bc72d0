// The direct, packed or BLAS form of a matmul plan (matmul_weights_form.h says why).
#include "external/matmul_weights_form.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "external/blas_library.h"
#include "external/dnnl_common.h"
#include "external/measurement_cache.h"

namespace stax::external::detail {

bool b_columns_contiguous(const MatmulSpec& spec) {
  return spec.b.strides[2] == 1 && spec.b.sizes[2] >= 2;
}

std::optional<MatmulSpec> measurement_spec(const MatmulSpec& spec) {
  if (measurement_bytes(spec) <= kMeasurementBudgetBytes) return spec;
  constexpr int64_t kColumnStep = 64;
  const int64_t n = spec.c.sizes[2];
  if (spec.c.sizes[0] != 1 || n <= kColumnStep) return std::nullopt;
  // Narrows every layout with N columns to `columns`; a layout whose rows are contiguous and
  // at least N long gets rows of `columns` elements (its extent shrinks with N).
  auto narrowed = [&](int64_t columns) {
    MatmulSpec m = spec;
    auto narrow = [&](MatrixLayout& l) {
      if (l.sizes[2] != n) return;
      l.sizes[2] = columns;
      if (l.strides[2] == 1 && l.strides[1] >= n) l.strides[1] = columns;
    };
    narrow(m.b);
    narrow(m.c);
    if (m.bias) narrow(*m.bias);
    for (PostOp& op : m.post_ops) {
      if (op.operand) narrow(*op.operand);
    }
    return m;
  };
  // Bytes grow with the columns: the widest multiple of kColumnStep that fits, by bisection.
  int64_t lo = 0;
  int64_t hi = (n - 1) / kColumnStep;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (measurement_bytes(narrowed(mid * kColumnStep)) <= kMeasurementBudgetBytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  if (lo == 0) return std::nullopt;
  return narrowed(lo * kColumnStep);
}

int64_t layout_extent(const MatrixLayout& layout) {
  int64_t extent = 1;
  for (int d = 0; d < 3; ++d) {
    if (layout.sizes[d] == 0) return 0;
    extent += (layout.sizes[d] - 1) * layout.strides[d];
  }
  return extent;
}

int64_t measurement_bytes(const MatmulSpec& spec) {
  const auto element = static_cast<int64_t>(dtype_size(spec.dtype));
  int64_t bytes = (layout_extent(spec.a) + layout_extent(spec.b) + layout_extent(spec.c)) * element;
  if (spec.bias) bytes += layout_extent(*spec.bias) * element;
  for (const PostOp& op : spec.post_ops) {
    if (op.operand) {
      bytes += layout_extent(*op.operand) * static_cast<int64_t>(dtype_size(op.operand_dtype));
    }
  }
  return bytes;
}

namespace {

double seconds_of(const std::function<void()>& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  return text;
}

}  // namespace

namespace {

char form_code(MatmulWeights form) {
  return form == MatmulWeights::Packed ? 'P' : form == MatmulWeights::Blas ? 'B' : 'D';
}

std::string form_label(MatmulWeights form) {
  switch (form) {
    case MatmulWeights::Packed:
      return "packed, reorder included";
    case MatmulWeights::Blas:
      return "by the BLAS";
    default:
      return "in place";
  }
}

std::string decision_note(MatmulWeights form) {
  switch (form) {
    case MatmulWeights::Packed:
      return "B packed by the library on every run";
    case MatmulWeights::Blas:
      return "the product by the BLAS's sgemm, B in place";
    default:
      return "B read in place";
  }
}

}  // namespace

std::string measure_weights_form(const std::string& key, const std::string& directory,
                                 const std::vector<WeightsFormCandidate>& candidates,
                                 MatmulWeights* chosen) {
  // The answer's first character is the decision (form_code), the rest the note.
  bool from_disk = false;
  const std::string answer = measured_once(
      key, directory,
      [&]() -> std::string {
        std::vector<double> best(candidates.size());
        const double first = seconds_of(candidates[0].run);
        for (size_t i = 1; i < candidates.size(); ++i) candidates[i].run();
        const int rounds = std::clamp(static_cast<int>(kMeasuredSeconds / std::max(first, 1e-6)),
                                      kMinRounds, kMaxRounds);
        for (int round = 0; round < rounds; ++round) {
          for (size_t i = 0; i < candidates.size(); ++i) {
            const double seconds = seconds_of(candidates[i].run);
            best[i] = round == 0 ? seconds : std::min(best[i], seconds);
          }
        }
        const double fastest = *std::min_element(best.begin(), best.end());
        size_t winner = 0;
        while ((1.0 - kNoiseMargin) * best[winner] > fastest) ++winner;
        std::string times;
        for (size_t i = 0; i < candidates.size(); ++i) {
          times +=
              (i == 0 ? "" : ", ") + milliseconds(best[i]) + " " + form_label(candidates[i].form);
        }
        const MatmulWeights form = candidates[winner].form;
        return form_code(form) + decision_note(form) + " (measured when planned: " + times + ")";
      },
      &from_disk);
  *chosen = answer[0] == 'P'   ? MatmulWeights::Packed
            : answer[0] == 'B' ? MatmulWeights::Blas
                               : MatmulWeights::Direct;
  return answer.substr(1) + (from_disk ? ", read from the plan cache" : "");
}

std::string weights_form_key(const MatmulSpec& spec, int threads, const BlasLibrary* blas) {
  std::ostringstream key;
  auto layout = [&key](const MatrixLayout& l) {
    for (int d = 0; d < 3; ++d) key << l.sizes[d] << ',' << l.strides[d] << ',';
    key << ';';
  };
  key << (blas != nullptr ? blas->description() : "no BLAS") << ';' << static_cast<int>(spec.dtype)
      << ';' << threads << ';' << spec.alpha << ';' << spec.beta << ';';
  layout(spec.a);
  layout(spec.b);
  layout(spec.c);
  if (spec.bias) layout(*spec.bias);
  key << '|';
  for (const PostOp& op : spec.post_ops) {
    key << static_cast<int>(op.kind) << ',' << op.alpha << ',' << op.beta << ',' << op.operand_first
        << ',' << static_cast<int>(op.operand_dtype) << ',';
    if (op.operand) layout(*op.operand);
    key << '/';
  }
  return key.str();
}

}  // namespace stax::external::detail
