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
      if (members.size() != 1) throw std::logic_error("an external call was fused: " + fused.name);
      step.external = true;
      step.call = first.buffer->external.get();
      step.output = first.buffer->name;
      ExternalSite site;
      site.output = first.buffer->name;
      site.call = first.buffer->external;
      site.output_sizes = first.buffer->sizes;
      site.output_strides = first.buffer->strides;
      site.dtype = first.buffer->dtype;
      site.source = first.buffer->source;
      program.externals.push_back(std::move(site));
      program.log.push_back(fused.name + ": external call " + step.call->op + " through " +
                            step.call->library + " (" + step.call->reason + ")");
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
