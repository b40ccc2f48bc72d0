// Library choice and plans for external calls (see external_calls.h).
#include "driver/external_calls.h"

#include <cstdio>
#include <stdexcept>

#include "driver/profile.h"
#include "ir/graph.h"

namespace stax::driver {

namespace {

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
  spec.a = as_matrices(call.a.sizes, call.a.strides);
  spec.b = as_matrices(call.b.sizes, call.b.strides);
  spec.c = as_matrices(output_sizes, output_strides);
  if (call.bias) spec.bias = as_matrices(call.bias->sizes, call.bias->strides);
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
  std::vector<int64_t> out_sizes = call.a.sizes;
  out_sizes.back() = call.b.sizes.back();
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
  const external::TensorLayout a{call.a.sizes, call.a.strides};
  const external::TensorLayout b{call.b.sizes, call.b.strides};
  const external::TensorLayout result{output_sizes, output_strides};
  switch (call.convolution->direction) {
    case Direction::Forward:
      spec.input = a;
      spec.weight = b;
      spec.output = result;
      if (call.bias) spec.bias = external::TensorLayout{call.bias->sizes, call.bias->strides};
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

bool library_runs_epilogue(const lowering::ExternalCall& call,
                           const std::vector<scheduler::EpilogueOp>& epilogue, std::string* why) {
  if (call.convolution) {
    if (why != nullptr) *why = "the convolution call takes no post-ops yet";
    return false;
  }
  return external::MatmulPlan::supported(contiguous_output_spec(call, epilogue), why);
}

std::optional<std::string> library_for(const lowering::ExternalCall& call, std::string* why) {
  if (call.convolution) {
    const std::vector<int64_t>& out_sizes = call.convolution->result_sizes;
    if (!external::ConvolutionPlan::supported(
            convolution_spec(call, out_sizes, ir::contiguous_strides(out_sizes), call.a.dtype),
            why)) {
      return std::nullopt;
    }
    return std::string(kConvolutionLibrary);
  }
  const external::MatmulSpec spec = contiguous_output_spec(call, {});
  if (!external::MatmulPlan::supported(spec, why)) return std::nullopt;
  return std::string(kMatmulLibrary);
}

ExternalPlans::ExternalPlans(const std::vector<program::ExternalSite>& sites, int num_threads) {
  for (const program::ExternalSite& site : sites) {
    try {
      Plan plan;
      if (site.call->convolution) {
        plan.convolution = external::ConvolutionPlan::create(
            convolution_spec(*site.call, site.output_sizes, site.output_strides, site.dtype),
            num_threads);
      } else {
        plan.matmul = external::MatmulPlan::create(
            matmul_spec(*site.call, site.output_sizes, site.output_strides, site.dtype,
                        site.epilogue),
            num_threads);
      }
      plans_.push_back(std::move(plan));
    } catch (const external::LibraryError& e) {
      // Kept a LibraryError (rethrow_with_context would make it a plain runtime_error).
      throw external::LibraryError("building the library call of " + site.source + ": " + e.what());
    } catch (const std::exception&) {
      ir::rethrow_with_context("building the library call of " + site.source);
    }
    sources_.push_back(site.source);
  }
}

int ExternalPlans::call(void* ctx, int64_t site, const void* const* operands, void* output,
                        int num_threads, char* err, int64_t err_capacity) {
  const auto* self = static_cast<const ExternalPlans*>(ctx);
  const auto k = static_cast<size_t>(site);
  const ProfileScope profile(ProfileSite::External);
  try {
    if (self == nullptr || k >= self->plans_.size()) {
      throw std::logic_error("no plan for external call site " + std::to_string(site));
    }
    const Plan& plan = self->plans_[k];
    if (plan.convolution) {
      const bool has_bias = plan.convolution->spec().bias.has_value();
      plan.convolution->run(operands[0], operands[1], has_bias ? operands[2] : nullptr, output,
                            num_threads);
    } else {
      const bool has_bias = plan.matmul->spec().bias.has_value();
      plan.matmul->run(operands[0], operands[1], has_bias ? operands[2] : nullptr, output,
                       num_threads);
    }
    return 0;
  } catch (const std::exception& e) {
    if (err != nullptr && err_capacity > 0) {
      const std::string where = k < self->sources_.size() ? self->sources_[k] + ": " : "";
      std::snprintf(err, static_cast<size_t>(err_capacity), "%s%s", where.c_str(), e.what());
    }
    return 1;
  }
}

}  // namespace stax::driver
