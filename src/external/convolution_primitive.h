// What a convolution plan holds (ConvolutionPlan::State): per thread count the primitive of
// its pass, the operands with the reorders between the caller's layouts and the primitive's
// formats, and the workspaces of runs. convolution.cpp builds and runs it;
// convolution_packing.cpp packs a plan's weights once into the primitive's format. Internal to
// src/external.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "external/convolution.h"
#include "external/dnnl_common.h"

namespace stax::external {

namespace detail {

// A reorder of one operand between the caller's layout and the primitive's format.
struct Reorder {
  dnnl::reorder::primitive_desc pd;
  dnnl::reorder primitive;
  size_t temporary_offset = 0;  // of the operand in the primitive's format, in the workspace

  Reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to)
      : pd(make(from, to)), primitive(pd) {}

  static dnnl::reorder::primitive_desc make(const dnnl::memory::desc& from,
                                            const dnnl::memory::desc& to) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return dnnl::reorder::primitive_desc(cpu_engine(), from, cpu_engine(), to, attr);
  }
};

// One operand of a pass: which of run()'s buffers holds it, which argument of the primitive it
// is, the caller's layout, the primitive's format, and the reorder between them (in, or out
// for the result) when they differ.
struct Operand {
  enum Slot { A, B, Bias, Result };
  enum class Kind { Activation, Weights, Bias };
  Slot slot;
  int arg;
  const char* name;
  Kind kind;
  dnnl::memory::desc user, chosen;
  std::optional<Reorder> reorder;
};
// The primitive and reorders of a pass for one thread count, and the workspaces of runs.
struct Primitive {
  dnnl::primitive_desc pd;
  dnnl::primitive primitive;
  std::vector<Operand> operands;
  size_t scratchpad_offset = 0;    // one scratchpad, the largest any of the primitives needs
  std::optional<BufferPool> pool;  // workspaces: temporaries, then the scratchpad

  static size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

  // Builds the primitive and the reorders its operands need (convolution.cpp).
  Primitive(const ConvolutionSpec& spec, dnnl::primitive_desc desc);

  // The format of the input's position (input or grad_input) or the output's.
  dnnl::memory::desc chosen(bool input_position) const {
    for (const Operand& op : operands) {
      const bool src = op.arg == DNNL_ARG_SRC || op.arg == DNNL_ARG_DIFF_SRC;
      const bool dst = op.arg == DNNL_ARG_DST || op.arg == DNNL_ARG_DIFF_DST;
      if (input_position ? src : dst) return op.chosen;
    }
    return {};
  }
};

// The primitive descriptor of a spec's pass (current OpenMP thread count) with the given
// formats (convolution.cpp).
dnnl::primitive_desc make_primitive_desc(const ConvolutionSpec& spec,
                                         ConvolutionPlan::Formats formats);

// The weights operand (Kind::Weights) a pass reads, or null (BackwardWeights writes it).
inline const Operand* read_weights(const Primitive& p) {
  for (const Operand& op : p.operands) {
    if (op.kind == Operand::Kind::Weights && op.slot != Operand::Result) return &op;
  }
  return nullptr;
}

// Whether a run of `p` reads its weights from `packed`: packed from the run's weights `b`, in
// the format p's primitive reads, which it would otherwise reorder `b` into
// (convolution_packing.cpp).
bool takes_packed(const Primitive& p, const PackedWeights* packed, const void* b);

}  // namespace detail

struct PackedWeights::Contents {
  dnnl::memory::desc format;  // the primitive's weights descriptor it was reordered into
  detail::Buffer data;
};

struct ConvolutionPlan::State {
  ConvolutionSpec spec;
  // The spec oneDNN's primitives compute: `spec`, or its float32 twin of the same layouts for
  // a plan through float32 (whose reorders then convert the dtype: arithmetic.h).
  ConvolutionSpec library_spec;
  Arithmetic arithmetic = Arithmetic::Native;
  Formats formats = Formats::Any;
  bool library = false;      // false: an operand is empty, no library call
  bool zero_result = false;  // without a library call: the result is not empty, write zeros
  int threads = 0;           // create()'s thread count
  std::string implementation;
  std::string implementation_frozen;  // with the weights packed (takes_packed)
  std::string formats_reason;
  mutable std::mutex mutex;  // guards primitives (created on first use of a thread count)
  mutable std::map<int, std::unique_ptr<detail::Primitive>> primitives;

  // The primitives for `threads`, created on first use; the caller has set the thread count
  // (convolution.cpp).
  detail::Primitive& primitive(int threads) const;
};

}  // namespace stax::external
