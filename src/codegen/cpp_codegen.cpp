// The translation unit of a schedule: build the host program, run its passes, print it.
#include "codegen/cpp_codegen.h"

#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <iostream>

#include "index/shape_exprs.h"
#include "ir/checked_arith.h"
#include "ir/graph.h"
#include "kernel/ir_builder.h"
#include "kernel/pipeline.h"
#include "kernel/printer.h"
#include "program/host_printer.h"
#include "program/pipeline.h"

namespace stax::codegen {

namespace {

constexpr const char* kStage = "code generation";

// Every input layout and every buffer must pass layout_problem (ir/checked_arith.h). Then
// each offset a kernel computes in int64, a sum of index * stride terms over one buffer, and
// each partial sum of it, is at most that buffer's strided extent, and every byte count the
// wrapper allocates is exact: the kernels cannot wrap. The IR refuses such graphs already
// (at parse or build time); this keeps code generation safe for lowered graphs from elsewhere.
void check_layouts(const lowering::LoweredGraph& g) {
  // A symbolic program's layouts are checked per call, at the sizes it meets
  // (ir::check_extents_at, which the runtime runs before each call).
  if (g.is_symbolic()) return;
  const std::string where = "code generation of graph '" + g.name + "': ";
  for (const auto& in : g.inputs) {
    if (std::optional<std::string> problem =
            layout_problem(in.dtype, index::static_values(in.sizes, kStage),
                           index::static_values(in.strides, kStage))) {
      throw std::invalid_argument(where + "input '" + in.name + "' (" +
                                  std::string(dtype_name(in.dtype)) + "): " + *problem);
    }
  }
  for (const auto& b : g.buffers) {
    if (std::optional<std::string> problem =
            layout_problem(b.dtype, index::static_values(b.sizes, kStage),
                           index::static_values(b.strides, kStage))) {
      throw std::invalid_argument(where + "buffer '" + b.name + "' (" +
                                  std::string(dtype_name(b.dtype)) + ", for " + b.source +
                                  "): " + *problem);
    }
  }
}

LoopSummary summarize(const kernel::Kernel& k) {
  LoopSummary s;
  s.fused_node = k.name;
  s.nest_forms = kernel::nest_form_names(k);
  s.parallel_depth = k.decisions.parallel_depth;
  s.loop_ranges = k.decisions.parallel_ranges;
  return s;
}

}  // namespace

GeneratedModule generate_cpp(const scheduler::Schedule& s, const CodegenOptions& options) {
  const lowering::LoweredGraph& g = *s.graph;
  check_layouts(g);
  GeneratedModule module;
  module.options = options;
  kernel::PipelineOptions pipeline;
  pipeline.target = options;  // the target::Target part
  pipeline.verify = options.verify_ir;
  const bool log_ir = options.logs.enabled("ir");
  if (options.record_ir || log_ir) {
    pipeline.after_pass = [&](const std::string& pass, const kernel::Kernel& k) {
      std::string text = kernel::describe_after_pass(pass, k);
      if (log_ir) std::cerr << text;
      if (options.record_ir) module.ir_log.push_back(std::move(text));
    };
  }
  const program::HostProgram host =
      program::build_host_program(s, pipeline, options.memory, options.logs);
  module.source = program::print_host_program(host, options.simd, options.num_threads);
  for (const program::KernelFunction& f : host.functions) {
    KernelSummary summary;
    summary.name = f.name;
    summary.parallel_region = f.parallel_region;
    for (size_t i : f.steps) summary.loops.push_back(summarize(host.steps[i].loop));
    module.kernels.push_back(summary);
  }
  module.externals = host.externals;
  module.arena_bytes = host.arena_bytes;
  module.symbols = host.symbols;
  module.program_log = host.log;
  for (const program::Statement& st : host.body) {
    const auto* a = std::get_if<program::Allocate>(&st);
    if (a == nullptr) continue;
    std::string& where = module.buffer_placement[a->buffer];
    if (a->input >= 0) {
      where = "in place in input " + g.inputs[static_cast<size_t>(a->input)].name;
    } else if (a->output && a->in_place) {
      where = "in place of " + a->reuses + ", output slot " + std::to_string(a->slot);
    } else if (a->output) {
      where = "output slot " + std::to_string(a->slot);
    } else if (a->in_place) {
      where = "in place of " + a->reuses +
              (a->arena_offset >= 0 ? ", arena offset " + std::to_string(a->arena_offset) : "") +
              (a->arena_offset >= 0 && !host.symbols.empty() ? " at the hints" : "");
    } else if (a->arena_offset >= 0) {
      where = "arena offset " + std::to_string(a->arena_offset) +
              (host.symbols.empty() ? "" : " at the hints");
    } else if (!a->reuses.empty()) {
      where = "reuses " + a->reuses;
    } else {
      where = "own allocation";
    }
  }

  // Output bindings: every non-input output buffer has its allocator slot.
  for (const auto& out : g.outputs) {
    OutputBinding b;
    b.dtype = out.dtype;
    b.sizes = out.sizes;
    b.strides = out.strides;
    b.offset = out.offset;
    if (out.is_input) {
      b.from_input = true;
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        if (g.inputs[i].name == out.buffer) b.index = static_cast<int>(i);
      }
    } else {
      for (size_t slot = 0; slot < host.output_slots.size(); ++slot) {
        if (host.output_slots[slot] == out.buffer) b.index = static_cast<int>(slot);
      }
    }
    module.outputs.push_back(b);
  }
  for (const std::string& buffer : host.output_slots) {
    const auto* buf = g.find_buffer(buffer);
    if (g.is_symbolic()) {
      module.output_slot_bytes.push_back(index::product(buf->sizes) *
                                         index::Expr(static_cast<int64_t>(dtype_size(buf->dtype))));
    } else {
      module.output_slot_bytes.push_back(
          checked_byte_size(index::static_values(buf->sizes, kStage), buf->dtype).value());
    }
  }
  return module;
}

}  // namespace stax::codegen
