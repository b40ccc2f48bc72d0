// Pass: the schedule's fused nodes, in execution order, as steps of the host program. A loop
// nest is lowered to kernel IR by the kernel pipeline; an external call becomes a site whose
// plan the runtime builds once, when the program is loaded.
#include <stdexcept>

#include "index/shape_exprs.h"
#include "ir/graph.h"
#include "kernel/ir_builder.h"
#include "program/pipeline.h"

namespace stax::program {

void lower_steps(HostProgram& program, const kernel::PipelineOptions& kernel_options) {
  const scheduler::Schedule& s = *program.schedule;
  int next_error_code = kernel::kFirstIndexErrorCode;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const scheduler::FusedNode& fused = s.kernels[k];
    Step step;
    step.fused = k;
    const std::vector<int> members = fused.members();
    const scheduler::SchedulerNode& first = s.nodes[static_cast<size_t>(members.at(0))];
    if (first.is_external()) {
      // The call, and the pointwise loop it runs as its epilogue if it absorbed one.
      const scheduler::SchedulerNode& last = s.nodes[static_cast<size_t>(members.back())];
      if (members.size() > 2 || (members.size() == 2 && fused.epilogue.empty())) {
        throw std::logic_error("an external call was fused: " + fused.name);
      }
      step.external = true;
      step.call = first.buffer->external.get();
      step.output = last.buffer->name;
      if (step.call->result_of) {
        step.result_only = true;
        program.log.push_back(fused.name + ": result " +
                              std::to_string(step.call->result_of->index) +
                              " of the call that writes " + step.call->result_of->call_buffer +
                              ", written by that call");
        program.steps.push_back(std::move(step));
        continue;
      }
      ExternalSite site;
      site.output = last.buffer->name;
      site.call = first.buffer->external;
      site.output_sizes = last.buffer->sizes;
      site.output_strides = last.buffer->strides;
      site.dtype = last.buffer->dtype;
      site.source = first.buffer->source;
      site.epilogue = fused.epilogue;
      // Further results of the call still scheduled (one no node reads was removed).
      for (const scheduler::FusedNode& other_kernel : s.kernels) {
        const scheduler::SchedulerNode& n =
            s.nodes[static_cast<size_t>(other_kernel.members().at(0))];
        const lowering::ExternalCall* other = n.buffer->external.get();
        if (other == nullptr || !other->result_of || other->result_of->call_buffer != site.output) {
          continue;
        }
        const auto k = static_cast<size_t>(other->result_of->index - 1);
        if (site.further_results.size() <= k) {
          site.further_results.resize(k + 1);
          site.further_sizes.resize(k + 1);
          site.further_strides.resize(k + 1);
        }
        site.further_results[k] = n.buffer->name;
        site.further_sizes[k] = n.buffer->sizes;
        site.further_strides[k] = n.buffer->strides;
      }
      program.externals.push_back(std::move(site));
      std::string epilogue;
      for (const auto& op : fused.epilogue)
        epilogue += (epilogue.empty() ? "" : ", ") + op.to_string();
      program.log.push_back(fused.name + ": external call " + step.call->op + " through " +
                            step.call->library + " (" + step.call->reason + ")" +
                            (epilogue.empty() ? "" : ", epilogue " + epilogue));
    } else {
      try {
        step.loop = kernel::lower_fused_node(s, fused, kernel_options, next_error_code);
      } catch (const std::exception&) {
        ir::rethrow_with_context("code generation of " + scheduler::describe_sources(s, fused));
      }
      for (const kernel::ErrorSite& e : step.loop.errors) {
        bool known = false;
        for (const auto& seen : program.errors) known |= seen.code == e.code;
        if (!known) program.errors.push_back(e);
      }
    }
    program.steps.push_back(std::move(step));
  }
}

}  // namespace stax::program
