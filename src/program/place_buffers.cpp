// Pass: the wrapper's statements in order. Each function or external call is preceded by the
// allocation of the buffers its steps produce and followed by the release of the buffers whose
// last use it is (the schedule's allocation and release records, Section 7.5). Outputs get the
// caller's allocator slots in graph output order; intermediates get an entry in one live
// table, so that a failure releases whatever is live with one loop.
#include <map>
#include <optional>
#include <set>

#include "ir/checked_arith.h"
#include "program/pipeline.h"

namespace stax::program {

void place_buffers(HostProgram& program) {
  const scheduler::Schedule& s = *program.schedule;
  const lowering::LoweredGraph& g = *s.graph;
  std::map<std::string, int> inputs;  // name -> position
  for (const auto& in : g.inputs) inputs.emplace(in.name, static_cast<int>(inputs.size()));
  std::map<std::string, int> output_slot;
  for (const auto& out : g.outputs) {
    if (out.is_input || output_slot.count(out.buffer)) continue;
    output_slot[out.buffer] = static_cast<int>(program.output_slots.size());
    program.output_slots.push_back(out.buffer);
  }
  // An intermediate whose storage an output takes in place is allocated as that output: the
  // caller's slot, never freed by the program.
  std::map<std::string, std::string> output_taking;  // intermediate -> the output taking it
  for (const scheduler::BufferPlan& p : s.buffers) {
    if (p.is_output && !p.in_place_of.empty()) output_taking[p.in_place_of] = p.buffer;
  }
  std::map<std::string, int> live_slot;
  for (const auto& allocations : s.allocate_before) {
    for (const auto& name : allocations) {
      if (!s.plan_of(name)->is_output && !output_taking.count(name)) {
        live_slot.emplace(name, static_cast<int>(live_slot.size()));
      }
    }
  }
  program.num_intermediates = static_cast<int>(live_slot.size());

  // The units the wrapper calls, in order: a function (its steps) or an external step.
  std::vector<std::vector<size_t>> unit_steps;
  std::vector<std::optional<Statement>> calls;  // none for a further result (ResultOf)
  std::vector<int> function_of(program.steps.size(), -1);
  for (size_t f = 0; f < program.functions.size(); ++f) {
    for (size_t i : program.functions[f].steps) function_of[i] = static_cast<int>(f);
  }
  size_t next_site = 0;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    if (step.result_only) {
      unit_steps.push_back({i});
      calls.emplace_back(std::nullopt);
      continue;
    }
    if (step.external) {
      CallExternal call{next_site++, {}};
      for (const lowering::ExternalOperand* op : step.call->operands()) {
        call.operands.push_back(op->buffer);
      }
      unit_steps.push_back({i});
      calls.emplace_back(std::move(call));
      continue;
    }
    const auto f = static_cast<size_t>(function_of[i]);
    if (program.functions[f].steps.front() != i) continue;  // a later step of function f
    unit_steps.push_back(program.functions[f].steps);
    calls.emplace_back(CallKernel{f});
  }
  for (size_t u = 0; u < calls.size(); ++u) {
    for (size_t i : unit_steps[u]) {
      for (const auto& name : s.allocate_before[program.steps[i].fused]) {
        const scheduler::BufferPlan* plan = s.plan_of(name);
        Allocate a;
        a.buffer = name;
        a.size = plan->size;
        a.bytes = plan->bytes;
        a.output = plan->is_output;
        if (!plan->input_storage.empty()) {
          a.input = inputs.at(plan->input_storage);
        } else if (const auto taker = output_taking.find(name); taker != output_taking.end()) {
          a.output = true;
          a.slot = output_slot.at(taker->second);
        } else if (plan->is_output && !plan->in_place_of.empty()) {
          a.slot = output_slot.at(name);
          a.reuses = plan->in_place_of;
          a.in_place = true;
          program.log.push_back(name + " = " + plan->in_place_of +
                                "  # in place: " + plan->in_place_reason + "; " +
                                plan->in_place_of + " is allocated as output " + name);
        } else if (!plan->in_place_of.empty()) {
          a.slot = live_slot.at(name);
          a.reuses = plan->in_place_of;
          a.reuse_slot = live_slot.at(plan->in_place_of);
          a.in_place = true;
          program.log.push_back(name + " = " + plan->in_place_of +
                                "  # in place: " + plan->in_place_reason);
        } else {
          a.slot = plan->is_output ? output_slot.at(name) : live_slot.at(name);
        }
        a.unit = static_cast<int>(u);
        program.body.emplace_back(std::move(a));
      }
    }
    if (calls[u]) program.body.push_back(*calls[u]);
    for (size_t i : unit_steps[u]) {
      for (const auto& name : s.release_after[program.steps[i].fused]) {
        if (inputs.count(name)) {
          program.body.emplace_back(ReleaseInput{name, inputs.at(name)});
        } else {
          program.body.emplace_back(Free{name, live_slot.at(name), static_cast<int>(u)});
        }
      }
    }
  }
}

}  // namespace stax::program
