// ConvolutionPlan on oneDNN 2.6's convolution primitive (convolution.h).
//
// Memory formats, chosen by measurement (bench/conv/RESULTS.md: ResNet-18's and ViT's
// convolutions at batch 1 and 4, float32 and bfloat16, NCHW and channels-last activations,
// against torch 2.13's conv2d, on a 2-vCPU AMD Zen 4 with AVX-512 BF16):
// - oneDNN 2.6 resolves format_tag::any to nhwc (its brgconv kernels) on every one of those
//   shapes: asking for nhwc directly and asking for `any` are the same plan.
// - For NCHW callers the blocked nChw16c format (its jit kernels), reorders included, beats
//   nhwc plus reorders: ResNet-18's convolutions summed take 0.75-0.83 of torch's time in
//   float32 against 0.83-1.01 (three runs), 0.81-0.93 in bfloat16 against 1.06-1.26, where
//   brgconv's 7x7 and 14x14 layers take up to 2.3x torch's and its bfloat16 weight format
//   costs 5x as much to reorder from OIHW (512x512x3x3: 1.4 against 0.26 ms).
// - For channels-last callers nhwc, read and written in place, beats blocked in float32
//   (0.87-0.94 of torch's time, summed, against 0.93-1.03) and draws in bfloat16 (0.86-1.01
//   against 0.82-0.97: within the noise of this shared machine, where one plan measured twice
//   in a run differed by 9%), except on the smallest outputs (7x7 at batch 1), where blocked
//   wins in both dtypes (bfloat16 512x512x3x3: 0.72-0.78 of torch against 0.83-0.91).
// So Automatic asks for nChw16c, except for a channels-last input whose output has more than
// 64 positions (batch x spatial), which gets nhwc; where oneDNN refuses that format or has only
// its reference kernel for it (groups of few channels, padding wider than the kernel, ...)
// it tries the others (candidates()). The same rule serves 1-D and 3-D, unmeasured.
//
// What eager computes and which oneDNN form gives it: the sum over input channels of a group
// and kernel positions, in float32 for both dtypes (bfloat16 products are exact in float32),
// plus the bias, rounded once to the output dtype -- oneDNN's convolution with its bias
// argument, in the dtype of the tensors. Eager's own path is oneDNN too (torch's newer
// build), so the two differ only in the order of the float32 sums.
//
// Threads: as for matmul.cpp, oneDNN fixes a primitive's thread count when it is built, so
// the plan keeps one set of primitives (convolution and reorders) per thread count asked for.
// Each run borrows one workspace from that set's pool: the reordered operands and the
// scratchpad (user mode), shared by the primitives of the run, which execute in order on the
// caller's stream.
#include "external/convolution.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "external/dnnl_common.h"

namespace stax::external {

namespace {

using detail::Buffer;
using detail::cpu_engine;
using detail::OmpThreads;
using detail::thread_stream;
using dnnl::memory;
using Formats = ConvolutionPlan::Formats;
using Tag = memory::format_tag;

// A layout as oneDNN dimensions and strides. Strides of size-1 dimensions are not used to
// address anything, but oneDNN checks strides for overlap: they get the outermost stride.
memory::desc strided_desc(const std::vector<int64_t>& sizes, std::vector<int64_t> strides,
                          memory::data_type dt) {
  int64_t outer = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) outer = std::max(outer, sizes[d] * strides[d]);
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) strides[d] = outer;
  }
  return memory::desc(memory::dims(sizes.begin(), sizes.end()), dt,
                      memory::dims(strides.begin(), strides.end()));
}

// The weight as oneDNN takes it: [C_out, C_in/g, kernel...], or with groups
// [g, C_out/g, C_in/g, kernel...] (the group dimension splits C_out).
std::vector<int64_t> library_weight_sizes(const ConvolutionSpec& spec) {
  std::vector<int64_t> sizes = spec.weight.sizes;
  if (spec.groups == 1) return sizes;
  sizes[0] /= spec.groups;
  sizes.insert(sizes.begin(), spec.groups);
  return sizes;
}

memory::desc user_weight_desc(const ConvolutionSpec& spec, memory::data_type dt) {
  std::vector<int64_t> strides = spec.weight.strides;
  if (spec.groups > 1)
    strides.insert(strides.begin(), strides[0] * (spec.weight.sizes[0] / spec.groups));
  return strided_desc(library_weight_sizes(spec), strides, dt);
}

Tag channels_last_tag(int spatial) {
  return spatial == 1 ? Tag::nwc : spatial == 2 ? Tag::nhwc : Tag::ndhwc;
}
Tag plain_tag(int spatial) {
  return spatial == 1 ? Tag::ncw : spatial == 2 ? Tag::nchw : Tag::ncdhw;
}
Tag blocked_tag(int spatial) {
  return spatial == 1 ? Tag::nCw16c : spatial == 2 ? Tag::nChw16c : Tag::nCdhw16c;
}

// The desc the primitive is asked for, for an activation whose caller layout is `user`.
// oneDNN's blocked kernels read a src of fewer than 16 channels (a stem's) plain, not blocked.
memory::desc activation_request(Formats formats, const memory::desc& user, int spatial,
                                bool is_src) {
  const memory::dims dims = user.dims();
  const memory::data_type dt = user.data_type();
  switch (formats) {
    case Formats::Automatic:
    case Formats::Any:
      return memory::desc(dims, dt, Tag::any);
    case Formats::ChannelsLast:
      return memory::desc(dims, dt, channels_last_tag(spatial));
    case Formats::Blocked:
      return memory::desc(dims, dt,
                          is_src && dims[1] < 16 ? plain_tag(spatial) : blocked_tag(spatial));
    case Formats::Caller:
      return user;
  }
  return user;
}

// Whether the caller's layout `user` addresses its elements as `chosen` does: then the
// caller's buffer is the primitive's operand, no reorder.
bool same_layout(const memory::desc& user, const memory::desc& chosen) {
  const dnnl_memory_desc_t& u = user.data;
  const dnnl_memory_desc_t& c = chosen.data;
  if (c.format_kind != dnnl_blocked || c.format_desc.blocking.inner_nblks != 0 || c.offset0 != 0 ||
      u.ndims != c.ndims || u.data_type != c.data_type) {
    return false;
  }
  for (int d = 0; d < c.ndims; ++d) {
    if (u.dims[d] != c.dims[d] || c.padded_dims[d] != c.dims[d]) return false;
    if (c.dims[d] > 1 && u.format_desc.blocking.strides[d] != c.format_desc.blocking.strides[d]) {
      return false;
    }
  }
  return true;
}

// "nchw", "nhwc", "nChw16c", ... for implementation(): the dimensions from outermost to
// innermost (an inner block as a capital letter outside and its size inside), for the
// activation formats oneDNN picks; "blocked" for anything else.
std::string format_name(const memory::desc& md) {
  const dnnl_memory_desc_t& m = md.data;
  static const char* const kLetters[] = {"", "", "", "ncw", "nchw", "ncdhw"};
  if (m.format_kind != dnnl_blocked || m.ndims < 3 || m.ndims > 5) return "blocked";
  const auto& b = m.format_desc.blocking;
  std::vector<int> order(m.ndims);
  for (int d = 0; d < m.ndims; ++d) order[d] = d;
  // Outermost first; equal strides (size-1 dimensions) keep the logical order.
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string name;
  for (int d : order) name += kLetters[m.ndims][d];
  if (b.inner_nblks == 0) return name;
  if (b.inner_nblks == 1 && b.inner_idxs[0] == 1) {
    name[name.find('c')] = 'C';
    return name + std::to_string(b.inner_blks[0]) + "c";
  }
  return "blocked";
}

// The primitive descriptor for a spec (current OpenMP thread count) with the given formats.
dnnl::convolution_forward::primitive_desc make_primitive_desc(const ConvolutionSpec& spec,
                                                              Formats formats) {
  const memory::data_type dt = *detail::library_dtype(spec.dtype);
  const int spatial = spec.spatial_dims();
  const memory::desc src = activation_request(
      formats, strided_desc(spec.input.sizes, spec.input.strides, dt), spatial, true);
  const memory::desc dst = activation_request(
      formats, strided_desc(spec.output.sizes, spec.output.strides, dt), spatial, false);
  const memory::desc weights(library_weight_sizes(spec), dt, Tag::any);
  memory::dims strides(spec.stride.begin(), spec.stride.end()), padding_l, padding_r, dilation;
  for (int i = 0; i < spatial; ++i) {
    // oneDNN counts dilation as the gaps between kernel elements (0 is dense).
    dilation.push_back(spec.dilation[i] - 1);
    padding_l.push_back(spec.padding[i]);
    // The right padding that makes oneDNN's output size exactly the spec's (less than the
    // left one where the stride does not divide the padded input: eager never reads those
    // last elements).
    const int64_t span = spec.dilation[i] * (spec.weight.sizes[2 + i] - 1) + 1;
    padding_r.push_back((spec.output.sizes[2 + i] - 1) * spec.stride[i] + span -
                        spec.input.sizes[2 + i] - spec.padding[i]);
  }
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  using Conv = dnnl::convolution_forward;
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  if (spec.bias) {
    const memory::desc bias({spec.bias->sizes[0]}, dt, Tag::a);
    return Conv::primitive_desc(Conv::desc(prop, algorithm, src, weights, bias, dst, strides,
                                           dilation, padding_l, padding_r),
                                attr, cpu_engine());
  }
  return Conv::primitive_desc(
      Conv::desc(prop, algorithm, src, weights, dst, strides, dilation, padding_l, padding_r), attr,
      cpu_engine());
}

// The smallest well-formed convolution of a dtype, to ask oneDNN whether it has any.
ConvolutionSpec probe_spec(DType dtype) {
  ConvolutionSpec probe;
  probe.dtype = dtype;
  probe.input = TensorLayout::contiguous({1, 1, 2, 2});
  probe.weight = TensorLayout::contiguous({1, 1, 1, 1});
  probe.output = TensorLayout::contiguous({1, 1, 2, 2});
  probe.stride = probe.dilation = {1, 1};
  probe.padding = {0, 0};
  return probe;
}

// Whether oneDNN convolves this dtype at all on this CPU: asked once per dtype.
std::string dtype_refusal(DType dtype) {
  static std::mutex mutex;
  static std::map<DType, std::string> answers;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = answers.find(dtype); it != answers.end()) return it->second;
  std::string answer;
  if (!detail::library_dtype(dtype)) {
    answer = std::string("oneDNN has no ") + std::string(dtype_name(dtype)) +
             " convolution (a Stax loop nest computes it)";
  } else {
    try {
      make_primitive_desc(probe_spec(dtype), Formats::Any);
    } catch (const dnnl::error& e) {
      answer = detail::library_version() + " has no " + std::string(dtype_name(dtype)) +
               " convolution on this CPU (" + e.what() + ")";
    }
  }
  answers.emplace(dtype, answer);
  return answer;
}

// Eager's output is empty whenever its input is (ConvolutionSpec::error): no call then.
bool empty_output(const ConvolutionSpec& spec) {
  const std::vector<int64_t>& sizes = spec.output.sizes;
  return std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
}

// What Automatic asks for, in order: the measured choice first (top of this file), then the
// others where oneDNN refuses it or has only its reference kernel (the blocked kernels take
// no group of fewer than 16 channels, for one).
std::vector<Formats> candidates(const ConvolutionSpec& spec, Formats formats) {
  if (formats != Formats::Automatic) return {formats};
  int64_t positions = spec.output.sizes[0];  // output positions: batch times spatial
  for (size_t d = 2; d < spec.output.sizes.size(); ++d) positions *= spec.output.sizes[d];
  if (spec.input.is_channels_last() && !spec.input.is_contiguous() && positions > 64) {
    return {Formats::ChannelsLast, Formats::Any, Formats::Blocked};
  }
  return {Formats::Blocked, Formats::ChannelsLast, Formats::Any};
}

// The formats a spec's plan asks for and its primitive descriptor (for the current OpenMP
// thread count), or why there is no plan. No descriptor when the output is empty.
struct Analysis {
  Formats formats = Formats::Any;
  std::optional<dnnl::convolution_forward::primitive_desc> pd;
  std::string refusal;  // empty when there is a plan
};

Analysis analyze(const ConvolutionSpec& spec, Formats formats) {
  Analysis result;
  if (std::string error = spec.error(); !error.empty()) {
    result.refusal = "malformed convolution " + spec.describe() + ": " + error;
    return result;
  }
  if (std::string refusal = dtype_refusal(spec.dtype); !refusal.empty()) {
    result.refusal = refusal;
    return result;
  }
  if (empty_output(spec)) return result;
  std::string errors;
  for (Formats candidate : candidates(spec, formats)) {
    try {
      auto pd = make_primitive_desc(spec, candidate);
      if (!detail::is_reference(pd.impl_info_str())) {
        result.formats = candidate;
        result.pd = std::move(pd);
        return result;
      }
      errors =
          "oneDNN has only its reference (unoptimized) kernel for this convolution on this "
          "CPU";
    } catch (const dnnl::error& e) {
      if (errors.empty())
        errors = std::string("oneDNN refuses this convolution (") + e.what() + ")";
    }
  }
  result.refusal = errors;
  return result;
}

// A reorder of one operand between the caller's layout and the primitive's format.
struct Reorder {
  dnnl::reorder::primitive_desc pd;
  dnnl::reorder primitive;
  size_t temporary_offset = 0;  // of the operand in the primitive's format, in the workspace

  Reorder(const memory::desc& from, const memory::desc& to) : pd(make(from, to)), primitive(pd) {}

  static dnnl::reorder::primitive_desc make(const memory::desc& from, const memory::desc& to) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to, attr);
  }
};

// The convolution and reorder primitives for one thread count, and the workspaces of runs.
struct Primitive {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward convolution;
  memory::desc user_src, user_weights, user_bias, user_dst;
  std::optional<Reorder> src, weights, bias, dst;
  size_t scratchpad_offset = 0;  // one scratchpad, the largest any of the primitives needs
  std::optional<detail::BufferPool> pool;  // workspaces: temporaries, then the scratchpad

  static size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

  Primitive(const ConvolutionSpec& spec, dnnl::convolution_forward::primitive_desc desc)
      : pd(std::move(desc)), convolution(pd) {
    const memory::data_type dt = *detail::library_dtype(spec.dtype);
    user_src = strided_desc(spec.input.sizes, spec.input.strides, dt);
    user_weights = user_weight_desc(spec, dt);
    user_dst = strided_desc(spec.output.sizes, spec.output.strides, dt);
    if (spec.bias) user_bias = strided_desc(spec.bias->sizes, spec.bias->strides, dt);
    size_t offset = 0;
    size_t scratchpad = pd.scratchpad_desc().get_size();
    auto add = [&](std::optional<Reorder>& slot, const memory::desc& from, const memory::desc& to,
                   const memory::desc& temporary) {
      slot.emplace(from, to);
      slot->temporary_offset = offset;
      offset += round_up(temporary.get_size());
      scratchpad = std::max(scratchpad, slot->pd.scratchpad_desc().get_size());
    };
    if (!same_layout(user_src, pd.src_desc())) add(src, user_src, pd.src_desc(), pd.src_desc());
    if (!same_layout(user_weights, pd.weights_desc())) {
      add(weights, user_weights, pd.weights_desc(), pd.weights_desc());
    }
    if (spec.bias && !same_layout(user_bias, pd.bias_desc())) {
      add(bias, user_bias, pd.bias_desc(), pd.bias_desc());
    }
    if (!same_layout(user_dst, pd.dst_desc())) add(dst, pd.dst_desc(), user_dst, pd.dst_desc());
    scratchpad_offset = offset;
    pool.emplace(offset + round_up(scratchpad));
  }
};

}  // namespace

struct ConvolutionPlan::State {
  ConvolutionSpec spec;
  Formats formats = Formats::Any;
  bool library = false;  // false: the output is empty, nothing to compute
  std::string implementation;
  mutable std::mutex mutex;  // guards primitives (created on first use of a thread count)
  mutable std::map<int, std::unique_ptr<Primitive>> primitives;

  // The primitives for `threads`, created on first use; the caller has set the thread count.
  Primitive& primitive(int threads) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = primitives[threads];
    if (!slot) slot = std::make_unique<Primitive>(spec, make_primitive_desc(spec, formats));
    return *slot;
  }
};

namespace {

std::string describe_implementation(const Primitive& p) {
  std::string text = detail::library_version() + " convolution " + p.pd.impl_info_str() + " (" +
                     format_name(p.pd.src_desc());
  if (format_name(p.pd.dst_desc()) != format_name(p.pd.src_desc())) {
    text += " -> " + format_name(p.pd.dst_desc());
  }
  text += ")";
  text += p.src ? ", input reordered from " + format_name(p.user_src) : ", input in place";
  text += p.weights ? ", weights reordered per call" : ", weights in place";
  if (p.bias) text += ", bias copied";
  text += p.dst ? ", output reordered to " + format_name(p.user_dst) : ", output in place";
  return text;
}

}  // namespace

bool ConvolutionPlan::supported(const ConvolutionSpec& spec, std::string* why) {
  Analysis analysis;
  try {
    analysis = analyze(spec, Formats::Automatic);
  } catch (const std::exception& e) {
    analysis.refusal = e.what();
  }
  if (why != nullptr) *why = analysis.refusal;
  return analysis.refusal.empty();
}

std::unique_ptr<ConvolutionPlan> ConvolutionPlan::create(const ConvolutionSpec& spec,
                                                         int num_threads, Formats formats) {
  if (num_threads < 0) {
    throw LibraryError("convolution " + spec.describe() + ": a negative thread count");
  }
  const int threads = detail::resolve_threads(num_threads);
  OmpThreads scope(threads);
  try {
    Analysis analysis = analyze(spec, formats);
    if (!analysis.refusal.empty()) {
      throw LibraryError("convolution " + spec.describe() +
                         ": no library plan: " + analysis.refusal);
    }
    auto state = std::make_unique<State>();
    state->spec = spec;
    state->formats = analysis.formats;
    if (!analysis.pd) {
      state->implementation = "no library call: the output is empty";
    } else {
      state->library = true;
      auto primitive = std::make_unique<Primitive>(spec, std::move(*analysis.pd));
      state->implementation = describe_implementation(*primitive);
      state->primitives[threads] = std::move(primitive);
    }
    return std::unique_ptr<ConvolutionPlan>(new ConvolutionPlan(std::move(state)));
  } catch (const dnnl::error& e) {
    throw LibraryError("convolution " + spec.describe() + ": oneDNN failed: " + e.what());
  } catch (const std::bad_alloc&) {
    throw LibraryError("convolution " + spec.describe() + ": out of memory building the plan");
  }
}

ConvolutionPlan::ConvolutionPlan(std::unique_ptr<State> state) : state_(std::move(state)) {}
ConvolutionPlan::~ConvolutionPlan() = default;

const ConvolutionSpec& ConvolutionPlan::spec() const {
  return state_->spec;
}
std::string ConvolutionPlan::implementation() const {
  return state_->implementation;
}

void ConvolutionPlan::run(const void* input, const void* weight, const void* bias, void* output,
                          int num_threads) const {
  const State& s = *state_;
  const ConvolutionSpec& spec = s.spec;
  if (num_threads < 0) {
    throw LibraryError("convolution " + spec.describe() + ": run() with a negative thread count");
  }
  if (!s.library) return;
  if (input == nullptr || weight == nullptr || output == nullptr ||
      (spec.bias && bias == nullptr)) {
    throw LibraryError("convolution " + spec.describe() + ": run() with a null buffer");
  }
  const int threads = detail::resolve_threads(num_threads);
  OmpThreads scope(threads);
  try {
    Primitive& p = s.primitive(threads);
    Buffer workspace = p.pool->take();
    char* base = static_cast<char*>(workspace.get());
    dnnl::stream& stream = thread_stream();
    const memory scratchpad(p.pd.scratchpad_desc(), cpu_engine(), base + p.scratchpad_offset);
    // The operand the convolution reads or writes: the caller's buffer, or a temporary in the
    // primitive's format. oneDNN takes non-const handles; it writes only DST, TO and the
    // scratchpad.
    auto operand = [&](const std::optional<Reorder>& reorder, const memory::desc& chosen,
                       const void* data) {
      if (!reorder) return memory(chosen, cpu_engine(), const_cast<void*>(data));
      return memory(chosen, cpu_engine(), base + reorder->temporary_offset);
    };
    auto reorder_in = [&](const std::optional<Reorder>& reorder, const memory::desc& user,
                          const void* data, const memory& temporary) {
      if (!reorder) return;
      reorder->primitive.execute(
          stream, {{DNNL_ARG_FROM, memory(user, cpu_engine(), const_cast<void*>(data))},
                   {DNNL_ARG_TO, temporary},
                   {DNNL_ARG_SCRATCHPAD, scratchpad}});
    };
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, operand(p.src, p.pd.src_desc(), input)},
        {DNNL_ARG_WEIGHTS, operand(p.weights, p.pd.weights_desc(), weight)},
        {DNNL_ARG_DST, operand(p.dst, p.pd.dst_desc(), output)},
        {DNNL_ARG_SCRATCHPAD, scratchpad}};
    reorder_in(p.src, p.user_src, input, args.at(DNNL_ARG_SRC));
    reorder_in(p.weights, p.user_weights, weight, args.at(DNNL_ARG_WEIGHTS));
    if (spec.bias) {
      args.emplace(DNNL_ARG_BIAS, operand(p.bias, p.pd.bias_desc(), bias));
      reorder_in(p.bias, p.user_bias, bias, args.at(DNNL_ARG_BIAS));
    }
    p.convolution.execute(stream, args);
    if (p.dst) {
      p.dst->primitive.execute(stream, {{DNNL_ARG_FROM, args.at(DNNL_ARG_DST)},
                                        {DNNL_ARG_TO, memory(p.user_dst, cpu_engine(), output)},
                                        {DNNL_ARG_SCRATCHPAD, scratchpad}});
    }
    stream.wait();
    p.pool->give(std::move(workspace));
  } catch (const dnnl::error& e) {
    throw LibraryError("convolution " + spec.describe() + ": oneDNN failed: " + e.what());
  } catch (const std::bad_alloc&) {
    throw LibraryError("convolution " + spec.describe() + ": out of memory for the workspace");
  }
}

}  // namespace stax::external
