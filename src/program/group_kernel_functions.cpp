// Pass: which adjacent loop steps share one kernel function, and so one OpenMP parallel
// region (one fork and join instead of several). The wrapper allocates a function's buffers
// before it and frees them after, so steps are grouped only while no intermediate buffer dies
// between them: grouping then never raises peak memory. An external call runs between
// functions, from the wrapper (the library forks its own threads).
#include <set>

#include "program/pipeline.h"

namespace stax::program {

void group_kernel_functions(HostProgram& program) {
  const scheduler::Schedule& s = *program.schedule;
  std::set<std::string> inputs;
  for (const auto& in : s.graph->inputs) inputs.insert(in.name);
  bool open = false;  // whether the last function may take the next loop step
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    if (step.external) {
      open = false;
      continue;
    }
    std::string reason;
    if (open) {
      const size_t previous = program.steps[i - 1].fused;
      for (const auto& b : s.release_after[previous]) {
        if (!inputs.count(b)) {
          reason = "starts a new function: intermediate " + b + " is freed after " +
                   s.kernels[previous].name;
          break;
        }
      }
      if (reason.empty()) {
        KernelFunction& f = program.functions.back();
        f.steps.push_back(i);
        f.reason += "; " + s.kernels[step.fused].name + " joins: no intermediate dies before it";
        continue;
      }
    } else {
      reason = i == 0 ? "the first loop" : "the first loop after an external call";
    }
    KernelFunction f;
    f.name = "kernel" + std::to_string(program.functions.size());
    f.steps = {i};
    f.reason = s.kernels[step.fused].name + ": " + reason;
    program.functions.push_back(std::move(f));
    open = true;
  }
  // What each function takes: the buffers its loops read or write in memory.
  for (KernelFunction& f : program.functions) {
    f.trace_name = "stax::" + f.name;
    for (size_t k = 0; k < f.steps.size(); ++k) {
      f.trace_name += (k ? ", " : " ") + s.kernels[program.steps[f.steps[k]].fused].name;
    }
    std::set<std::string> used;
    for (size_t i : f.steps) {
      const Step& step = program.steps[i];
      f.parallel_region |= step.loop.decisions.parallel_depth > 0;
      f.checks |= !step.loop.errors.empty();
      for (int id : s.kernels[step.fused].members()) {
        for (const auto& b : s.nodes[static_cast<size_t>(id)].buffers()) {
          if (!s.is_elided(b) && !s.is_localized(b)) used.insert(b);
        }
      }
    }
    f.params.assign(used.begin(), used.end());
    program.log.push_back(f.name + ": " + f.reason);
    for (const auto& b : f.params) {
      const scheduler::BufferPlan* plan = s.plan_of(b);
      if (plan == nullptr) continue;
      // Written into an input's memory (copy_) or into an intermediate's (in-place reuse).
      const std::string& other =
          !plan->input_storage.empty() ? plan->input_storage : plan->in_place_of;
      if (other.empty() || !used.count(other)) continue;
      f.aliased.insert(b);
      f.aliased.insert(other);
      program.log.push_back(f.name + ": " + b + " and " + other +
                            " are one memory (written in place): passed without __restrict");
    }
  }
}

}  // namespace stax::program
