// The kernel IR pipeline of one fused node, in order (the seed's Section 8; compare Halide's
// Lower.cpp): every code-generation decision is one of these passes.
#include "kernel/pipeline.h"

#include "kernel/ir_builder.h"
#include "kernel/printer.h"
#include "kernel/verifier.h"

namespace stax::kernel {

Kernel lower_fused_node(const scheduler::Schedule& schedule, const scheduler::FusedNode& fused,
                        const PipelineOptions& options, int& next_error_code) {
  const bool verifying = options.verify || verification_enabled();
  Kernel k;
  auto done = [&](const std::string& pass) {
    if (verifying) verify(k, pass);
    if (options.after_pass) options.after_pass(pass, k);
  };
  const TargetOptions& target = options.target;

  // The scalar loops of the fused node, its bodies run under the IR-building handler.
  k = build_kernel(schedule, fused, next_error_code);
  done("build");
  // Section 8.3: vectorized, 2-D tiled, column reduction or scalar, per nest, with a reason.
  choose_kernel_form(k, target);
  done("kernel form");
  // Algorithm 8.1 (Section 8.4), and split reductions for single outputs.
  choose_parallel_depth(k, target);
  done("parallel depth");
  // The chosen forms: vector loops with masked tails, column blocks, L1 tiles filled by
  // register transposes (Section 8.2).
  apply_kernel_form(k);
  done("apply kernel form");
  // Blocked float32 sums (cascade_blocking.h).
  block_float_sums(k);
  done("cascade blocking");
  // Section 8.1, Proposition 8.1(2): W independent vector accumulators per reduction —
  // sets Accumulator::independent and spreads the Reduce updates of a vector loop over them.
  spread_independent_accumulators(k, target);
  done("independent accumulators");
  split_reductions(k);
  done("split reductions");
  parallelize(k);
  done("parallelize");
  // Issue 6 point 5: streaming stores for large outputs written once.
  mark_streaming_stores(k, target);
  done("streaming stores");
  // Issue 6 point 8: int32 loop and index arithmetic where every index provably fits.
  narrow_indices(k);
  done("narrow indices");
  // Scalars that depend only on outer loops, computed once per outer iteration.
  hoist_loop_invariants(k);
  done("hoist invariants");
  simplify(k);
  done("simplify");
  return k;
}

std::vector<std::string> nest_form_names(const Kernel& k) {
  std::vector<std::string> out;
  for (const NestDecision& d : k.decisions.nests) {
    std::string form;
    const std::string vec =
        "vectorized(W=" + std::to_string(d.vector_width) + ") over " + d.vector_var;
    switch (d.form) {
      case KernelForm::Scalar:
        form = "scalar";
        break;
      case KernelForm::Vectorized:
        form = vec;
        break;
      case KernelForm::Tiled:
        form = "tiled(T=" + std::to_string(d.tile) + ") " + vec;
        break;
      case KernelForm::ColumnReduction:
        form = vec + ", one output per lane";
        break;
    }
    if (k.decisions.split_reduction) form += ", split across threads";
    out.push_back(form);
  }
  return out;
}

std::string describe_after_pass(const std::string& pass, const Kernel& k) {
  std::string out = "=== " + k.name + " after " + pass + " ===\n" + print_source_ops(k);
  const KernelDecisions& d = k.decisions;
  const auto forms = nest_form_names(k);
  for (size_t i = 0; i < d.nests.size(); ++i) {
    out += "// nest " + std::to_string(i) + ": " + forms[i] + " (" + d.nests[i].reason + ")\n";
    if (!d.nests[i].vector_width_reason.empty()) {
      out += "//   W=" + std::to_string(d.nests[i].vector_width) + ": " +
             d.nests[i].vector_width_reason + "\n";
    }
  }
  if (pass != "build" && pass != "kernel form") {
    out +=
        "// parallel depth " + std::to_string(d.parallel_depth) + " (" + d.parallel_reason + ")\n";
  }
  if (!d.index_width_reason.empty()) out += "// " + d.index_width_reason + "\n";
  if (!d.hoisting_reason.empty()) out += "// " + d.hoisting_reason + "\n";
  return out + print_kernel(k);
}

}  // namespace stax::kernel
