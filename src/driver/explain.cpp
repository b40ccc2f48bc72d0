// Rendering of a Compilation for people (text) and tools (JSON). The text is rendered from
// the JSON document so that both always say the same.
#include "driver/explain.h"

#include <map>
#include <sstream>

#include "driver/external_calls.h"
#include "index/shape_exprs.h"

namespace stax {

using nlohmann::json;

namespace {

// A size as explain prints it: a number, or the expression over the size symbols (issue 33).
json expr_json(const index::Expr& e) {
  if (const std::optional<int64_t> c = e.constant_value()) return *c;
  return index::to_string(e);
}
json exprs_json(const std::vector<index::Expr>& exprs) {
  json out = json::array();
  for (const index::Expr& e : exprs) out.push_back(expr_json(e));
  return out;
}

template <typename Dep>
std::string deps_string(const std::vector<Dep>& deps) {
  std::string out = "[";
  for (size_t k = 0; k < deps.size(); ++k) out += (k ? ", " : "") + deps[k].to_string();
  return out + "]";
}

// Provenance as explain's JSON holds it, and back for the text (one formatter for both, the
// one the kernel comments use).
json source_ops_json(const std::vector<lowering::SourceOp>& ops) {
  json out = json::array();
  for (const auto& s : ops) out.push_back({{"op", s.op}, {"value", s.value}});
  return out;
}

std::string source_ops_text(const json& ops) {
  std::vector<lowering::SourceOp> list;
  for (const auto& s : ops) list.push_back({-1, s["op"].get<std::string>(), s["value"]});
  return lowering::format_source_ops(list);
}

}  // namespace

json explain_json(const Compilation& c, const driver::ExternalPlans* plans) {
  const auto& s = c.schedule;
  json doc;
  doc["graph"] = c.lowered.name;
  doc["lowering"] = c.lowered.log;
  std::set<std::string> produced;
  for (const auto& b : c.lowered.buffers) produced.insert(b.name);
  json nodes = json::array();
  for (const auto& n : s.nodes) {
    std::vector<scheduler::MemoryDep> met, unmet;
    for (const auto& d : n.read_deps) (produced.count(d.buffer) ? unmet : met).push_back(d);
    std::vector<scheduler::WholeDep> whole_met, whole_unmet;
    for (const auto& d : n.whole_read_deps) {
      (produced.count(d.buffer) ? whole_unmet : whole_met).push_back(d);
    }
    auto joined = [](const std::string& memory, const std::string& whole) {
      if (whole == "[]") return memory;
      if (memory == "[]") return whole;
      return memory.substr(0, memory.size() - 1) + ", " + whole.substr(1);
    };
    const char* kind = n.is_external() ? "external" : n.is_reduction() ? "reduction" : "pointwise";
    nodes.push_back({{"name", n.name},
                     {"buffer", n.write.buffer},
                     {"origin", n.buffer->origin},
                     {"kind", kind},
                     {"writes", deps_string(std::vector<scheduler::MemoryDep>{n.write_dep})},
                     {"unmet_dependencies", joined(deps_string(unmet), deps_string(whole_unmet))},
                     {"met_dependencies", joined(deps_string(met), deps_string(whole_met))},
                     {"group", "(" + scheduler::sizes_string(n.sizes()) + ", " +
                                   scheduler::sizes_string(n.reduction_sizes()) + ")"},
                     {"dead", static_cast<bool>(s.dead[static_cast<size_t>(n.id)])}});
  }
  doc["nodes"] = nodes;
  doc["dead_nodes"] = s.dead_node_log;
  json rounds = json::array();
  for (const auto& r : s.fusion_log.rounds) {
    json cands = json::array();
    for (const auto& cand : r.candidates) {
      cands.push_back({{"first", cand.first},
                       {"second", cand.second},
                       {"legal", cand.legal},
                       {"fused", cand.fused},
                       {"reason", cand.reason},
                       {"score", cand.score.to_string()},
                       {"shared_bytes", cand.score.shared_bytes}});
    }
    rounds.push_back({{"round", r.round},
                      {"possible_fusions", r.possible},
                      {"candidates", cands},
                      {"fused", r.fused}});
  }
  doc["fusion_rounds"] = rounds;
  doc["epilogues"] = s.epilogue_log.lines;
  doc["loop_splits"] = s.loop_split_log.lines;
  json finals = json::array();
  for (const auto& f : s.kernels) {
    json members = json::array();
    for (int id : f.members()) {
      const auto& n = s.nodes[static_cast<size_t>(id)];
      members.push_back(n.name);
    }
    const bool external =
        f.members().size() == 1 && s.nodes[static_cast<size_t>(f.members()[0])].is_external();
    finals.push_back({{"name", f.name},
                      {"kind", external ? std::string("ExternalNode") : f.kind_name()},
                      {"group", f.group_string()},
                      {"outer_loop_fusion_depth", f.outer.size()},
                      {"members", members}});
  }
  doc["final_nodes"] = finals;
  // Each loop's graph ops: what its kernel IR carries (kernel::Kernel::source_ops, filled
  // from the same fused node).
  std::map<std::string, std::vector<lowering::SourceOp>> ops_of;
  for (const auto& f : s.kernels) ops_of[f.name] = f.source_ops(s.nodes);
  json kernels = json::array();
  for (const auto& k : c.module.kernels) {
    json loops = json::array();
    for (const auto& l : k.loops) {
      loops.push_back({{"fused_node", l.fused_node},
                       {"forms", l.nest_forms},
                       {"parallel_depth", l.parallel_depth},
                       {"ops", source_ops_json(ops_of.at(l.fused_node))}});
    }
    kernels.push_back({{"name", k.name}, {"parallel_region", k.parallel_region}, {"loops", loops}});
  }
  doc["kernels"] = kernels;
  // The library calls (issue 14): what each computes, through which library, and why.
  json externals = json::array();
  for (size_t k = 0; k < c.module.externals.size(); ++k) {
    const program::ExternalSite& e = c.module.externals[k];
    json operands = json::array();
    for (const lowering::ExternalOperand* op : e.call->operands()) {
      operands.push_back({{"buffer", op->buffer},
                          {"sizes", exprs_json(op->sizes)},
                          {"strides", exprs_json(op->strides)},
                          {"offset", expr_json(op->offset)}});
    }
    externals.push_back({{"site", k},
                         {"op", e.call->op},
                         {"output", e.output},
                         {"operands", operands},
                         {"alpha", e.call->alpha},
                         {"beta", e.call->beta},
                         {"library", e.call->library},
                         {"epilogue",
                          [&] {
                            std::string chain;
                            for (const auto& op : e.epilogue) {
                              chain += (chain.empty() ? "" : ", ") + op.to_string();
                            }
                            return chain;
                          }()},
                         {"reason", e.call->reason}});
    if (!e.further_results.empty()) externals.back()["further_results"] = e.further_results;
    if (e.call->attention) {
      // The blocking the runtime's cost model picks on this machine (external/attention.h).
      const external::AttentionBlocks b =
          external::choose_attention_blocks(driver::attention_spec(*e.call->attention, e));
      externals.back()["blocks"] = {
          {"query_rows", b.query_rows}, {"keys", b.keys}, {"reason", b.reason}};
      externals.back()["packing"] =
          external::choose_attention_packing(driver::attention_spec(*e.call->attention, e),
                                             e.call->attention->backward)
              .reason;
    }
    if (plans != nullptr && !e.call->convolution && !e.call->attention && !e.call->scatter &&
        !e.call->scan) {
      externals.back()["plan"] = plans->implementation(k);
    }
    if (e.call->convolution) {
      const lowering::ConvolutionWindow& w = *e.call->convolution;
      externals.back()["window"] = {{"stride", w.stride},
                                    {"padding", w.padding},
                                    {"dilation", w.dilation},
                                    {"groups", w.groups}};
      // The memory formats the runtime's plan asks oneDNN for on this machine, and why.
      externals.back()["formats"] = external::ConvolutionPlan::automatic_formats(
          driver::convolution_spec(*e.call, index::static_values(e.output_sizes, "explain"),
                                   index::static_values(e.output_strides, "explain"), e.dtype),
          c.module.options.num_threads);
    }
  }
  doc["external_calls"] = externals;
  doc["host_program"] = c.module.program_log;
  // Step 5's order (memory_order.h) and M* of the allocated buffers (Definition 7.5).
  json order = {{"peak_bytes", s.peak_bytes}};
  if (!s.memory_order.candidates.empty()) {
    order["reason"] = s.memory_order.reason;
    json candidates = json::array();
    for (const auto& cand : s.memory_order.candidates) {
      candidates.push_back({{"strategy", cand.strategy}, {"peak_bytes", cand.peak}});
    }
    order["candidates"] = candidates;
  }
  doc["memory_order"] = order;
  doc["simd"] = std::string(runtime::simd_level_name(c.module.options.simd));
  doc["threads"] = c.module.options.num_threads;
  doc["target"] = c.module.options.describe();
  // The wrapper allocates a kernel function's buffers before calling it and frees them after
  // it returns: name the kernel function that runs each loop.
  std::map<std::string, std::string> function_of;
  for (const auto& k : c.module.kernels) {
    for (const auto& l : k.loops) function_of[l.fused_node] = k.name;
  }
  // A CUDA target: the partition is made, and each final node is one GPU kernel, which the
  // CUDA pass list (issue 35, point 3) does not generate yet.
  const bool gpu = c.module.options.device == target::DeviceKind::Cuda;
  doc["device"] = gpu ? "cuda:" + c.module.options.cuda.arch() : "cpu";
  if (gpu && c.cuda) {
    json kernels = json::array();
    for (const auto& k : c.cuda->kernels) {
      json entry = {{"fused_node", k.fused_node}, {"ops", source_ops_json(k.ops)}};
      if (!k.refused.empty()) {
        entry["refused"] = k.refused;
      } else {
        entry["function"] = k.function;
        entry["form"] = k.launch.form;
        entry["reason"] = k.launch.reason;
        entry["launch"] = k.launch.launch_reason;
        entry["threads_per_row"] = k.launch.threads_per_row;
        entry["rows_per_block"] = k.launch.rows_per_block;
      }
      kernels.push_back(entry);
    }
    doc["cuda_kernels"] = kernels;
    if (!c.cuda->ir_log.empty()) doc["kernel_ir"] = c.cuda->ir_log;
  }
  if (gpu) {
    for (size_t k = 0; k < s.kernels.size(); ++k) {
      function_of[s.kernels[k].name] = "GPU kernel " + std::to_string(k);
    }
  }
  for (size_t k = 0; k < c.module.externals.size(); ++k) {
    for (const auto& f : s.kernels) {
      for (int id : f.members()) {
        if (s.nodes[static_cast<size_t>(id)].write.buffer == c.module.externals[k].output) {
          function_of[f.name] = "external call " + std::to_string(k);
        }
      }
    }
  }
  json buffers = json::array();
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const std::string& function = function_of[s.kernels[k].name];
    for (const auto& b : s.allocate_before[k]) {
      const auto* p = s.plan_of(b);
      const auto placed = c.module.buffer_placement.find(b);
      buffers.push_back(
          {{"event", "allocate"},
           {"buffer", b},
           {"bytes", p->bytes},
           {"output", p->is_output},
           {"placement", placed == c.module.buffer_placement.end() ? "" : placed->second},
           {"at", function},
           {"loop", s.kernels[k].name}});
    }
    for (const auto& b : s.release_after[k]) {
      const auto* p = s.plan_of(b);
      // An intermediate in the arena is not freed: its lifetime ends and its range of the
      // arena serves buffers that come later (plan_arena.cpp).
      const auto placed = c.module.buffer_placement.find(b);
      const bool in_arena = placed != c.module.buffer_placement.end() &&
                            placed->second.find("arena offset ") != std::string::npos;
      buffers.push_back({{"event", !p         ? "release input"
                                   : in_arena ? "lifetime ends"
                                              : "free"},
                         {"buffer", b},
                         {"at", function},
                         {"loop", s.kernels[k].name}});
    }
  }
  for (const auto& p : s.buffers) {
    if (p.elided) buffers.push_back({{"event", "elided"}, {"buffer", p.buffer}});
    if (p.localized) {
      buffers.push_back({{"event", "local"},
                         {"buffer", p.buffer},
                         {"elements", p.local_elements},
                         {"reason", p.local_reason},
                         {"at", s.kernels[static_cast<size_t>(p.producer)].name}});
    }
  }
  doc["buffers"] = buffers;
  // explain --ir: the kernel IR of every fused node after each pass of kernel/pipeline.cpp.
  if (!c.module.ir_log.empty()) doc["kernel_ir"] = c.module.ir_log;
  return doc;
}

std::string explain_text(const Compilation& c, bool verbose, const driver::ExternalPlans* plans) {
  const json doc = explain_json(c, plans);
  std::ostringstream out;
  out << "graph " << doc["graph"].get<std::string>() << "\n";
  out << "target: " << doc["target"].get<std::string>() << "\n";
  out << "\nlowering:\n";
  if (doc["lowering"].empty()) out << "  (no value stored beyond reductions and outputs)\n";
  for (const auto& l : doc["lowering"]) out << "  " << l.get<std::string>() << "\n";
  out << "\nnodes:\n";
  for (const auto& n : doc["nodes"]) {
    const std::string name = n["name"];
    const bool external = n["kind"].get<std::string>() == "external";
    out << "  " << name
        << (external ? ": ExternalNode(ExternalCall)  # " : ": SchedulerNode(ComputedBuffer)  # ")
        << n["origin"].get<std::string>() << (n["dead"].get<bool>() ? " (dead)" : "") << "\n";
    out << "  " << name << ".writes = " << n["writes"].get<std::string>() << "\n";
    out << "  " << name << ".unmet_dependencies = " << n["unmet_dependencies"].get<std::string>()
        << "\n";
    out << "  " << name << ".met_dependencies = " << n["met_dependencies"].get<std::string>()
        << "\n";
    out << "  " << name << ".group.iteration = " << n["group"].get<std::string>() << "\n";
  }
  for (const auto& d : doc["dead_nodes"]) out << "  " << d.get<std::string>() << "\n";
  out << "\nfusion:\n";
  for (const auto& r : doc["fusion_rounds"]) {
    out << "  round " << r["round"].get<int>() << ": found " << r["possible_fusions"].get<int>()
        << " possible fusions\n";
    size_t refused = 0;  // by can_fuse
    size_t skipped = 0;  // legal, but a node already fused this round, or a cycle
    for (const auto& cand : r["candidates"]) {
      const std::string pair =
          cand["first"].get<std::string>() + " with " + cand["second"].get<std::string>();
      if (cand["fused"].get<bool>()) {
        out << "    fusing " << pair << ": " << cand["reason"].get<std::string>() << ", score "
            << cand["score"].get<std::string>() << "\n";
      } else if (cand["legal"].get<bool>()) {
        ++skipped;
        if (verbose) {
          out << "    not fusing " << pair << ": " << cand["reason"].get<std::string>() << "\n";
        }
      } else {
        ++refused;
        if (verbose) {
          out << "    cannot fuse " << pair << ": " << cand["reason"].get<std::string>() << "\n";
        }
      }
    }
    if (!verbose && refused + skipped > 0) {
      auto count = [](size_t n, const char* what) {
        return std::to_string(n) + (n == 1 ? " pair " : " pairs ") + what;
      };
      out << "    ";
      if (refused > 0) out << count(refused, "refused") << (skipped > 0 ? ", " : "");
      if (skipped > 0) out << count(skipped, "legal but not fused");
      out << "; --verbose lists each with its reason\n";
    }
    for (const auto& f : r["fused"]) out << "    " << f.get<std::string>() << "\n";
  }
  for (const auto& e : doc["epilogues"]) out << "  epilogue: " << e.get<std::string>() << "\n";
  for (const auto& e : doc["loop_splits"]) out << "  loop: " << e.get<std::string>() << "\n";
  out << "\nfinal nodes:\n";
  for (const auto& f : doc["final_nodes"]) {
    out << "  " << f["name"].get<std::string>() << ": " << f["kind"].get<std::string>()
        << ", group " << f["group"].get<std::string>();
    if (f["outer_loop_fusion_depth"].get<int>() > 0) {
      out << ", outer-loop fusion depth " << f["outer_loop_fusion_depth"].get<int>();
    }
    out << "\n";
  }
  if (doc["device"].get<std::string>() != "cpu") {
    out << "\nkernels (" << doc["device"].get<std::string>() << "): one per final node, "
        << doc["cuda_kernels"].size() << " in all\n";
    for (const auto& k : doc["cuda_kernels"]) {
      out << "  " << k["fused_node"].get<std::string>() << ": ";
      if (k.contains("refused")) {
        out << "no CUDA kernel: " << k["refused"].get<std::string>() << "\n";
        continue;
      }
      out << k["function"].get<std::string>() << ", " << k["form"].get<std::string>() << " ("
          << k["reason"].get<std::string>() << ")\n    launch: " << k["launch"].get<std::string>()
          << "\n      ops: " << source_ops_text(k["ops"]) << "\n";
    }
  } else {
    out << "\nkernels (" << doc["simd"].get<std::string>() << ", " << doc["threads"].get<int>()
        << " threads):\n";
  }
  for (const auto& k : doc["kernels"]) {
    out << "  " << k["name"].get<std::string>() << ": " << k["loops"].size() << " loop(s)"
        << (k["parallel_region"].get<bool>() ? ", one parallel region" : ", serial") << "\n";
    for (const auto& l : k["loops"]) {
      out << "    " << l["fused_node"].get<std::string>() << ": parallel depth "
          << l["parallel_depth"].get<int>() << "; ";
      std::string forms;
      for (const auto& f : l["forms"]) forms += (forms.empty() ? "" : ", ") + f.get<std::string>();
      out << forms << "\n";
      out << "      ops: " << source_ops_text(l["ops"]) << "\n";
    }
  }
  if (!doc["external_calls"].empty()) {
    out << "\nexternal calls:\n";
    for (const auto& e : doc["external_calls"]) {
      out << "  external call " << e["site"].get<size_t>() << ": " << e["output"].get<std::string>()
          << " = " << e["op"].get<std::string>() << "(";
      std::string args;
      for (const auto& op : e["operands"]) {
        std::string layout = op["buffer"].get<std::string>() + " sizes " +
                             scheduler::sizes_string(op["sizes"].get<std::vector<int64_t>>()) +
                             " strides " +
                             scheduler::sizes_string(op["strides"].get<std::vector<int64_t>>());
        if (op["offset"].get<int64_t>() != 0) {
          layout += " offset " + std::to_string(op["offset"].get<int64_t>());
        }
        args += (args.empty() ? "" : ", ") + layout;
      }
      out << args << ")";
      if (e["alpha"].get<double>() != 1.0) out << " alpha " << e["alpha"].get<double>();
      if (e["op"] == "addmm" || e["op"] == "baddbmm") out << " beta " << e["beta"].get<double>();
      if (e.contains("window")) {
        const auto& w = e["window"];
        out << " stride " << scheduler::sizes_string(w["stride"].get<std::vector<int64_t>>())
            << " padding " << scheduler::sizes_string(w["padding"].get<std::vector<int64_t>>())
            << " dilation " << scheduler::sizes_string(w["dilation"].get<std::vector<int64_t>>())
            << " groups " << w["groups"].get<int64_t>();
      }
      if (!e["epilogue"].get<std::string>().empty()) {
        out << " then " << e["epilogue"].get<std::string>();
      }
      out << "\n    through " << e["library"].get<std::string>() << ": "
          << e["reason"].get<std::string>() << "\n";
      if (e.contains("further_results")) {
        std::string results;
        for (const auto& r : e["further_results"]) {
          const std::string name = r.get<std::string>();
          results += (results.empty() ? "" : ", ") + (name.empty() ? "(not kept)" : name);
        }
        out << "    also writes " << results << "\n";
      }
      if (e.contains("formats")) {
        out << "    formats " << e["formats"].get<std::string>() << "\n";
      }
      if (e.contains("plan") && !e["plan"].get<std::string>().empty()) {
        out << "    plan: " << e["plan"].get<std::string>() << "\n";
      }
      if (e.contains("blocks")) {
        const auto& b = e["blocks"];
        out << "    blocks of " << b["query_rows"].get<int64_t>() << " query rows x "
            << b["keys"].get<int64_t>() << " keys: " << b["reason"].get<std::string>() << "\n";
        if (e.contains("packing"))
          out << "    operands: " << e["packing"].get<std::string>() << "\n";
      }
    }
  }
  out << "\nkernel order (Section 7.5):\n";
  const auto& order = doc["memory_order"];
  if (order.contains("reason")) out << "  " << order["reason"].get<std::string>() << "\n";
  out << "  peak of the allocated buffers (M*): " << order["peak_bytes"].get<int64_t>()
      << " bytes\n";
  if (doc["device"].get<std::string>() == "cpu") {
    out << "\nhost program:\n";
    for (const auto& line : doc["host_program"]) out << "  " << line.get<std::string>() << "\n";
  }
  out << "\nbuffers:\n";
  for (const auto& b : doc["buffers"]) {
    const std::string event = b["event"];
    out << "  " << event << " " << b["buffer"].get<std::string>();
    if (event == "allocate") {
      const std::string placement = b.value("placement", "");
      const bool in_place = placement.rfind("in place", 0) == 0;
      out << " (" << b["bytes"].get<int64_t>() << " bytes"
          << (b["output"].get<bool>() && !in_place ? ", output" : "")
          << (placement.empty() || (b["output"].get<bool>() && !in_place) ? "" : ", " + placement)
          << ") before " << b["at"].get<std::string>() << " (first written by "
          << b["loop"].get<std::string>() << ")";
    } else if (event == "elided") {
      out << " (kept in registers, never stored)";
    } else if (event == "local") {
      out << " in " << b["at"].get<std::string>() << " (" << b["reason"].get<std::string>() << ")";
    } else {
      out << " after " << b["at"].get<std::string>() << " (last used by "
          << b["loop"].get<std::string>() << ")";
    }
    out << "\n";
  }
  if (doc.contains("kernel_ir")) {
    out << "\nkernel IR after each pass:\n";
    for (const auto& step : doc["kernel_ir"]) out << step.get<std::string>();
  }
  return out.str();
}

}  // namespace stax
