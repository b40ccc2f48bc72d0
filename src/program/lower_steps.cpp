// Pass: the schedule's fused nodes, in execution order, as steps of the host program. A loop
// nest is lowered to kernel IR by the kernel pipeline; an external call becomes a site whose
// plan the runtime builds once, when the program is loaded.
#include <stdexcept>

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
      ExternalSite site;
      site.output = last.buffer->name;
      site.call = first.buffer->external;
      site.output_sizes = last.buffer->sizes;
      site.output_strides = last.buffer->strides;
      site.dtype = last.buffer->dtype;
      site.source = first.buffer->source;
      site.epilogue = fused.epilogue;
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
