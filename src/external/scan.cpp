// Stax's runtime scan (see scan.h).
#include "external/scan.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "runtime/kernel_include/stax_kernel_half.h"

namespace stax::external {

namespace {

using ir::ScanKind;

int64_t product(const std::vector<int64_t>& sizes, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= sizes[d];
  return n;
}

template <typename S>
constexpr bool is_16bit = std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>;

// The type the running value is carried in: PyTorch's CPU accumulation type for the sums,
// products and logsumexp (ir::scan_accumulate_dtype), and a type that holds the element
// exactly for the extrema.
template <typename S, ScanKind K>
struct Accumulate {
  using type = std::conditional_t<
      is_16bit<S>, float,
      std::conditional_t<std::is_floating_point_v<S>,
                         std::conditional_t<K == ScanKind::Max || K == ScanKind::Min, S, double>,
                         std::conditional_t<std::is_same_v<S, bool>, bool, int64_t>>>;
};

// eager's _log_add_exp_helper(x, y): log(exp(x) + exp(y)), exact where both are the same
// infinity, NaN where either is.
template <typename A>
inline A log_add_exp(A x, A y) {
  const A lo = std::isnan(y) ? y : std::min(x, y);
  const A hi = std::isnan(y) ? y : std::max(x, y);
  if (lo != hi || std::isfinite(lo)) return hi + std::log1p(std::exp(lo - hi));
  return x;
}

// The running state of one column: its value and, for the extrema, the index it was taken
// at (-1 while no element has been seen).
template <typename A>
struct State {
  A value;
  int64_t index;
};

template <typename S, ScanKind K>
struct Scan {
  using A = typename Accumulate<S, K>::type;

  static State<A> identity() {
    if constexpr (K == ScanKind::Sum) return {A(0), -1};
    if constexpr (K == ScanKind::Prod) return {A(1), -1};
    if constexpr (K == ScanKind::LogSumExp) return {-std::numeric_limits<A>::infinity(), -1};
    return {A{}, -1};
  }

  static A load(const S* p) {
    if constexpr (is_16bit<S>) {
      return static_cast<float>(*p);
    } else {
      return static_cast<A>(*p);
    }
  }

  static void store(S* p, A v) {
    if constexpr (is_16bit<S>) {
      *p = S(static_cast<float>(v));
    } else if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool>) {
      *p = static_cast<S>(static_cast<uint64_t>(v));  // wraps, as eager's cast
    } else {
      *p = static_cast<S>(v);
    }
  }

  // Whether x at a later position replaces `current` (cummax: x >= current; a NaN always,
  // and nothing replaces a NaN).
  static bool takes(A x, A current) {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(x)) return true;
      if (std::isnan(current)) return false;
    }
    return K == ScanKind::Max ? x >= current : x <= current;
  }

  static void step(State<A>& s, A x, int64_t k) {
    if constexpr (K == ScanKind::Sum) {
      if constexpr (std::is_integral_v<A>) {
        s.value = static_cast<A>(static_cast<uint64_t>(s.value) + static_cast<uint64_t>(x));
      } else {
        s.value += x;
      }
    } else if constexpr (K == ScanKind::Prod) {
      if constexpr (std::is_integral_v<A>) {
        s.value = static_cast<A>(static_cast<uint64_t>(s.value) * static_cast<uint64_t>(x));
      } else {
        s.value *= x;
      }
    } else if constexpr (K == ScanKind::LogSumExp) {
      s.value = log_add_exp(x, s.value);
    } else {
      if (s.index < 0 || takes(x, s.value)) s = {x, k};
    }
  }

  // The state after `prefix` then a block whose own scan ended in `total`.
  static State<A> merge(State<A> prefix, State<A> total) {
    if constexpr (K == ScanKind::Max || K == ScanKind::Min) {
      if (total.index < 0) return prefix;
      if (prefix.index < 0 || takes(total.value, prefix.value)) return total;
      return prefix;
    } else {
      step(prefix, total.value, total.index);
      return prefix;
    }
  }
};

// Where the input's columns (the elements of the dims after `dim`) are, relative to a line's
// start: one stride when those dims collapse into one, else a table.
struct Columns {
  int64_t stride = 1;
  std::vector<int64_t> offsets;  // empty when `stride` serves
  int64_t at(int64_t c) const { return offsets.empty() ? c * stride : offsets[c]; }
};

Columns input_columns(const ScanSpec& s, int64_t inner) {
  const size_t rank = s.sizes.size();
  const size_t first = rank == 0 ? 0 : static_cast<size_t>(s.dim) + 1;
  std::vector<size_t> dims;
  for (size_t d = first; d < rank; ++d) {
    if (s.sizes[d] != 1) dims.push_back(d);
  }
  Columns c;
  if (dims.empty()) return c;
  bool collapses = true;
  for (size_t j = 0; j + 1 < dims.size(); ++j) {
    collapses = collapses &&
                s.input_strides[dims[j]] == s.input_strides[dims[j + 1]] * s.sizes[dims[j + 1]];
  }
  if (collapses) {
    c.stride = s.input_strides[dims.back()];
    return c;
  }
  c.offsets.resize(static_cast<size_t>(inner));
  for (int64_t i = 0; i < inner; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t j = dims.size(); j-- > 0;) {
      offset += (rest % s.sizes[dims[j]]) * s.input_strides[dims[j]];
      rest /= s.sizes[dims[j]];
    }
    c.offsets[static_cast<size_t>(i)] = offset;
  }
  return c;
}

// The input offset of line group `o` (an index over the dims before `dim`).
int64_t outer_offset(const ScanSpec& s, int64_t o) {
  int64_t offset = 0;
  for (size_t d = static_cast<size_t>(s.dim); d-- > 0;) {
    offset += (o % s.sizes[d]) * s.input_strides[d];
    o /= s.sizes[d];
  }
  return offset;
}

template <typename S, ScanKind K>
void run_typed(const ScanSpec& spec, const ScanPartition& p, const S* input, S* values,
               int64_t* indices) {
  using Op = Scan<S, K>;
  using A = typename Op::A;
  const int64_t n = p.length, inner = p.inner;
  const int64_t dim_stride = spec.sizes.empty() ? 0 : spec.input_strides[spec.dim];
  const Columns columns = input_columns(spec, inner);
  const int64_t chunks = (inner + p.column_chunk - 1) / p.column_chunk;
  const int64_t groups = p.outer * chunks;
  const int64_t blocks = p.blocks;
  const int64_t block_length = (n + blocks - 1) / blocks;

  // Runs the k range [k0, k1) of columns [c0, c1) of line group o from `states`, writing the
  // results or (write false) only advancing the states.
  auto run = [&](int64_t o, int64_t c0, int64_t c1, int64_t k0, int64_t k1, State<A>* states,
                 bool write) {
    const S* in = input + outer_offset(spec, o);
    if (c1 - c0 == 1) {
      // One column (a scan along the last dim): the running state stays in registers and
      // the walk is one pointer step per element.
      State<A> st = states[0];
      const S* x = in + columns.at(c0) + k0 * dim_stride;
      S* y = values + (o * n + k0) * inner + c0;
      int64_t* at = indices != nullptr ? indices + (o * n + k0) * inner + c0 : nullptr;
      for (int64_t k = k0; k < k1; ++k, x += dim_stride, y += inner) {
        Op::step(st, Op::load(x), k);
        if (!write) continue;
        Op::store(y, st.value);
        if constexpr (K == ScanKind::Max || K == ScanKind::Min) {
          if (at != nullptr) {
            *at = st.index;
            at += inner;
          }
        }
      }
      states[0] = st;
      return;
    }
    for (int64_t k = k0; k < k1; ++k) {
      const S* row = in + k * dim_stride;
      const int64_t out_row = (o * n + k) * inner;
      for (int64_t c = c0; c < c1; ++c) {
        State<A>& st = states[c - c0];
        Op::step(st, Op::load(row + columns.at(c)), k);
        if (write) {
          Op::store(values + out_row + c, st.value);
          if constexpr (K == ScanKind::Max || K == ScanKind::Min) {
            if (indices != nullptr) indices[out_row + c] = st.index;
          }
        }
      }
    }
  };

  const int64_t width = std::min(p.column_chunk, inner);
  // Per (group, block): the state its block starts from (blocks > 1: first the block's total).
  std::vector<State<A>> states(static_cast<size_t>(groups * blocks * width), Op::identity());
  auto task_states = [&](int64_t g, int64_t b) { return states.data() + (g * blocks + b) * width; };
  auto task = [&](int64_t t, bool write) {
    const int64_t g = t / blocks, b = t % blocks;
    const int64_t o = g / chunks, c0 = (g % chunks) * p.column_chunk;
    const int64_t c1 = std::min(inner, c0 + p.column_chunk);
    const int64_t k0 = b * block_length, k1 = std::min(n, k0 + block_length);
    run(o, c0, c1, k0, k1, task_states(g, b), write);
  };
  auto for_each_task = [&](bool write) {
    const int64_t tasks = groups * blocks;
    if (p.threads <= 1) {
      for (int64_t t = 0; t < tasks; ++t) task(t, write);
      return;
    }
#pragma omp parallel for num_threads(p.threads) schedule(static)
    for (int64_t t = 0; t < tasks; ++t) task(t, write);
  };
  if (blocks > 1) {
    // Reduce: each block's total from the identity. Scan the totals: block b starts from the
    // merge of blocks 0..b-1. Then rescan every block from its prefix.
    for_each_task(false);
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t c = 0; c < width; ++c) {
        State<A> prefix = Op::identity();
        for (int64_t b = 0; b < blocks; ++b) {
          State<A>& slot = task_states(g, b)[c];
          const State<A> total = slot;
          slot = prefix;
          prefix = Op::merge(prefix, total);
        }
      }
    }
  }
  for_each_task(true);
}

template <typename S>
void run_kind(const ScanSpec& spec, const ScanPartition& p, const void* input, void* values,
              int64_t* indices) {
  const auto* in = static_cast<const S*>(input);
  auto* out = static_cast<S*>(values);
  switch (spec.kind) {
    case ScanKind::Max:
      return run_typed<S, ScanKind::Max>(spec, p, in, out, indices);
    case ScanKind::Min:
      return run_typed<S, ScanKind::Min>(spec, p, in, out, indices);
    default:
      break;
  }
  if constexpr (std::is_same_v<S, bool>) {
    throw std::invalid_argument("a bool scan other than cummax and cummin");
  } else {
    switch (spec.kind) {
      case ScanKind::Sum:
        return run_typed<S, ScanKind::Sum>(spec, p, in, out, indices);
      case ScanKind::Prod:
        return run_typed<S, ScanKind::Prod>(spec, p, in, out, indices);
      case ScanKind::LogSumExp:
        if constexpr (std::is_floating_point_v<S> || is_16bit<S>) {
          return run_typed<S, ScanKind::LogSumExp>(spec, p, in, out, indices);
        }
        throw std::invalid_argument("logcumsumexp of an integer dtype");
      default:
        break;
    }
  }
}

}  // namespace

std::optional<std::string> scan_spec_problem(const ScanSpec& spec) {
  if (spec.input_strides.size() != spec.sizes.size()) {
    return "input strides " + std::to_string(spec.input_strides.size()) + " for " +
           std::to_string(spec.sizes.size()) + " dims";
  }
  if (spec.dim < 0 ||
      (spec.sizes.empty() ? spec.dim != 0 : spec.dim >= static_cast<int64_t>(spec.sizes.size()))) {
    return "dim " + std::to_string(spec.dim) + " of a rank " + std::to_string(spec.sizes.size()) +
           " scan";
  }
  for (int64_t s : spec.sizes) {
    if (s < 0) return "a negative size";
  }
  const bool extremum = spec.kind == ScanKind::Max || spec.kind == ScanKind::Min;
  if (spec.dtype == DType::Bool && !extremum) return "a bool sum, product or logsumexp";
  if (spec.kind == ScanKind::LogSumExp && !is_floating(spec.dtype)) {
    return "logcumsumexp of " + std::string(dtype_name(spec.dtype));
  }
  return std::nullopt;
}

ScanPartition scan_partition(const ScanSpec& spec, int num_threads) {
  ScanPartition p;
  const size_t rank = spec.sizes.size();
  if (rank > 0) {
    const auto dim = static_cast<size_t>(spec.dim);
    p.outer = product(spec.sizes, 0, dim);
    p.length = spec.sizes[dim];
    p.inner = product(spec.sizes, dim + 1, rank);
  }
  const int64_t numel = p.outer * p.length * p.inner;
  // Below a few pages per thread, a parallel region costs more than it saves.
  constexpr int64_t kElementsPerThread = 1 << 14;
  p.threads = static_cast<int>(
      std::clamp<int64_t>(numel / kElementsPerThread, 1, std::max(num_threads, 1)));
  // Columns run together (one running value each, the rows read whole); chunks of them keep
  // the running values in cache and give threads work where the line groups are few.
  constexpr int64_t kMaxColumns = 4096;
  p.column_chunk = std::clamp<int64_t>(p.inner, 1, kMaxColumns);
  const int64_t wanted_chunks = (p.threads + p.outer - 1) / std::max<int64_t>(p.outer, 1);
  if (wanted_chunks > 1) {
    // Narrower chunks, but no narrower than a few cache lines of the row.
    p.column_chunk = std::max<int64_t>(std::min<int64_t>(p.inner, 64),
                                       (p.inner + wanted_chunks - 1) / wanted_chunks);
  }
  const int64_t groups = p.outer * ((p.inner + p.column_chunk - 1) / p.column_chunk);
  // Too few line groups for the threads: split the carried dim by associativity, in blocks
  // long enough that reading each block twice stays cheaper than leaving a thread idle.
  constexpr int64_t kMinBlock = 2048;
  if (groups < p.threads && p.length >= 2 * kMinBlock) {
    const int64_t per_group = (p.threads + groups - 1) / groups;
    p.blocks = std::clamp<int64_t>(p.length / kMinBlock, 1, per_group);
  }
  return p;
}

void run_scan(const ScanSpec& spec, const void* input, void* values, int64_t* indices,
              int num_threads) {
  if (auto problem = scan_spec_problem(spec)) throw std::invalid_argument("scan: " + *problem);
  const ScanPartition p = scan_partition(spec, num_threads);
  if (p.outer * p.length * p.inner == 0) return;
  switch (spec.dtype) {
    case DType::Float32:
      return run_kind<float>(spec, p, input, values, indices);
    case DType::Float64:
      return run_kind<double>(spec, p, input, values, indices);
    case DType::Float16:
      return run_kind<Half>(spec, p, input, values, indices);
    case DType::BFloat16:
      return run_kind<BFloat16>(spec, p, input, values, indices);
    case DType::Int64:
      return run_kind<int64_t>(spec, p, input, values, indices);
    case DType::Int32:
      return run_kind<int32_t>(spec, p, input, values, indices);
    case DType::Int16:
      return run_kind<int16_t>(spec, p, input, values, indices);
    case DType::Int8:
      return run_kind<int8_t>(spec, p, input, values, indices);
    case DType::UInt8:
      return run_kind<uint8_t>(spec, p, input, values, indices);
    case DType::Bool:
      return run_kind<bool>(spec, p, input, values, indices);
    default:
      break;
  }
  throw std::invalid_argument("scan: dtype " + std::string(dtype_name(spec.dtype)));
}

}  // namespace stax::external
