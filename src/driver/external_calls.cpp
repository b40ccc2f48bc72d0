// Library choice and plans for external calls (see external_calls.h).
#include "driver/external_calls.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "driver/profile.h"
#include "ir/graph.h"

namespace stax::driver {

namespace {

// The spec builders below take calls bound to their sizes (lowering::bind_external_call).
constexpr const char* kBoundCall = "a library plan (its call is bound to each call's sizes)";
std::vector<int64_t> sizes_of(const lowering::ExternalOperand& op) {
  return index::static_values(op.sizes, kBoundCall);
}
std::vector<int64_t> strides_of(const lowering::ExternalOperand& op) {
  return index::static_values(op.strides, kBoundCall);
}

// An operand of `rank` 2 or 3 as {batch, rows, cols}: a lone matrix is a batch of one.
external::MatrixLayout as_matrices(const std::vector<int64_t>& sizes,
                                   const std::vector<int64_t>& strides) {
  external::MatrixLayout m;
  const size_t n = sizes.size();
  m.sizes = {n == 3 ? sizes[0] : 1, sizes[n - 2], sizes[n - 1]};
  m.strides = {n == 3 ? strides[0] : 0, strides[n - 2], strides[n - 1]};
  return m;
}

}  // namespace

external::PostOp post_op(const scheduler::EpilogueOp& op) {
  using Kind = scheduler::EpilogueOp::Kind;
  external::PostOp p;
  switch (op.kind) {
    case Kind::Tanh:
      p.kind = external::PostOp::Kind::Tanh;
      break;
    case Kind::Abs:
      p.kind = external::PostOp::Kind::Abs;
      break;
    case Kind::Sqrt:
      p.kind = external::PostOp::Kind::Sqrt;
      break;
    case Kind::Square:
      p.kind = external::PostOp::Kind::Square;
      break;
    case Kind::Linear:
      p.kind = external::PostOp::Kind::Linear;
      p.alpha = op.alpha;
      p.beta = op.beta;
      break;
  }
  return p;
}

external::MatmulSpec matmul_spec(const lowering::ExternalCall& call,
                                 const std::vector<int64_t>& output_sizes,
                                 const std::vector<int64_t>& output_strides, DType dtype,
                                 const std::vector<scheduler::EpilogueOp>& epilogue) {
  external::MatmulSpec spec;
  spec.dtype = dtype;
  spec.a = as_matrices(sizes_of(call.a), strides_of(call.a));
  spec.b = as_matrices(sizes_of(call.b), strides_of(call.b));
  spec.c = as_matrices(output_sizes, output_strides);
  if (call.bias) spec.bias = as_matrices(sizes_of(*call.bias), strides_of(*call.bias));
  spec.alpha = call.alpha;
  spec.beta = call.beta;
  spec.alpha_zero_skips_product = call.alpha_zero_skips_product;
  for (const scheduler::EpilogueOp& op : epilogue) spec.post_ops.push_back(post_op(op));
  return spec;
}

namespace {

// The spec of `call` writing a contiguous output, as lowering and the scheduler see it.
external::MatmulSpec contiguous_output_spec(const lowering::ExternalCall& call,
                                            const std::vector<scheduler::EpilogueOp>& epilogue) {
  std::vector<int64_t> out_sizes = sizes_of(call.a);
  out_sizes.back() = sizes_of(call.b).back();
  // The strides lowering gives the call's output buffer.
  return matmul_spec(call, out_sizes, ir::contiguous_strides(out_sizes), call.a.dtype, epilogue);
}

}  // namespace

external::ConvolutionSpec convolution_spec(const lowering::ExternalCall& call,
                                           const std::vector<int64_t>& output_sizes,
                                           const std::vector<int64_t>& output_strides,
                                           DType dtype) {
  using Direction = lowering::ConvolutionWindow::Direction;
  external::ConvolutionSpec spec;
  spec.dtype = dtype;
  // The spec describes the forward convolution's tensors whatever the call computes: a
  // gradient is the layout of the tensor it is the gradient of, grad_output the output's.
  const external::TensorLayout a{sizes_of(call.a), strides_of(call.a)};
  const external::TensorLayout b{sizes_of(call.b), strides_of(call.b)};
  const external::TensorLayout result{output_sizes, output_strides};
  switch (call.convolution->direction) {
    case Direction::Forward:
      spec.input = a;
      spec.weight = b;
      spec.output = result;
      if (call.bias)
        spec.bias = external::TensorLayout{sizes_of(*call.bias), strides_of(*call.bias)};
      break;
    case Direction::BackwardInput:
      spec.pass = external::ConvolutionPass::BackwardData;
      spec.output = a;
      spec.weight = b;
      spec.input = result;
      break;
    case Direction::BackwardWeight:
      spec.pass = external::ConvolutionPass::BackwardWeights;
      spec.output = a;
      spec.input = b;
      spec.weight = result;
      break;
  }
  spec.stride = call.convolution->stride;
  spec.padding = call.convolution->padding;
  spec.dilation = call.convolution->dilation;
  spec.groups = call.convolution->groups;
  return spec;
}

external::ScatterSpec scatter_spec(const lowering::ScatterCall& call,
                                   const std::vector<int64_t>& output_sizes,
                                   const std::vector<int64_t>& output_strides, DType dtype) {
  external::ScatterSpec spec;
  spec.dtype = dtype;
  spec.out_sizes = output_sizes;
  if (call.self) spec.self = external::StridedOperand{sizes_of(*call.self), strides_of(*call.self)};
  spec.space = index::static_values(call.space, "a scatter's iteration space");
  const size_t rank = call.space.size();
  for (const lowering::ScatterIndex& index : call.indices) {
    external::ScatterIndexSpec& x = spec.indices.emplace_back();
    x.dtype = index.operand.dtype;
    x.rule = index.rule;
    x.skipped = index.skipped;
    x.space_strides.assign(rank, 0);
    for (size_t k = 0; k < index.index_dims.size(); ++k) {
      if (index.index_dims[k] >= 0) {
        x.space_strides[static_cast<size_t>(index.index_dims[k])] += strides_of(index.operand)[k];
      }
    }
  }
  if (call.values) {
    spec.values_strides = std::vector<int64_t>(rank, 0);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t k = call.values_dims[d];
      if (k >= 0) (*spec.values_strides)[d] = strides_of(*call.values)[static_cast<size_t>(k)];
    }
  }
  spec.dest_strides.assign(rank, 0);
  for (size_t d = 0; d < call.dest_dims.size(); ++d) {
    if (const auto k = ir::IndirectArgs::term_of(call.dest_dims[d])) {
      spec.indices[*k].dest_stride = output_strides[d];
    } else {
      spec.dest_strides[static_cast<size_t>(call.dest_dims[d])] += output_strides[d];
    }
  }
  spec.combine = call.combine;
  spec.include_self = call.include_self;
  spec.float_sum = call.float_sum;
  spec.fused_multiply_add = call.fused_multiply_add;
  spec.product_in_dtype = call.product_in_dtype;
  spec.value = call.value;
  spec.int_value = call.int_value;
  spec.alpha = call.alpha;
  spec.int_alpha = call.int_alpha;
  return spec;
}

namespace {

external::StridedOperand strided(const lowering::ExternalOperand& op) {
  return external::StridedOperand{sizes_of(op), strides_of(op)};
}

external::StridedOperand contiguous(const std::vector<int64_t>& sizes) {
  return external::StridedOperand{sizes, ir::contiguous_strides(sizes)};
}

}  // namespace

std::optional<graph_passes::AttentionBlocking> runtime_attention_blocks(int64_t lq, int64_t lk,
                                                                        int64_t e, int64_t ev,
                                                                        DType dtype) {
  external::AttentionSpec spec;
  spec.dtype = dtype;
  spec.query = contiguous({1, 1, lq, e});
  spec.key = contiguous({1, 1, lk, e});
  spec.value = contiguous({1, 1, lk, ev});
  spec.out = contiguous({1, 1, lq, ev});
  if (external::attention_spec_problem(spec, false)) return std::nullopt;
  const external::AttentionBlocks blocks = external::choose_attention_blocks(spec);
  return graph_passes::AttentionBlocking{blocks.query_rows, blocks.keys};
}

external::ScanSpec scan_spec(const lowering::ScanCall& call, const program::ExternalSite& site) {
  external::ScanSpec spec;
  spec.kind = call.kind;
  spec.dtype = call.input.dtype;
  spec.sizes = sizes_of(call.input);
  spec.input_strides = strides_of(call.input);
  spec.dim = call.dim;
  const std::vector<int64_t> out_sizes = index::static_values(site.output_sizes, kBoundCall);
  const std::vector<int64_t> out_strides = index::static_values(site.output_strides, kBoundCall);
  const std::vector<int64_t> contiguous = ir::contiguous_strides(out_sizes);
  bool dense = out_sizes == spec.sizes;
  for (size_t d = 0; dense && d < contiguous.size(); ++d) {
    dense = out_sizes[d] <= 1 || out_strides.at(d) == contiguous[d];
  }
  if (!dense) throw std::logic_error("a scan writes a contiguous output of its input's sizes");
  return spec;
}

external::AttentionSpec attention_spec(const lowering::AttentionCall& call,
                                       const program::ExternalSite& site) {
  external::AttentionSpec spec;
  spec.dtype = call.query.dtype;
  spec.query = strided(call.query);
  spec.key = strided(call.key);
  spec.value = strided(call.value);
  const std::vector<int64_t>& q = sizes_of(call.query);
  const std::vector<int64_t>& k = sizes_of(call.key);
  if (call.mask) {
    // The mask as a view of [B, Hq, Lq, Lk]: stride 0 where it broadcasts.
    external::StridedOperand m;
    m.sizes = {q[0], q[1], q[2], k[2]};
    m.strides.assign(4, 0);
    for (size_t d = 0; d < 4; ++d) {
      if (call.mask_dims[d] >= 0)
        m.strides[d] = strides_of(*call.mask)[static_cast<size_t>(call.mask_dims[d])];
    }
    spec.mask = m;
    spec.mask_dtype = call.mask->dtype;
  }
  spec.causal = call.causal;
  spec.masked_rows_nan = call.masked_rows_nan;
  spec.scale = call.scale;
  // A further result the program does not keep is written to scratch, contiguous.
  auto further = [&](size_t r, const std::vector<int64_t>& sizes) {
    if (r < site.further_sizes.size() && !site.further_results[r].empty()) {
      return external::StridedOperand{index::static_values(site.further_sizes[r], kBoundCall),
                                      index::static_values(site.further_strides[r], kBoundCall)};
    }
    return contiguous(sizes);
  };
  if (!call.backward) {
    spec.out = external::StridedOperand{index::static_values(site.output_sizes, kBoundCall),
                                        index::static_values(site.output_strides, kBoundCall)};
    spec.lse = further(0, {q[0], q[1], q[2]});
    return spec;
  }
  spec.grad_out = strided(*call.grad_out);
  spec.out_in = strided(*call.out);
  spec.lse_in = strided(*call.logsumexp);
  spec.out = spec.out_in;  // the forward's layouts, which the spec also describes
  spec.lse = spec.lse_in;
  spec.grad_query = external::StridedOperand{index::static_values(site.output_sizes, kBoundCall),
                                             index::static_values(site.output_strides, kBoundCall)};
  spec.grad_key = further(0, sizes_of(call.key));
  spec.grad_value = further(1, sizes_of(call.value));
  return spec;
}

bool library_runs_epilogue(const lowering::ExternalCall& call,
                           const std::vector<scheduler::EpilogueOp>& epilogue, std::string* why) {
  if (call.attention || call.result_of) {
    if (why != nullptr) *why = "the runtime's attention applies no epilogue";
    return false;
  }
  if (call.scatter) {
    if (why != nullptr) *why = "a scatter applies no epilogue";
    return false;
  }
  if (call.scan) {
    if (why != nullptr) *why = "a scan applies no epilogue";
    return false;
  }
  if (call.convolution) {
    if (why != nullptr) *why = "the convolution call takes no post-ops yet";
    return false;
  }
  return external::MatmulPlan::supported(contiguous_output_spec(call, epilogue), why);
}

namespace {

// The note on an accepted call that the library computes through float32 (arithmetic.h), or
// "" where it computes the dtype natively: why, and why that rather than a loop nest.
// `result` says what becomes of the float32 results.
std::string arithmetic_note(std::optional<external::Arithmetic> arithmetic,
                            const std::string& native_refusal, const std::string& result) {
  if (arithmetic != external::Arithmetic::ThroughFloat32) return "";
  return "through float32 (" + native_refusal + "): bf16 operands converted to float32 exactly, " +
         result +
         " (a native kernel's arithmetic up to the order of the sums; converting is one pass "
         "over each operand, small beside the products, so the call stays in the library "
         "rather than a loop nest)";
}

}  // namespace

std::vector<std::string> library_arithmetic_notes() {
  using external::Arithmetic;
  std::vector<std::string> notes;
  if (external::MatmulPlan::arithmetic(DType::BFloat16) == Arithmetic::ThroughFloat32) {
    notes.push_back(std::string(kMatmulLibrary) + ": bf16 through float32");
  }
  std::string passes;
  for (auto [pass, name] : {std::pair{external::ConvolutionPass::Forward, "forward"},
                            {external::ConvolutionPass::BackwardData, "backward-data"},
                            {external::ConvolutionPass::BackwardWeights, "backward-weights"}}) {
    if (external::ConvolutionPlan::arithmetic(DType::BFloat16, pass) ==
        Arithmetic::ThroughFloat32) {
      passes += std::string(passes.empty() ? "" : ", ") + name;
    }
  }
  if (!passes.empty()) {
    notes.push_back(std::string(kConvolutionLibrary) + ": bf16 through float32 (" + passes + ")");
  }
  if (external::AttentionPlan::arithmetic(DType::BFloat16) == Arithmetic::ThroughFloat32) {
    notes.push_back("Stax runtime attention: bf16 block products through float32");
  }
  return notes;
}

std::optional<std::string> library_for(const lowering::ExternalCall& call, std::string* why) {
  std::string native_refusal;
  if (call.attention) {
    const DType d = call.attention->query.dtype;
    if (d != DType::Float32 && d != DType::BFloat16) {
      if (why != nullptr) {
        *why = "Stax's runtime attention takes float32 and bfloat16, not " +
               std::string(dtype_name(d));
      }
      return std::nullopt;
    }
    if (why != nullptr) {
      *why = arithmetic_note(external::AttentionPlan::arithmetic(d, &native_refusal),
                             native_refusal, "their float32 results used as before");
      if (!why->empty()) *why = "its block products " + *why;
    }
  }
  if (call.scatter || call.attention || call.scan || call.result_of) {
    return call.library;  // Stax's runtime, named by lowering
  }
  if (call.convolution) {
    const std::vector<int64_t> out_sizes =
        index::static_values(call.convolution->result_sizes, kBoundCall);
    const external::ConvolutionSpec spec =
        convolution_spec(call, out_sizes, ir::contiguous_strides(out_sizes), call.a.dtype);
    if (!external::ConvolutionPlan::supported(spec, why)) return std::nullopt;
    if (why != nullptr) {
      *why = arithmetic_note(
          external::ConvolutionPlan::arithmetic(spec.dtype, spec.pass, &native_refusal),
          native_refusal, "the result rounded to bf16 once");
    }
    return std::string(kConvolutionLibrary);
  }
  const external::MatmulSpec spec = contiguous_output_spec(call, {});
  if (!external::MatmulPlan::supported(spec, why)) return std::nullopt;
  if (why != nullptr) {
    *why = arithmetic_note(external::MatmulPlan::arithmetic(spec.dtype, &native_refusal),
                           native_refusal, "the result rounded to bf16 once");
  }
  return std::string(kMatmulLibrary);
}

std::optional<std::string> channels_last_output_for(const lowering::ExternalCall& call) {
  if (!call.convolution ||
      call.convolution->direction != lowering::ConvolutionWindow::Direction::Forward) {
    return std::nullopt;
  }
  const std::vector<int64_t> out_sizes =
      index::static_values(call.convolution->result_sizes, kBoundCall);
  std::string reason;
  if (!external::ConvolutionPlan::runs_channels_last_in_place(
          convolution_spec(call, out_sizes, ir::contiguous_strides(out_sizes), call.a.dtype),
          &reason)) {
    return std::nullopt;
  }
  return "the library reads and writes that layout in place (" + reason + ")";
}

std::shared_ptr<const ExternalPlans::Plan> ExternalPlans::build_plan(
    const program::ExternalSite& site, const ClassForm* decided) const {
  try {
    auto plan = std::make_shared<Plan>();
    const std::vector<int64_t> out_sizes = index::static_values(site.output_sizes, kBoundCall);
    const std::vector<int64_t> out_strides = index::static_values(site.output_strides, kBoundCall);
    plan->operand_count = site.call->operands().size();
    if (site.call->attention) {
      plan->backward = site.call->attention->backward;
      const external::AttentionSpec spec = attention_spec(*site.call->attention, site);
      plan->attention = external::AttentionPlan::create(spec, plan->backward, num_threads_);
      // Results 1 and 2 of the backward (dk, dv), result 1 of the forward (lse).
      const size_t results = plan->backward ? 2 : 1;
      plan->unkept_bytes.assign(results, 0);
      plan->kept.assign(results, false);
      for (size_t r = 0; r < results; ++r) {
        if (r < site.further_results.size() && !site.further_results[r].empty()) {
          plan->kept[r] = true;
          continue;
        }
        const external::StridedOperand& layout =
            plan->backward ? (r == 0 ? spec.grad_key : spec.grad_value) : spec.lse;
        int64_t numel = 1;
        for (int64_t n : layout.sizes) numel *= n;
        plan->unkept_bytes[r] =
            static_cast<size_t>(numel) * dtype_size(plan->backward ? spec.dtype : DType::Float32);
      }
    } else if (site.call->scatter) {
      plan->scatter = std::make_unique<external::ScatterSpec>(
          scatter_spec(*site.call->scatter, out_sizes, out_strides, site.dtype));
      if (auto problem = external::scatter_spec_problem(*plan->scatter)) {
        throw std::logic_error("a scatter plan with " + *problem);
      }
    } else if (site.call->scan) {
      plan->scan = std::make_unique<external::ScanSpec>(scan_spec(*site.call->scan, site));
      if (auto problem = external::scan_spec_problem(*plan->scan)) {
        throw std::logic_error("a scan plan with " + *problem);
      }
      // cummax's and cummin's indices: written only where the program keeps them.
      plan->kept.assign(1, !site.further_results.empty() && !site.further_results[0].empty());
    } else if (site.call->convolution) {
      plan->convolution = external::ConvolutionPlan::create(
          convolution_spec(*site.call, out_sizes, out_strides, site.dtype), num_threads_);
      if (plan->convolution->spec().pass != external::ConvolutionPass::BackwardWeights) {
        plan->frozen = std::make_unique<FrozenSlot>();
      }
    } else {
      const external::MatmulSpec spec =
          matmul_spec(*site.call, out_sizes, out_strides, site.dtype, site.epilogue);
      if (decided != nullptr) {
        // The form measured at another shape of this size class (plan_at).
        try {
          plan->matmul = external::MatmulPlan::create(
              spec, num_threads_, decided->form, measurement_dir_,
              "as decided at " + decided->measured_at + " (the same size class)");
        } catch (const external::LibraryError&) {
          // That form does not take this shape (the BLAS or a packed kernel refuses it).
        }
      }
      if (!plan->matmul) {
        plan->matmul =
            external::MatmulPlan::create(spec, num_threads_, matmul_weights_, measurement_dir_);
      }
    }
    return plan;
  } catch (const external::LibraryError& e) {
    // Kept a LibraryError (rethrow_with_context would make it a plain runtime_error).
    throw external::LibraryError("building the library call of " + site.source + ": " + e.what());
  } catch (const std::exception&) {
    ir::rethrow_with_context("building the library call of " + site.source);
  }
}

ExternalPlans::ExternalPlans(const std::vector<program::ExternalSite>& sites, int num_threads,
                             external::MatmulWeights matmul_weights,
                             const std::string& measurement_dir, const index::SymbolTable& symbols)
    : num_threads_(num_threads),
      matmul_weights_(matmul_weights),
      measurement_dir_(measurement_dir) {
  for (const auto& entry : symbols) symbol_names_.push_back(entry.first);
  for (const program::ExternalSite& site : sites) {
    if (site.is_symbolic()) {
      // Issue 33: a plan per shape, built when a call first meets it (a primitive creation,
      // never a C++ compile), the last kPlansPerSymbolicSite kept.
      auto per_shape = std::make_unique<PerShape>();
      per_shape->site = site;
      per_shape_.push_back(std::move(per_shape));
      plans_.push_back(nullptr);
    } else {
      per_shape_.push_back(nullptr);
      plans_.push_back(build_plan(site));
    }
    sources_.push_back(site.source);
    trace_names_.push_back("stax::" + site.call->op + " -> " + site.output);
  }
}

const ExternalPlans::Plan& ExternalPlans::plan_at(size_t k, const int64_t* symbols,
                                                  std::shared_ptr<const Plan>& hold) const {
  if (k >= plans_.size()) {
    throw std::logic_error("no plan for external call site " + std::to_string(k));
  }
  if (plans_[k]) return *plans_[k];
  PerShape& s = *per_shape_[k];
  if (symbols == nullptr) throw std::logic_error("a call over size symbols was given no sizes");
  std::vector<int64_t> key(symbols, symbols + symbol_names_.size());
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    for (auto it = s.plans.begin(); it != s.plans.end(); ++it) {
      if (it->first != key) continue;
      s.plans.splice(s.plans.end(), s.plans, it);  // the most recently used last
      hold = s.plans.back().second;
      return *hold;
    }
  }
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < symbol_names_.size(); ++i) values[symbol_names_[i]] = key[i];
  // A matrix product's form (B in place, packed, or the BLAS) is measured once per size class:
  // each symbol rounded up to a power of two. A sequence length that changes on every call
  // (a decoder's cache, padded batches) would otherwise time every product at every length
  // (GPT-2 at 16 new lengths: 0.7 s per length against 50 ms for the call itself).
  std::vector<int64_t> size_class = key;
  for (int64_t& v : size_class) v = v <= 1 ? v : int64_t{1} << (64 - __builtin_clzll(v - 1));
  std::optional<ClassForm> decided;
  const bool measured = matmul_weights_ != external::MatmulWeights::Direct &&
                        !s.site.call->attention && !s.site.call->scatter && !s.site.call->scan &&
                        !s.site.call->convolution;
  if (measured) {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (auto it = s.forms.find(size_class); it != s.forms.end()) decided = it->second;
  }
  const program::ExternalSite bound = program::bind_external_site(s.site, values);
  hold = build_plan(bound, decided ? &*decided : nullptr);
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (measured && !decided && hold->matmul) {
    s.forms.emplace(size_class,
                    ClassForm{hold->matmul->weights_form(), hold->matmul->spec().describe()});
  }
  // A plan evicted while a call runs it lives until that call returns (`hold`).
  while (s.plans.size() >= kPlansPerSymbolicSite) s.plans.pop_front();
  s.plans.emplace_back(std::move(key), hold);
  return *hold;
}

std::vector<std::pair<std::vector<int64_t>, std::string>> ExternalPlans::planned_shapes(
    size_t site) const {
  std::vector<std::pair<std::vector<int64_t>, std::string>> out;
  if (site >= plans_.size() || plans_[site]) return out;
  const std::lock_guard<std::mutex> lock(per_shape_[site]->mutex);
  for (const auto& [values, plan] : per_shape_[site]->plans) {
    out.emplace_back(values, plan->matmul ? plan->matmul->implementation() : "");
  }
  return out;
}

size_t ExternalPlans::shapes_planned(size_t site) const {
  if (site >= plans_.size()) return 0;
  if (plans_[site]) return 1;
  const std::lock_guard<std::mutex> lock(per_shape_[site]->mutex);
  return per_shape_[site]->plans.size();
}

int ExternalPlans::call(void* ctx, int64_t site, const int64_t* symbols,
                        const void* const* operands, void* output, int num_threads, char* err,
                        int64_t err_capacity) {
  const auto* self = static_cast<const ExternalPlans*>(ctx);
  const auto k = static_cast<size_t>(site);
  const ProfileScope profile(ProfileSite::External);
  const TraceScope trace(self != nullptr && k < self->trace_names_.size()
                             ? self->trace_names_[k].c_str()
                             : "stax::library call");
  try {
    if (self == nullptr) throw std::logic_error("no plans for external call sites");
    std::shared_ptr<const Plan> hold;
    const Plan& plan = self->plan_at(k, symbols, hold);
    if (plan.attention) {
      const external::AttentionSpec& spec = plan.attention->spec();
      const void* mask = spec.mask ? operands[3] : nullptr;
      const size_t n = plan.operand_count;
      // Further results follow the operands; one the program does not keep goes to scratch.
      std::vector<std::vector<char>> scratch(plan.unkept_bytes.size());
      auto result = [&](size_t r) -> void* {
        if (!plan.kept[r]) {
          scratch[r].resize(std::max<size_t>(plan.unkept_bytes[r], 1));
          return scratch[r].data();
        }
        return const_cast<void*>(operands[n + r]);
      };
      if (!plan.backward) {
        // The forward skips the logsumexp no one keeps.
        float* lse = plan.kept[0] ? static_cast<float*>(result(0)) : nullptr;
        plan.attention->run_forward(operands[0], operands[1], operands[2], mask, output, lse,
                                    num_threads);
      } else {
        const size_t b = spec.mask ? 4 : 3;  // grad_out, out, logsumexp
        plan.attention->run_backward(operands[b], operands[0], operands[1], operands[2],
                                     operands[b + 1], static_cast<const float*>(operands[b + 2]),
                                     mask, output, result(0), result(1), num_threads);
      }
    } else if (plan.scatter) {
      // Operands: the indices, the values unless a scalar is scattered, self unless zeros.
      const size_t n = plan.scatter->indices.size();
      const std::vector<const void*> indices(operands, operands + n);
      const bool has_values = plan.scatter->values_strides.has_value();
      const void* values = has_values ? operands[n] : nullptr;
      const void* init = plan.scatter->self ? operands[n + (has_values ? 1 : 0)] : nullptr;
      external::run_scatter(*plan.scatter, init, indices, values, output, num_threads);
    } else if (plan.scan) {
      auto* indices = plan.kept[0]
                          ? static_cast<int64_t*>(const_cast<void*>(operands[plan.operand_count]))
                          : nullptr;
      external::run_scan(*plan.scan, operands[0], output, indices, num_threads);
    } else if (plan.convolution) {
      const bool has_bias = plan.convolution->spec().bias.has_value();
      const std::shared_ptr<const external::PackedWeights> packed =
          plan.frozen ? plan.frozen->get() : nullptr;
      plan.convolution->run(operands[0], operands[1], has_bias ? operands[2] : nullptr, output,
                            num_threads, packed.get());
    } else {
      const bool has_bias = plan.matmul->spec().bias.has_value();
      plan.matmul->run(operands[0], operands[1], has_bias ? operands[2] : nullptr, output,
                       num_threads);
    }
    return 0;
  } catch (const ir::IndexError& e) {
    // The rule's message is PyTorch's, op first, as a kernel's index check reports it.
    if (err != nullptr && err_capacity > 0)
      std::snprintf(err, static_cast<size_t>(err_capacity), "%s", e.what());
    return program::kStatusIndexError;
  } catch (const std::out_of_range& e) {
    if (err != nullptr && err_capacity > 0)
      std::snprintf(err, static_cast<size_t>(err_capacity), "%s", e.what());
    return program::kStatusIndexOutOfRange;
  } catch (const std::exception& e) {
    if (err != nullptr && err_capacity > 0) {
      const std::string where = k < self->sources_.size() ? self->sources_[k] + ": " : "";
      std::snprintf(err, static_cast<size_t>(err_capacity), "%s%s", where.c_str(), e.what());
    }
    return program::kStatusExternalError;
  }
}

const ExternalPlans::Plan& ExternalPlans::convolution_reading_weights(size_t site) const {
  if (site >= plans_.size()) {
    throw std::invalid_argument("no library call site " + std::to_string(site) +
                                " (the program has " + std::to_string(plans_.size()) + ")");
  }
  if (!plans_[site]) {
    throw std::invalid_argument("library call site " + std::to_string(site) + " (" +
                                sources_[site] +
                                ") has sizes known only at run time: its weights are not packed");
  }
  const Plan& plan = *plans_[site];
  if (!plan.frozen) {
    throw std::invalid_argument("library call site " + std::to_string(site) + " (" +
                                sources_[site] +
                                ") is not a convolution reading weights: nothing to pack");
  }
  return plan;
}

size_t ExternalPlans::pack_weights(size_t site, const void* weights, int num_threads) const {
  const Plan& plan = convolution_reading_weights(site);
  if (num_threads < 0) {
    throw std::invalid_argument("pack_weights: a negative thread count (" +
                                std::to_string(num_threads) + ")");
  }
  // The previous copy goes first, so that a failure below leaves the slot empty (calls
  // reorder) rather than holding weights the caller has just said changed. Packed outside the
  // lock: calls meanwhile reorder.
  unpack_weights(site);
  std::shared_ptr<const external::PackedWeights> packed =
      plan.convolution->pack_weights(weights, num_threads);
  const size_t bytes = packed ? packed->bytes() : 0;
  std::lock_guard<std::mutex> lock(plan.frozen->mutex);
  plan.frozen->packed = std::move(packed);
  return bytes;
}

void ExternalPlans::unpack_weights(size_t site) const {
  const Plan& plan = convolution_reading_weights(site);
  std::lock_guard<std::mutex> lock(plan.frozen->mutex);
  plan.frozen->packed.reset();
}

std::string ExternalPlans::implementation(size_t site) const {
  if (site >= plans_.size()) {
    throw std::invalid_argument("no library call site " + std::to_string(site));
  }
  if (!plans_[site]) {
    return "a plan per shape, built when a call first meets it (sizes known only at run time)";
  }
  const Plan& plan = *plans_[site];
  if (plan.convolution) {
    const std::shared_ptr<const external::PackedWeights> packed =
        plan.frozen ? plan.frozen->get() : nullptr;
    return plan.convolution->implementation(packed.get());
  }
  return plan.matmul ? plan.matmul->implementation() : "";
}

}  // namespace stax::driver
