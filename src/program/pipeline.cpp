// The host program's passes, in order (issue 14, point 1). Each is logged after it runs when
// the log topics name `program`.
#include "program/pipeline.h"

#include <iostream>
#include <sstream>

namespace stax::program {

HostProgram build_host_program(const scheduler::Schedule& schedule,
                               const kernel::PipelineOptions& kernel_options,
                               const MemoryOptions& memory, const LogTopics& logs) {
  HostProgram program;
  program.schedule = &schedule;
  // Issue 33: a program over size symbols reads them from its inputs and hands them to its
  // kernels; a static one has none.
  if (schedule.graph->is_symbolic()) program.symbols = schedule.graph->symbols;
  const bool log = logs.enabled("program");
  auto after = [&](const char* pass) {
    if (log) std::cerr << "stax: host program after " << pass << ":\n" << describe_program(program);
  };
  lower_steps(program, kernel_options);
  after("lower_steps");
  group_kernel_functions(program);
  after("group_kernel_functions");
  place_buffers(program);
  after("place_buffers");
  if (memory.arena) {
    plan_arena(program);
    after("plan_arena");
  } else if (memory.reuse) {
    reuse_buffers(program);
    after("reuse_buffers");
  }
  return program;
}

std::string describe_program(const HostProgram& program) {
  std::ostringstream out;
  for (const KernelFunction& f : program.functions) {
    out << "  function " << f.name << " (" << f.steps.size() << " loops"
        << (f.parallel_region ? ", one parallel region" : "") << "): " << f.reason << "\n";
  }
  for (size_t k = 0; k < program.externals.size(); ++k) {
    const ExternalSite& e = program.externals[k];
    out << "  external " << k << ": " << e.output << " = " << e.call->op << " through "
        << e.call->library << "\n";
  }
  for (const Statement& st : program.body) {
    out << "    ";
    if (const auto* a = std::get_if<Allocate>(&st)) {
      out << "allocate " << a->buffer << " (";
      if (a->size.is_constant()) {
        out << a->bytes << " bytes, ";
      } else {
        out << index::to_string(a->size) << " bytes (" << a->bytes << " at the hints), ";
      }
      if (a->input >= 0) {
        out << "input " << program.schedule->graph->inputs[static_cast<size_t>(a->input)].name
            << "'s memory, in place)";
      } else if (!a->reuses.empty()) {
        out << "reuses " << a->reuses << ")";
      } else if (a->arena_offset >= 0) {
        out << "arena offset " << a->arena_offset
            << (program.symbols.empty() ? "" : " at the hints") << ")";
      } else {
        out << (a->output ? "output slot " : "live slot ") << a->slot << ")";
      }
    } else if (const auto* f = std::get_if<Free>(&st)) {
      out << "free " << f->buffer;
    } else if (const auto* r = std::get_if<ReleaseInput>(&st)) {
      out << "last use of input " << r->input;
    } else if (const auto* c = std::get_if<CallKernel>(&st)) {
      out << "call " << program.functions[c->function].name;
    } else if (const auto* e = std::get_if<CallExternal>(&st)) {
      out << "call external " << e->site << " (" << program.externals[e->site].call->op << ")";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace stax::program
