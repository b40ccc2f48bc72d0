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
// On a CPU with AMX (measured on an Intel Xeon with AMX-BF16, bench/conv/RESULTS.md) the
// rule turns over: oneDNN 2.6 runs AMX tiles only in its brgconv / jit_amx kernels, which read
// nhwc, while nChw16c gets its AVX-512 kernels (bfloat16: about 220 GFLOP/s against 1500-3000
// for AMX on ResNet-18's 3x3 layers, 2 threads). nhwc with NCHW activations reordered in and
// out beats both blocked and eager's (which reorders the same way): ResNet-18's bfloat16
// convolutions summed, NCHW at batch 2, take 0.79 of torch's time against 2.93 with nChw16c,
// and every backward pass gets faster (bfloat16 grad_input 2.2-4.1x -> 0.80-0.90x torch's,
// grad_weight 1.9-3.5x -> 0.68-1.24x). So where oneDNN's kernel for `any` is an AMX one (its
// own report, impl_info_str), Automatic asks for `any` (nhwc), a channels-last caller's layout
// in place. float32 gets no AMX kernel: the rule below holds for it.
// Otherwise Automatic asks for nChw16c, except for a channels-last input whose output has more
// than 64 positions (batch x spatial), which gets nhwc; where oneDNN refuses that format or has
// only its reference kernel for it (groups of few channels, padding wider than the kernel, ...)
// it tries the others (candidates()). The same rule serves 1-D and 3-D, unmeasured.
// On a CPU without AVX-512 (an AVX2-only AMD Zen 2) oneDNN's blocked kernels block by 8
// channels, and nChw16c gets only its reference kernel: "blocked" is the library's own block
// on the CPU (blocked_channels(), asked of oneDNN). The rule is unmeasured there.
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
//
// The backward passes (convolution_backward.cpp) are the same plan around another primitive:
// each pass names its operands (Operand: which run() buffer, which primitive argument), and
// everything here -- formats, reorders, workspaces, threads, empty operands -- serves all
// three.
#include "external/convolution.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "external/convolution_internal.h"
#include "external/convolution_primitive.h"
#include "external/dnnl_common.h"
#include "external/spec_check.h"

namespace stax::external {

namespace detail {

using dnnl::memory;
using Formats = ConvolutionPlan::Formats;
using Tag = memory::format_tag;

namespace {

Tag channels_last_tag(int spatial) {
  return spatial == 1 ? Tag::nwc : spatial == 2 ? Tag::nhwc : Tag::ndhwc;
}
Tag plain_tag(int spatial) {
  return spatial == 1 ? Tag::ncw : spatial == 2 ? Tag::nchw : Tag::ncdhw;
}
Tag blocked_tag(int spatial, int64_t block) {
  if (block == 8) return spatial == 1 ? Tag::nCw8c : spatial == 2 ? Tag::nChw8c : Tag::nCdhw8c;
  return spatial == 1 ? Tag::nCw16c : spatial == 2 ? Tag::nChw16c : Tag::nCdhw16c;
}

// The channel block of oneDNN's blocked-format kernels on this CPU: asked of oneDNN once (a
// float32 3x3 convolution of 32 channels in nChw16c, then nChw8c; the first it runs with an
// optimized kernel). Its AVX-512 kernels block by 16 channels, its AVX2 ones by 8 (a Zen 2:
// nChw16c gets only its reference kernel there).
int64_t probe_channel_block() {
  for (const int64_t block : {16, 8}) {
    try {
      const memory::desc activation({1, 32, 8, 8}, memory::data_type::f32, blocked_tag(2, block));
      const memory::desc weights({32, 32, 3, 3}, memory::data_type::f32, Tag::any);
      using Conv = dnnl::convolution_forward;
      const Conv::primitive_desc pd(
          Conv::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                     activation, weights, activation, {1, 1}, {1, 1}, {1, 1}),
          cpu_engine());
      if (!is_reference(pd.impl_info_str())) return block;
    } catch (const dnnl::error&) {
      // not this block: the next
    }
  }
  return 0;
}

}  // namespace

int64_t blocked_channels() {
  static const int64_t block = probe_channel_block();
  return block;
}

// Strides of size-1 dimensions are not used to address anything, but oneDNN checks strides
// for overlap: they get the outermost stride.
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

// The group dimension splits C_out.
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

// oneDNN's blocked kernels read a src of fewer channels than their block (a stem's) plain, not
// blocked. Without a blocked kernel on this CPU (blocked_channels() 0), Blocked asks for 16
// channels, which oneDNN then refuses or gives only its reference kernel.
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
    case Formats::Blocked: {
      const int64_t block = blocked_channels() > 0 ? blocked_channels() : 16;
      return memory::desc(
          dims, dt, is_src && dims[1] < block ? plain_tag(spatial) : blocked_tag(spatial, block));
    }
    case Formats::Caller:
      return user;
  }
  return user;
}

LibraryWindow library_window(const ConvolutionSpec& spec) {
  LibraryWindow w;
  w.strides.assign(spec.stride.begin(), spec.stride.end());
  for (int i = 0; i < spec.spatial_dims(); ++i) {
    // oneDNN counts dilation as the gaps between kernel elements (0 is dense).
    w.dilation.push_back(spec.dilation[i] - 1);
    w.padding_l.push_back(spec.padding[i]);
    // The right padding that makes oneDNN's output size exactly the spec's (less than the
    // left one where the stride does not divide the padded input: eager never reads those
    // last elements).
    const int64_t span = spec.dilation[i] * (spec.weight.sizes[2 + i] - 1) + 1;
    w.padding_r.push_back((spec.output.sizes[2 + i] - 1) * spec.stride[i] + span -
                          spec.input.sizes[2 + i] - spec.padding[i]);
  }
  return w;
}

dnnl::convolution_forward::primitive_desc forward_primitive_desc(const ConvolutionSpec& spec,
                                                                 Formats formats,
                                                                 dnnl::prop_kind prop,
                                                                 bool with_bias) {
  const memory::data_type dt = *library_dtype(spec.dtype);
  const int spatial = spec.spatial_dims();
  const memory::desc src = activation_request(
      formats, strided_desc(spec.input.sizes, spec.input.strides, dt), spatial, true);
  const memory::desc dst = activation_request(
      formats, strided_desc(spec.output.sizes, spec.output.strides, dt), spatial, false);
  const memory::desc weights(library_weight_sizes(spec), dt, Tag::any);
  const LibraryWindow w = library_window(spec);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  using Conv = dnnl::convolution_forward;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  if (with_bias) {
    const memory::desc bias({spec.bias->sizes[0]}, dt, Tag::a);
    return Conv::primitive_desc(Conv::desc(prop, algorithm, src, weights, bias, dst, w.strides,
                                           w.dilation, w.padding_l, w.padding_r),
                                attr, cpu_engine());
  }
  return Conv::primitive_desc(Conv::desc(prop, algorithm, src, weights, dst, w.strides, w.dilation,
                                         w.padding_l, w.padding_r),
                              attr, cpu_engine());
}

dnnl::primitive_desc make_primitive_desc(const ConvolutionSpec& spec, Formats formats) {
  if (spec.pass != ConvolutionPass::Forward) return backward_primitive_desc(spec, formats);
  return forward_primitive_desc(spec, formats, dnnl::prop_kind::forward_inference,
                                spec.bias.has_value());
}

}  // namespace detail

namespace {

using detail::Buffer;
using detail::cpu_engine;
using detail::make_primitive_desc;
using detail::OmpThreads;
using detail::Operand;
using detail::Primitive;
using detail::read_weights;
using detail::strided_desc;
using detail::takes_packed;
using detail::thread_stream;
using dnnl::memory;
using Formats = ConvolutionPlan::Formats;

const char* pass_name(ConvolutionPass pass) {
  switch (pass) {
    case ConvolutionPass::Forward:
      return "forward";
    case ConvolutionPass::BackwardData:
      return "backward-data";
    case ConvolutionPass::BackwardWeights:
      return "backward-weights";
  }
  return "";
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

// The smallest well-formed convolution of a dtype, to ask oneDNN whether it has any.
ConvolutionSpec probe_spec(DType dtype, ConvolutionPass pass) {
  ConvolutionSpec probe;
  probe.dtype = dtype;
  probe.pass = pass;
  probe.input = TensorLayout::contiguous({1, 1, 2, 2});
  probe.weight = TensorLayout::contiguous({1, 1, 1, 1});
  probe.output = TensorLayout::contiguous({1, 1, 2, 2});
  probe.stride = probe.dilation = {1, 1};
  probe.padding = {0, 0};
  return probe;
}

// Whether oneDNN convolves this dtype at all in this pass on this CPU: asked once per pair.
std::string dtype_refusal(DType dtype, ConvolutionPass pass) {
  static detail::ProbeAnswers<std::pair<DType, ConvolutionPass>> answers;
  return answers.get({dtype, pass}, [dtype, pass]() -> std::string {
    const std::string what =
        std::string(dtype_name(dtype)) + " convolution" +
        (pass == ConvolutionPass::Forward ? "" : " " + std::string(pass_name(pass)));
    if (!detail::library_dtype(dtype)) {
      return "oneDNN has no " + what + " (a Stax loop nest computes it)";
    }
    try {
      make_primitive_desc(probe_spec(dtype, pass), Formats::Any);
    } catch (const dnnl::error& e) {
      return detail::library_version() + " has no " + what + " on this CPU (" + e.what() + ")";
    }
    return "";
  });
}

bool empty(const TensorLayout& layout) {
  return std::find(layout.sizes.begin(), layout.sizes.end(), 0) != layout.sizes.end();
}

// Every pass reads two of input, weight and output and writes the third: no library call when
// any is empty (a forward output is then empty too; a backward result need not be).
bool empty_operand(const ConvolutionSpec& spec) {
  return empty(spec.input) || empty(spec.weight) || empty(spec.output);
}

const char* formats_name(Formats formats) {
  switch (formats) {
    case Formats::Automatic:
      return "automatic";
    case Formats::Any:
      return "oneDNN's choice (any)";
    case Formats::ChannelsLast:
      return "channels-last";
    case Formats::Blocked:
      return detail::blocked_channels() == 8 ? "blocked (8 channels)" : "blocked (16 channels)";
    case Formats::Caller:
      return "the caller's layout";
  }
  return "";
}

// What Automatic asks for, in order, and why: the measured choice first (top of this file),
// then the others where oneDNN refuses it or has only its reference kernel (the blocked
// kernels take no group of fewer than 16 channels, for one). `matrix_engine`: oneDNN's kernel
// for its own choice of formats runs on AMX tiles.
struct Candidates {
  std::vector<Formats> order;
  std::string reason;  // why the first
};

Candidates candidates(const ConvolutionSpec& spec, Formats formats, bool matrix_engine) {
  if (formats != Formats::Automatic) return {{formats}, "asked for by the caller"};
  const bool channels_last = spec.input.is_channels_last() && !spec.input.is_contiguous();
  const int64_t channels_per_group = spec.weight.sizes[1];
  if (matrix_engine && spec.pass == ConvolutionPass::BackwardWeights && channels_per_group < 16) {
    return {{Formats::Caller, Formats::Blocked, Formats::ChannelsLast, Formats::Any},
            "the AMX backward-weights kernel on fewer than 16 input channels per group is slow: "
            "ViT's patch embedding (3 channels, 16x16 stride 16), bfloat16, 11 ms standalone and "
            "137-358 ms inside a training step, against 1.1 ms for oneDNN's GEMM-based kernel on "
            "the caller's layouts and 5.1 ms for eager (bench/conv/RESULTS.md, Xeon with AMX)"};
  }
  if (matrix_engine) {
    return {channels_last ? std::vector{Formats::ChannelsLast, Formats::Any, Formats::Blocked}
                          : std::vector{Formats::Any, Formats::ChannelsLast, Formats::Blocked},
            "oneDNN's kernel for its own formats runs on the CPU's AMX tiles, its blocked-format "
            "kernels do not (bfloat16 ResNet-18 layers measured 1.5-12x slower there; reorders "
            "included, channels-last wins: bench/conv/RESULTS.md, Xeon with AMX)"};
  }
  int64_t positions = spec.output.sizes[0];  // output positions: batch times spatial
  for (size_t d = 2; d < spec.output.sizes.size(); ++d) positions *= spec.output.sizes[d];
  if (channels_last && positions > 64) {
    return {{Formats::ChannelsLast, Formats::Any, Formats::Blocked},
            "a channels-last caller's layout in place: measured fastest for outputs of more than "
            "64 positions without AMX (bench/conv/RESULTS.md)"};
  }
  return {{Formats::Blocked, Formats::ChannelsLast, Formats::Any},
          "measured fastest without AMX for NCHW callers and small outputs, reorders included "
          "(bench/conv/RESULTS.md)"};
}

// The formats a spec's plan asks for and its primitive descriptor (for the current OpenMP
// thread count), or why there is no plan. No descriptor when an operand is empty.
struct Analysis {
  Formats formats = Formats::Any;
  std::optional<dnnl::primitive_desc> pd;
  std::string reason;   // why these formats (for explain)
  std::string refusal;  // empty when there is a plan
  Arithmetic arithmetic = Arithmetic::Native;
  std::string through_float32;  // ThroughFloat32: why, for implementation() and explain
};

// How oneDNN convolves `dtype` in `pass` on this CPU: natively, or for bfloat16 through its
// float32 kernels where it has none for bfloat16 (arithmetic.h); nullopt, with `why`, where
// neither.
std::optional<Arithmetic> dtype_arithmetic(DType dtype, ConvolutionPass pass, std::string* why) {
  return arithmetic_for(dtype, [pass](DType d) { return dtype_refusal(d, pass); }, why);
}

// The spec oneDNN's primitive computes: the plan's own, or its float32 twin of the same
// layouts for a plan through float32 (the reorders between the caller's layouts and the
// primitive's formats then also convert the dtype).
ConvolutionSpec library_spec(const ConvolutionSpec& spec, Arithmetic arithmetic) {
  ConvolutionSpec lib = spec;
  if (arithmetic == Arithmetic::ThroughFloat32) lib.dtype = DType::Float32;
  return lib;
}

Analysis analyze(const ConvolutionSpec& spec, Formats formats) {
  Analysis result;
  if (std::string error = spec.error(); !error.empty()) {
    result.refusal = "malformed convolution " + spec.describe() + ": " + error;
    return result;
  }
  std::string native_refusal;
  const std::optional<Arithmetic> arithmetic =
      dtype_arithmetic(spec.dtype, spec.pass, &native_refusal);
  if (!arithmetic) {
    result.refusal = native_refusal;
    return result;
  }
  result.arithmetic = *arithmetic;
  if (empty_operand(spec)) return result;
  // Before any question to oneDNN, which may divide by zero on these sizes (spec_check.h).
  if (std::string refusal = detail::library_size_refusal(spec); !refusal.empty()) {
    result.refusal = refusal;
    return result;
  }
  if (result.arithmetic == Arithmetic::ThroughFloat32) {
    result.through_float32 = "bf16 through float32 (" + native_refusal +
                             "): the reorders convert the operands to float32 exactly and the "
                             "result to bf16, rounded once; ";
  }
  // What oneDNN is asked about: the spec, or its float32 twin of the same layouts.
  const ConvolutionSpec lib = library_spec(spec, result.arithmetic);
  const std::string what =
      spec.pass == ConvolutionPass::Forward
          ? "this convolution"
          : std::string("this convolution's ") + pass_name(spec.pass) + " pass";
  // oneDNN's own choice first, where Automatic asks which kernel it gets.
  std::optional<dnnl::primitive_desc> preferred;
  if (formats == Formats::Automatic) {
    try {
      preferred = make_primitive_desc(lib, Formats::Any);
    } catch (const dnnl::error&) {
      // No kernel for oneDNN's own choice: the candidates below say why.
    }
  }
  const bool matrix_engine = preferred && detail::uses_matrix_engine(preferred->impl_info_str()) &&
                             detail::known_library_defect(lib, *preferred).empty();
  const Candidates order = candidates(lib, formats, matrix_engine);
  std::string errors;
  for (Formats candidate : order.order) {
    try {
      auto pd =
          candidate == Formats::Any && preferred ? *preferred : make_primitive_desc(lib, candidate);
      if (std::string defect = detail::known_library_defect(lib, pd); !defect.empty()) {
        if (errors.empty()) errors = defect;
        continue;
      }
      if (!detail::is_reference(pd.impl_info_str())) {
        result.formats = candidate;
        result.reason =
            std::string(formats_name(candidate)) + ", kernel " + pd.impl_info_str() + ": ";
        result.reason += errors.empty() ? order.reason
                                        : std::string(formats_name(order.order.front())) +
                                              " refused (" + errors + ")";
        result.pd = std::move(pd);
        return result;
      }
      errors = "oneDNN has only its reference (unoptimized) kernel for " + what + " on this CPU";
    } catch (const dnnl::error& e) {
      if (errors.empty()) errors = "oneDNN refuses " + what + " (" + e.what() + ")";
    }
  }
  result.refusal =
      (result.arithmetic == Arithmetic::ThroughFloat32 ? "through float32: " : "") + errors;
  return result;
}

// The operands of a spec's pass, in run()'s order (ConvolutionPlan::run).
std::vector<Operand> pass_operands(const ConvolutionSpec& spec, const dnnl::primitive_desc& pd) {
  const memory::data_type dt = *detail::library_dtype(spec.dtype);
  const memory::desc input = strided_desc(spec.input.sizes, spec.input.strides, dt);
  const memory::desc output = strided_desc(spec.output.sizes, spec.output.strides, dt);
  const memory::desc weight = detail::user_weight_desc(spec, dt);
  using K = Operand::Kind;
  std::vector<Operand> ops;
  auto add = [&](Operand::Slot slot, int arg, const char* name, K kind, const memory::desc& user,
                 const memory::desc& chosen) {
    ops.push_back(Operand{slot, arg, name, kind, user, chosen, std::nullopt});
  };
  switch (spec.pass) {
    case ConvolutionPass::Forward:
      add(Operand::A, DNNL_ARG_SRC, "input", K::Activation, input, pd.src_desc());
      add(Operand::B, DNNL_ARG_WEIGHTS, "weights", K::Weights, weight, pd.weights_desc());
      if (spec.bias) {
        // The bias is the forward primitive's second weights operand.
        add(Operand::Bias, DNNL_ARG_BIAS, "bias", K::Bias,
            strided_desc(spec.bias->sizes, spec.bias->strides, dt), pd.weights_desc(1));
      }
      add(Operand::Result, DNNL_ARG_DST, "output", K::Activation, output, pd.dst_desc());
      break;
    case ConvolutionPass::BackwardData:
      add(Operand::A, DNNL_ARG_DIFF_DST, "grad_output", K::Activation, output, pd.diff_dst_desc());
      add(Operand::B, DNNL_ARG_WEIGHTS, "weights", K::Weights, weight, pd.weights_desc());
      add(Operand::Result, DNNL_ARG_DIFF_SRC, "grad_input", K::Activation, input,
          pd.diff_src_desc());
      break;
    case ConvolutionPass::BackwardWeights:
      add(Operand::A, DNNL_ARG_DIFF_DST, "grad_output", K::Activation, output, pd.diff_dst_desc());
      add(Operand::B, DNNL_ARG_SRC, "input", K::Activation, input, pd.src_desc());
      add(Operand::Result, DNNL_ARG_DIFF_WEIGHTS, "grad_weight", K::Weights, weight,
          pd.diff_weights_desc());
      break;
  }
  return ops;
}

}  // namespace

namespace detail {

Primitive::Primitive(const ConvolutionSpec& spec, dnnl::primitive_desc desc)
    : pd(std::move(desc)), primitive(pd), operands(pass_operands(spec, pd)) {
  size_t offset = 0;
  size_t scratchpad = pd.scratchpad_desc().get_size();
  for (Operand& op : operands) {
    if (same_layout(op.user, op.chosen)) continue;
    if (op.slot == Operand::Result) {
      op.reorder.emplace(op.chosen, op.user);
    } else {
      op.reorder.emplace(op.user, op.chosen);
    }
    op.reorder->temporary_offset = offset;
    offset += round_up(op.chosen.get_size());
    scratchpad = std::max(scratchpad, op.reorder->pd.scratchpad_desc().get_size());
  }
  scratchpad_offset = offset;
  pool.emplace(offset + round_up(scratchpad));
}

}  // namespace detail

detail::Primitive& ConvolutionPlan::State::primitive(int threads) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = primitives[threads];
  if (!slot) {
    dnnl::primitive_desc pd = detail::make_primitive_desc(library_spec, formats);
    // create() checked its own thread count's kernel; another count could pick another.
    if (std::string defect = detail::known_library_defect(library_spec, pd); !defect.empty()) {
      throw LibraryError("convolution " + spec.describe() + ": " + defect);
    }
    slot = std::make_unique<detail::Primitive>(spec, std::move(pd));
  }
  return *slot;
}

namespace {

// `frozen`: as runs given packed weights (takes_packed) read them.
std::string describe_implementation(const ConvolutionSpec& spec, const Primitive& p, bool frozen) {
  std::string text = detail::library_version() + " convolution ";
  if (spec.pass != ConvolutionPass::Forward) text += std::string(pass_name(spec.pass)) + " ";
  const std::string src = format_name(p.chosen(true)), dst = format_name(p.chosen(false));
  text += std::string(p.pd.impl_info_str()) + " (" + src;
  if (dst != src) text += " -> " + dst;
  text += ")";
  for (const Operand& op : p.operands) {
    const std::string name = op.name;
    switch (op.kind) {
      case Operand::Kind::Activation:
        if (!op.reorder) {
          text += ", " + name + " in place";
        } else {
          text += ", " + name +
                  (op.slot == Operand::Result ? " reordered to " : " reordered from ") +
                  format_name(op.user);
        }
        break;
      case Operand::Kind::Weights:
        if (!op.reorder) {
          text += ", " + name + " in place";
        } else {
          text += ", " + name +
                  (frozen && op.slot != Operand::Result ? " packed once (frozen)"
                                                        : " reordered per call");
        }
        break;
      case Operand::Kind::Bias:
        if (op.reorder) text += ", bias copied";
        break;
    }
  }
  return text;
}

// implementation() of a plan without a library call.
std::string describe_no_call(const ConvolutionSpec& spec) {
  const char* result = spec.pass == ConvolutionPass::Forward        ? "the output"
                       : spec.pass == ConvolutionPass::BackwardData ? "grad_input"
                                                                    : "grad_weight";
  if (empty(spec.result())) return std::string("no library call: ") + result + " is empty";
  // A backward pass whose read operands are empty: the gradient's sum has no terms.
  const bool data = spec.pass == ConvolutionPass::BackwardData;
  const bool first = empty(spec.output), second = empty(data ? spec.weight : spec.input);
  const char* second_name = data ? "weight" : "input";
  std::string empties = first && second ? std::string("grad_output and ") + second_name + " are"
                        : first         ? std::string("grad_output is")
                                        : std::string(second_name) + " is";
  return std::string("no library call: ") + result + " is zeros (" + empties + " empty)";
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

bool ConvolutionPlan::runs_channels_last_in_place(const ConvolutionSpec& spec,
                                                  std::string* reason) {
  ConvolutionSpec laid = spec;
  laid.input = TensorLayout::channels_last(spec.input.sizes);
  laid.output = TensorLayout::channels_last(spec.output.sizes);
  Analysis analysis;
  try {
    analysis = analyze(laid, Formats::Automatic);
  } catch (const std::exception&) {
    return false;
  }
  // Through float32 the reorders convert every operand: none is read in place.
  if (!analysis.refusal.empty() || !analysis.pd || analysis.formats != Formats::ChannelsLast ||
      analysis.arithmetic == Arithmetic::ThroughFloat32) {
    return false;
  }
  // "channels-last, kernel brgconv:...": the why after it is the plan's own (explain shows it).
  if (reason != nullptr) *reason = analysis.reason.substr(0, analysis.reason.find(": "));
  return true;
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
    state->library_spec = library_spec(spec, analysis.arithmetic);
    state->arithmetic = analysis.pd ? analysis.arithmetic : Arithmetic::Native;
    state->threads = threads;
    state->formats = analysis.formats;
    state->formats_reason = analysis.through_float32 + analysis.reason;
    if (!analysis.pd) {
      state->implementation = describe_no_call(spec);
      state->zero_result = !empty(spec.result());
    } else {
      state->library = true;
      auto primitive = std::make_unique<Primitive>(spec, std::move(*analysis.pd));
      state->implementation =
          analysis.through_float32 + describe_implementation(spec, *primitive, false);
      state->implementation_frozen =
          analysis.through_float32 + describe_implementation(spec, *primitive, true);
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
int64_t ConvolutionPlan::blocked_channels() {
  return detail::blocked_channels();
}
std::optional<Arithmetic> ConvolutionPlan::arithmetic(DType dtype, ConvolutionPass pass,
                                                      std::string* why) {
  return dtype_arithmetic(dtype, pass, why);
}
Arithmetic ConvolutionPlan::arithmetic() const {
  return state_->arithmetic;
}
std::string ConvolutionPlan::implementation() const {
  return state_->implementation;
}
std::string ConvolutionPlan::formats_reason() const {
  return state_->formats_reason;
}

std::string ConvolutionPlan::automatic_formats(const ConvolutionSpec& spec, int num_threads) {
  OmpThreads scope(detail::resolve_threads(num_threads));
  try {
    Analysis analysis = analyze(spec, Formats::Automatic);
    if (!analysis.refusal.empty()) return "no library plan: " + analysis.refusal;
    if (!analysis.pd) return describe_no_call(spec);
    return analysis.through_float32 + analysis.reason;
  } catch (const dnnl::error& e) {
    return std::string("oneDNN failed: ") + e.what();
  }
}

void ConvolutionPlan::run(const void* a, const void* b, const void* bias, void* result,
                          int num_threads, const PackedWeights* packed) const {
  const State& s = *state_;
  const ConvolutionSpec& spec = s.spec;
  if (num_threads < 0) {
    throw LibraryError("convolution " + spec.describe() + ": run() with a negative thread count");
  }
  if (!s.library) {
    if (!s.zero_result) return;
    if (result == nullptr) {
      throw LibraryError("convolution " + spec.describe() + ": run() with a null result");
    }
    detail::write_zeros(spec.result(), spec.dtype, result);
    return;
  }
  const void* const buffers[] = {a, b, bias, result};  // by Operand::Slot
  const int threads = detail::resolve_threads(num_threads);
  OmpThreads scope(threads);
  try {
    Primitive& p = s.primitive(threads);
    for (const Operand& op : p.operands) {
      if (buffers[op.slot] == nullptr) {
        throw LibraryError("convolution " + spec.describe() + ": run() with a null " + op.name);
      }
    }
    Buffer workspace = p.pool->take();
    char* base = static_cast<char*>(workspace.get());
    dnnl::stream& stream = thread_stream();
    const memory scratchpad(p.pd.scratchpad_desc(), cpu_engine(), base + p.scratchpad_offset);
    // Each operand as the primitive takes it: the caller's buffer, or a temporary in the
    // primitive's format, reordered into before the call (read operands) or out of after it
    // (the result). oneDNN takes non-const handles; it writes only DST / DIFF_*, TO and the
    // scratchpad.
    std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, scratchpad}};
    const bool frozen = takes_packed(p, packed, b);
    for (const Operand& op : p.operands) {
      void* data = const_cast<void*>(buffers[op.slot]);
      if (frozen && &op == read_weights(p)) {
        args.emplace(op.arg, memory(op.chosen, cpu_engine(), packed->contents().data.get()));
        continue;
      }
      if (!op.reorder) {
        args.emplace(op.arg, memory(op.chosen, cpu_engine(), data));
        continue;
      }
      const memory temporary(op.chosen, cpu_engine(), base + op.reorder->temporary_offset);
      args.emplace(op.arg, temporary);
      if (op.slot != Operand::Result) {
        op.reorder->primitive.execute(stream, {{DNNL_ARG_FROM, memory(op.user, cpu_engine(), data)},
                                               {DNNL_ARG_TO, temporary},
                                               {DNNL_ARG_SCRATCHPAD, scratchpad}});
      }
    }
    p.primitive.execute(stream, args);
    const Operand& out = p.operands.back();
    if (out.reorder) {
      out.reorder->primitive.execute(stream, {{DNNL_ARG_FROM, args.at(out.arg)},
                                              {DNNL_ARG_TO, memory(out.user, cpu_engine(), result)},
                                              {DNNL_ARG_SCRATCHPAD, scratchpad}});
    }
    stream.wait();
    workspace.reset();  // back to the pool before the next run needs it
  } catch (const dnnl::error& e) {
    throw LibraryError("convolution " + spec.describe() + ": oneDNN failed: " + e.what());
  } catch (const std::bad_alloc&) {
    throw LibraryError("convolution " + spec.describe() + ": out of memory for the workspace");
  }
}

}  // namespace stax::external
