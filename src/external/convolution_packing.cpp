// Packed weights (convolution.h: PackedWeights, ConvolutionPlan::pack_weights): a plan's
// weights reordered once into the format its primitive reads, so that runs whose caller
// promises the weights did not change (torch.compile's freeze_parameters,
// docs/freeze_parameters.md) skip the per-call weight reorder. On AMX the bfloat16 kernels read
// a VNNI-blocked format, and that reorder costs as much as the convolution on ResNet-18's
// deepest layers (bench/conv/RESULTS.md).
//
// A packed copy is tied to the weights descriptor it was made for, not to a thread count:
// oneDNN may pick another kernel, hence another format, for another thread count, and run()
// takes the copy only where the primitive of the run's count reads that very format (else it
// reorders as without one). It is tied to its source pointer too, so that a copy handed to a
// call with other weights is never read.
#include <algorithm>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>

#include "external/convolution.h"
#include "external/convolution_primitive.h"
#include "external/dnnl_common.h"

namespace stax::external {

namespace detail {

bool takes_packed(const Primitive& p, const PackedWeights* packed, const void* b) {
  if (packed == nullptr || packed->source() != b) return false;
  const Operand* weights = read_weights(p);
  return weights != nullptr && weights->reorder && packed->contents().format == weights->chosen;
}

}  // namespace detail

namespace {

using detail::Buffer;
using detail::cpu_engine;
using detail::OmpThreads;
using detail::Operand;
using detail::Primitive;
using detail::read_weights;
using detail::takes_packed;
using detail::thread_stream;
using dnnl::memory;

}  // namespace

PackedWeights::PackedWeights(const void* source, std::unique_ptr<Contents> contents)
    : source_(source), contents_(std::move(contents)) {}
PackedWeights::~PackedWeights() = default;
size_t PackedWeights::bytes() const {
  return contents_->format.get_size();
}

std::string ConvolutionPlan::implementation(const PackedWeights* packed) const {
  return packed != nullptr && takes(*packed, state_->threads) ? state_->implementation_frozen
                                                              : state_->implementation;
}

std::shared_ptr<const PackedWeights> ConvolutionPlan::pack_weights(const void* weight,
                                                                   int num_threads) const {
  const State& s = *state_;
  const ConvolutionSpec& spec = s.spec;
  if (spec.pass == ConvolutionPass::BackwardWeights) {
    throw LibraryError("convolution " + spec.describe() +
                       ": pack_weights() on a pass that writes the weights");
  }
  if (num_threads < 0 || weight == nullptr) {
    throw LibraryError("convolution " + spec.describe() +
                       ": pack_weights() with a null weight or a negative thread count");
  }
  if (!s.library) return nullptr;
  OmpThreads scope(detail::resolve_threads(num_threads));
  try {
    const Primitive& p = s.primitive(detail::resolve_threads(num_threads));
    const Operand* op = read_weights(p);
    if (op == nullptr || !op->reorder) return nullptr;
    auto contents = std::make_unique<PackedWeights::Contents>();
    contents->format = op->chosen;
    contents->data = detail::allocate(Primitive::round_up(op->chosen.get_size()));
    Buffer scratch = detail::allocate(
        Primitive::round_up(std::max<size_t>(op->reorder->pd.scratchpad_desc().get_size(), 1)));
    dnnl::stream& stream = thread_stream();
    op->reorder->primitive.execute(
        stream, {{DNNL_ARG_FROM, memory(op->user, cpu_engine(), const_cast<void*>(weight))},
                 {DNNL_ARG_TO, memory(op->chosen, cpu_engine(), contents->data.get())},
                 {DNNL_ARG_SCRATCHPAD,
                  memory(op->reorder->pd.scratchpad_desc(), cpu_engine(), scratch.get())}});
    stream.wait();
    return std::make_shared<const PackedWeights>(weight, std::move(contents));
  } catch (const dnnl::error& e) {
    throw LibraryError("convolution " + spec.describe() + ": oneDNN failed: " + e.what());
  } catch (const std::bad_alloc&) {
    throw LibraryError("convolution " + spec.describe() + ": out of memory packing the weights");
  }
}

bool ConvolutionPlan::takes(const PackedWeights& packed, int num_threads) const {
  if (!state_->library || num_threads < 0) return false;
  const int threads = detail::resolve_threads(num_threads);
  OmpThreads scope(threads);
  return takes_packed(state_->primitive(threads), &packed, packed.source());
}

}  // namespace stax::external
