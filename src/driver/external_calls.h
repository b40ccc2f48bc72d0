// The driver's side of external calls (issue 14): which library runs a contraction on this
// machine (lowering asks while it lowers), and the plans a loaded program calls through its
// StaxExternalFn, built once per call site when the program is loaded.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "external/attention.h"
#include "external/convolution.h"
#include "external/matmul.h"
#include "external/scan.h"
#include "external/scatter.h"
#include "graph_passes/graph_passes.h"
#include "lowering/loop_ir.h"
#include "program/host_program.h"
#include "scheduler/fused_node.h"

namespace stax::driver {

// The names the target lists its libraries under: matrix products and convolutions.
inline constexpr const char* kMatmulLibrary = "oneDNN matmul";
inline constexpr const char* kConvolutionLibrary = "oneDNN convolution";

// The library that runs `call` as it is described (dtype, operand layouts), or nullopt with
// `why` saying why not (the contraction or convolution is then a loop nest). When it accepts,
// `why` says how the library computes it where that is worth recording (bfloat16 through
// float32 where it has no bfloat16 kernel on this CPU: external/arithmetic.h), else "".
std::optional<std::string> library_for(const lowering::ExternalCall& call, std::string* why);

// What the target's libraries compute other than natively on this machine, for the target
// description (target.h's library_notes): "oneDNN matmul: bf16 through float32" where oneDNN
// has no bfloat16 matmul, and likewise for convolutions and the runtime attention's products.
std::vector<std::string> library_arithmetic_notes();

// For a forward convolution the library runs: why its output is better stored channels last
// (oneDNN's plan for channels-last operands reads and writes them in place), or nullopt.
std::optional<std::string> channels_last_output_for(const lowering::ExternalCall& call);

// The library's view of a call site: every operand as a batch of strided matrices.
external::MatmulSpec matmul_spec(const lowering::ExternalCall& call,
                                 const std::vector<int64_t>& output_sizes,
                                 const std::vector<int64_t>& output_strides, DType dtype,
                                 const std::vector<scheduler::EpilogueOp>& epilogue);

// The library's view of a convolution call site.
external::ConvolutionSpec convolution_spec(const lowering::ExternalCall& call,
                                           const std::vector<int64_t>& output_sizes,
                                           const std::vector<int64_t>& output_strides, DType dtype);

// The runtime's view of a scatter call site (issue 15, point 4).
external::ScatterSpec scatter_spec(const lowering::ScatterCall& call,
                                   const std::vector<int64_t>& output_sizes,
                                   const std::vector<int64_t>& output_strides, DType dtype);

// The runtime's view of a scan call site (issue 16, point 7).
external::ScanSpec scan_spec(const lowering::ScanCall& call, const program::ExternalSite& site);

// The runtime's view of an attention call site (issue 15, point 1).
external::AttentionSpec attention_spec(const lowering::AttentionCall& call,
                                       const program::ExternalSite& site);

// The runtime attention's blocking of one (batch, head) pair (the graph passes' cost model),
// or nullopt for a dtype it does not run.
std::optional<graph_passes::AttentionBlocking> runtime_attention_blocks(int64_t lq, int64_t lk,
                                                                        int64_t e, int64_t ev,
                                                                        DType dtype);

// Whether the library applies `epilogue` to `call`'s results as eager computes it (the
// scheduler's EpilogueCheck); `why` says why not.
bool library_runs_epilogue(const lowering::ExternalCall& call,
                           const std::vector<scheduler::EpilogueOp>& epilogue, std::string* why);

// The plans of one loaded program, by site index.
class ExternalPlans {
 public:
  // Builds every site's plan; throws external::LibraryError naming the site's graph node.
  // `num_threads`: the count the program was compiled for (a run with another builds one
  // more primitive on first use).
  // `measurement_dir`: where matmul plans keep what they measure (MatmulPlan::create).
  // `symbols`: the program's size symbols, in the order the wrapper passes their values
  // (issue 33); a site over them gets a plan per shape, built at the first call with it.
  ExternalPlans(const std::vector<program::ExternalSite>& sites, int num_threads,
                external::MatmulWeights matmul_weights = external::MatmulWeights::Measured,
                const std::string& measurement_dir = "", const index::SymbolTable& symbols = {});
  // The StaxExternalFn the generated wrapper calls, with `this` as its context: 0, or the
  // wrapper's status for the failure (program::kStatusIndexError, ...).
  static int call(void* ctx, int64_t site, const int64_t* symbols, const void* const* operands,
                  void* output, int num_threads, char* err, int64_t err_capacity);
  // The shapes whose plans a site holds now: 1 for a static site, up to
  // kPlansPerSymbolicSite for one over size symbols.
  size_t shapes_planned(size_t site) const;
  static constexpr size_t kPlansPerSymbolicSite = 8;
  // A symbolic site's plans now, the least recently used first: the symbols' values of each
  // and its matrix product's implementation as explain shows it ("" for other calls); empty
  // for a static site.
  std::vector<std::pair<std::vector<int64_t>, std::string>> planned_shapes(size_t site) const;
  bool empty() const { return plans_.empty(); }

  // freeze_parameters (frozen_weights.h): packs the weights a convolution site reads, at
  // `weights` (the operand's first element, as the program passes it), into the site's slot;
  // later calls that pass the same pointer read the packed copy instead of reordering it. The
  // caller guarantees that the weights do not change while the slot holds it (the bridge checks
  // version counters and pointers before each call and repacks or unpacks). Returns the packed
  // bytes, 0 when there is nothing to pack (the primitive reads the weights in place, or no
  // library call). Throws std::invalid_argument for a site that is not a convolution reading
  // weights; external::LibraryError when oneDNN fails.
  size_t pack_weights(size_t site, const void* weights, int num_threads) const;
  // Empties the site's slot: calls reorder the weights again.
  void unpack_weights(size_t site) const;
  // The site's oneDNN call as explain shows it (a convolution's "weights packed once (frozen)"
  // while its slot holds a copy that the compile-time thread count reads); "" for Stax's own
  // runtime calls (scatters, scans, attention).
  std::string implementation(size_t site) const;

 private:
  // The weights packed once for a convolution site; calls and the bridge's repacking may run
  // on different threads at once.
  struct FrozenSlot {
    mutable std::mutex mutex;
    std::shared_ptr<const external::PackedWeights> packed;
    std::shared_ptr<const external::PackedWeights> get() const {
      std::lock_guard<std::mutex> lock(mutex);
      return packed;
    }
  };

  // One plan per site: a matrix product, a convolution, a scatter, an attention or a scan (the
  // others are null).
  struct Plan {
    std::unique_ptr<external::MatmulPlan> matmul;
    std::unique_ptr<external::ConvolutionPlan> convolution;
    std::unique_ptr<external::ScatterSpec> scatter;
    std::unique_ptr<external::AttentionPlan> attention;
    std::unique_ptr<external::ScanSpec> scan;
    bool backward = false;
    size_t operand_count = 0;
    // Bytes of each further result the program does not keep (the call writes it to scratch).
    std::vector<size_t> unkept_bytes;
    std::vector<bool> kept;              // per further result: whether the program keeps it
    std::unique_ptr<FrozenSlot> frozen;  // convolutions reading weights
  };
  // A matrix product's form decided (measured, or kept unmeasured) at one shape of a size
  // class (plan_at).
  struct ClassForm {
    external::MatmulWeights form = external::MatmulWeights::Direct;
    std::string measured_at;  // the shape it was decided at (MatmulSpec::describe)
  };
  // A site over size symbols: its plans by the symbols' values, the least recently used first;
  // a matrix product's forms by size class (the symbols rounded up to powers of two).
  struct PerShape {
    program::ExternalSite site;
    mutable std::mutex mutex;
    std::list<std::pair<std::vector<int64_t>, std::shared_ptr<const Plan>>> plans;
    std::map<std::vector<int64_t>, ClassForm> forms;
  };
  const Plan& convolution_reading_weights(size_t site) const;
  // The plan of a static site, or of a symbolic one at these symbols' values (kept alive by
  // `hold` while the call runs).
  const Plan& plan_at(size_t site, const int64_t* symbols, std::shared_ptr<const Plan>& hold) const;
  // Throws external::LibraryError naming the site's graph node. `decided`: a matrix product's
  // form as measured at another shape of its size class (kept unless it refuses this shape).
  std::shared_ptr<const Plan> build_plan(const program::ExternalSite& site,
                                         const ClassForm* decided = nullptr) const;
  int num_threads_ = 1;
  external::MatmulWeights matmul_weights_ = external::MatmulWeights::Measured;
  std::string measurement_dir_;
  std::vector<std::string> symbol_names_;
  std::vector<std::shared_ptr<const Plan>> plans_;  // null for a site over size symbols
  std::vector<std::unique_ptr<PerShape>> per_shape_;
  std::vector<std::string> sources_;
  std::vector<std::string> trace_names_;  // per site: "stax::addmm -> buf3" (TraceScope)
};

}  // namespace stax::driver
