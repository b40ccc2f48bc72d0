// Loop emission for fused nodes.
#include "codegen/loop_codegen.h"

#include <map>
#include <memory>
#include <sstream>

#include "codegen/body_emitter.h"
#include "codegen/cascade_sum.h"
#include "codegen/parallel_depth.h"
#include "scheduler/fusion_rules.h"
#include "scheduler/recording_handler.h"

namespace stax::codegen {

using index::Expr;
using scheduler::FusedNode;
using scheduler::LoopNest;
using scheduler::SchedulerNode;

namespace {

struct Loop {
  std::string var;
  int64_t extent;
};

std::string for_header(const Loop& l) {
  return "for (int64_t " + l.var + " = 0; " + l.var + " < " + std::to_string(l.extent) + "; ++" +
         l.var + ")";
}

// The reduction loops of a nest as emit_reduction_loops takes them: the scalar loops, then the
// full vectors of the vectorized loop (its masked tail is emitted apart), with the iterations
// of each per accumulator lane, which decide the cascade blocking.
struct ReductionLoops {
  std::vector<ReductionLoop> loops;
  std::vector<int64_t> lane_iterations;
};

ReductionLoops reduction_loops(const std::vector<Loop>& scalar, const std::optional<Loop>& vector,
                               int64_t width) {
  ReductionLoops out;
  for (const Loop& l : scalar) {
    out.loops.push_back({l.var, l.extent, 1});
    out.lane_iterations.push_back(l.extent);
  }
  if (vector) {
    const int64_t main_end = vector->extent - vector->extent % width;
    out.loops.push_back({vector->var, main_end, width});
    out.lane_iterations.push_back(main_end / width + (main_end < vector->extent ? 1 : 0));
  }
  return out;
}

// Whether every value the nest touches has a vectorized form.
bool nest_vectorizable(const scheduler::Schedule& s, const FusedNode& f, size_t nest) {
  for (int id : f.nests[nest].nodes) {
    const SchedulerNode& n = s.nodes[static_cast<size_t>(id)];
    scheduler::RecordingHandler rec;
    n.run_body(rec, std::vector<Expr>(n.vars.size(), Expr(0)),
               std::vector<Expr>(n.reduction_vars.size(), Expr(0)));
    for (const auto& r : rec.loads) {
      if (r.dtype != DType::Float32 && r.dtype != DType::Bool) return false;
    }
    for (const auto& r : rec.stores) {
      if (r.dtype != DType::Float32 && r.dtype != DType::Bool) return false;
    }
  }
  return true;
}

class LoopEmitter {
 public:
  LoopEmitter(const scheduler::Schedule& s, const FusedNode& f, const CodegenOptions& o,
              const std::set<std::string>& inputs)
      : s_(s), f_(f), o_(o), inputs_(inputs) {
    for (const auto& p : s.buffers) {
      if (p.elided) elided_.insert(p.buffer);
      if (p.localized) localized_.insert(p.buffer);
    }
    for (size_t j = 0; j < f.outer.size(); ++j) zero_outer_["x" + std::to_string(j)] = Expr(0);
  }

  LoopCode run() {
    LoopCode out;
    out.summary.fused_node = f_.name;
    // Loops Algorithm 8.1 may parallelize: the shared outer loops, or, for a single nest, its
    // pointwise loops (the vectorized one only when it is the only loop).
    std::vector<Loop> parallel_candidates;
    std::vector<int64_t> all_ranges;
    for (size_t j = 0; j < f_.outer.size(); ++j) {
      parallel_candidates.push_back({"x" + std::to_string(j), f_.outer[j]});
    }
    if (f_.outer.empty()) {
      const LoopNest& nest = f_.nests[0];
      for (size_t j = 0; j < nest.sizes.size(); ++j) {
        parallel_candidates.push_back({"x" + std::to_string(j), nest.sizes[j]});
      }
      all_ranges = f_.pointwise_ranges();
      all_ranges.insert(all_ranges.end(), nest.reduction_sizes.begin(), nest.reduction_sizes.end());
    } else {
      // Work of an outer-loop fused node: outer iterations times the largest nest.
      int64_t inner = 1;
      for (const LoopNest& nest : f_.nests) {
        int64_t n = 1;
        for (int64_t e : nest.sizes) n *= e;
        for (int64_t e : nest.reduction_sizes) n *= e;
        inner = std::max(inner, n);
      }
      all_ranges = f_.outer;
      all_ranges.push_back(inner);
    }
    // A reduction with no pointwise loop (one output) splits its reduction loop across the
    // threads, each with its own accumulators, combined in thread order at the end.
    const LoopNest& first = f_.nests[0];
    if (f_.outer.empty() && f_.nests.size() == 1 && first.sizes.empty() &&
        !first.reduction_sizes.empty() &&
        parallel_depth(first.reduction_sizes, o_.num_threads, 1) == 1) {
      out.summary.parallel_depth = 1;
      out.summary.loop_ranges = first.reduction_sizes;
      emit_parallel_reduction(out);
      return out;
    }
    size_t max_depth = parallel_candidates.size();
    const bool pointwise_vectorized = f_.outer.empty() && !f_.nests[0].sizes.empty() &&
                                      vectorize(0) &&
                                      (f_.nests[0].reduction_sizes.empty() || column_reduction(0));
    const bool single_vector_loop = pointwise_vectorized && f_.nests[0].sizes.size() == 1;
    if (pointwise_vectorized && !single_vector_loop) {
      max_depth -= 1;  // the vectorized innermost loop stays within a thread
    }
    const int depth = parallel_depth(all_ranges, o_.num_threads, max_depth);
    out.summary.parallel_depth = depth;
    out.summary.loop_ranges = all_ranges;

    std::ostringstream code;
    code << "// " << f_.name << ": " << f_.group_string() << "\n";
    const std::string pragma_for =
        depth > 0 && !single_vector_loop
            ? "#pragma omp for collapse(" + std::to_string(depth) + ") schedule(static)\n"
            : "";
    if (depth == 0) code << "#pragma omp single\n";
    code << "{\n";
    code << (f_.outer.empty() ? "" : pragma_for);
    for (size_t j = 0; j < f_.outer.size(); ++j) {
      code << for_header({"x" + std::to_string(j), f_.outer[j]}) << " {\n";
    }
    // Slices of the buffers that live within one outer iteration (private to the thread).
    for (int id : f_.members()) {
      const auto& name = s_.nodes[static_cast<size_t>(id)].write.buffer;
      if (const auto* plan = s_.plan_of(name); plan != nullptr && plan->localized) {
        // A one-element array indexed by a constant is a scalar to the C++ compiler (scalar
        // replacement of aggregates): it lives in a register.
        code << (plan->local_elements > 1 ? "alignas(64) " : "")
             << dtype_cpp_type(s_.nodes[static_cast<size_t>(id)].buffer->dtype) << " " << name
             << "[" << plan->local_elements << "];\n";
      }
    }
    for (size_t k = 0; k < f_.nests.size(); ++k) {
      code << emit_nest(k, f_.outer.empty() ? pragma_for : "", single_vector_loop && depth > 0,
                        out.summary);
    }
    for (size_t j = 0; j < f_.outer.size(); ++j) code << "}\n";
    code << "}\n";
    out.code = code.str();
    return out;
  }

 private:
  static constexpr int64_t kTile = 64;

  // What every emitter of a nest of this fused node knows: the loop ranges and how each
  // buffer is held (input, elided, localized).
  EmitterConfig base_config(size_t nest) const {
    EmitterConfig config;
    config.ranges = scheduler::nest_ranges(f_, nest);
    config.input_buffers = inputs_;
    config.elided_buffers = elided_;
    config.localized_buffers = localized_;
    config.zero_outer = zero_outer_;
    return config;
  }
  static constexpr int64_t kColumnBlock = 8;

  // The loads of the nest that read contiguously along `outer_var` but not along
  // `vector_var` (transposed operands), distinct, with their simplified indices.
  std::vector<scheduler::RecordingHandler::Record> transposed_loads(
      size_t nest, const std::string& outer_var, const std::string& vector_var,
      const index::RangeMap& ranges) const {
    scheduler::RecordingHandler rec;
    run_nodes(nest, rec);
    std::vector<scheduler::RecordingHandler::Record> out;
    std::set<std::string> seen;
    for (const auto& load : rec.loads) {
      const Expr idx = index::simplify(load.index, ranges);
      const auto inner = index::stride(idx, vector_var, ranges);
      const auto outer = index::stride(idx, outer_var, ranges);
      if (outer && *outer == 1 && (!inner || (*inner != 0 && *inner != 1)) &&
          !elided_.count(load.buffer) && !localized_.count(load.buffer) &&
          seen.insert(load.buffer + "@" + index::to_string(idx)).second) {
        out.push_back({load.buffer, idx, load.dtype});
      }
    }
    return out;
  }

  // A reduction nest whose reduced loads walk the innermost reduction loop with a stride but
  // the innermost pointwise loop contiguously (a column reduction such as sum over dim 0) is
  // vectorized along that pointwise loop, one output per lane.
  bool column_reduction(size_t nest) const {
    const LoopNest& n = f_.nests[nest];
    if (n.reduction_sizes.empty() || n.sizes.empty() || !vectorize(nest)) return false;
    const index::RangeMap ranges = scheduler::nest_ranges(f_, nest);
    const std::string x = "x" + std::to_string(f_.outer.size() + n.sizes.size() - 1);
    const std::string r = "r" + std::to_string(n.reduction_sizes.size() - 1);
    scheduler::RecordingHandler rec;
    run_nodes(nest, rec);
    bool strided_along_r = false;
    for (const auto& load : rec.loads) {
      const Expr idx = index::simplify(load.index, ranges);
      const auto along_x = index::stride(idx, x, ranges);
      if (!along_x || (*along_x != 0 && *along_x != 1)) return false;
      const auto along_r = index::stride(idx, r, ranges);
      if (!along_r || (*along_r != 0 && *along_r != 1)) strided_along_r = true;
    }
    return strided_along_r;
  }

  bool vectorize(size_t nest) const {
    if (auto it = vectorizable_.find(nest); it != vectorizable_.end()) return it->second;
    const LoopNest& n = f_.nests[nest];
    const bool has_loop = !n.sizes.empty() || !n.reduction_sizes.empty();
    bool ok = o_.simd != runtime::SimdLevel::Scalar && has_loop && nest_vectorizable(s_, f_, nest);
    // An op without a vector form (e.g. comparing two bool vectors) makes the whole nest
    // take the scalar form: try the vectorized emission along each candidate variable.
    std::vector<std::string> candidates;
    if (!n.reduction_sizes.empty())
      candidates.push_back("r" + std::to_string(n.reduction_sizes.size() - 1));
    if (!n.sizes.empty())
      candidates.push_back("x" + std::to_string(f_.outer.size() + n.sizes.size() - 1));
    for (const auto& var : candidates) {
      if (!ok) break;
      EmitterConfig config = base_config(nest);
      config.vectorized = true;
      config.vector_var = var;
      config.count = "1";
      config.vector_over_pointwise = var[0] == 'x' && !n.reduction_sizes.empty();
      try {
        BodyEmitter trial(config);
        run_nodes(nest, trial);
      } catch (const std::invalid_argument&) {
        ok = false;
      }
    }
    vectorizable_[nest] = ok;
    return ok;
  }

  // Runs every node of the nest through a handler (an emitter, or a recorder).
  void run_nodes(size_t nest, lowering::OpsHandler& emitter) const {
    for (int id : f_.nests[nest].nodes) {
      const SchedulerNode& n = s_.nodes[static_cast<size_t>(id)];
      const scheduler::Placement p = scheduler::place(f_, n);
      n.run_body(emitter, p.pointwise, p.reduction);
    }
  }

  // The reduction loops of a nest with the statements of `main` (emitted with `config`) and
  // of the masked tail of the vectorized loop, if any.
  ReductionLoopNest reduction_nest(size_t nest, const EmitterConfig& config,
                                   const ReductionLoops& loops, const BodyEmitter& main,
                                   const std::optional<Loop>& vector_loop) const {
    ReductionLoopNest out;
    out.loops = loops.loops;
    out.blocking = cascade_blocking(loops.lane_iterations);
    out.body = main.body();
    out.block_end = main.block_end();
    if (vector_loop && out.loops.back().extent < vector_loop->extent) {
      const int64_t main_end = out.loops.back().extent;
      EmitterConfig tail_config = config;
      tail_config.full_vector = false;
      tail_config.count = std::to_string(vector_loop->extent - main_end);
      BodyEmitter tail(tail_config);
      run_nodes(nest, tail);
      out.tail = "const int64_t " + vector_loop->var + " = " + std::to_string(main_end) + ";\n" +
                 tail.body();
    }
    return out;
  }

  std::string emit_nest(size_t nest, const std::string& pragma, bool parallel_vector_loop,
                        LoopSummary& summary) const {
    const LoopNest& n = f_.nests[nest];
    std::vector<Loop> pointwise;
    for (size_t j = 0; j < n.sizes.size(); ++j) {
      pointwise.push_back({"x" + std::to_string(f_.outer.size() + j), n.sizes[j]});
    }
    std::vector<Loop> reduction;
    for (size_t j = 0; j < n.reduction_sizes.size(); ++j) {
      reduction.push_back({"r" + std::to_string(j), n.reduction_sizes[j]});
    }
    const bool vec = vectorize(nest);
    const int64_t width = vec ? runtime::simd_width(o_.simd, DType::Float32) : 1;
    EmitterConfig config = base_config(nest);
    config.vectorized = vec;

    const bool column = column_reduction(nest);
    config.vector_over_pointwise = column;
    if (column) {
      return emit_column_reduction(nest, pragma, parallel_vector_loop, config, pointwise, reduction,
                                   width, summary);
    }
    std::vector<Loop>& innermost_owner = reduction.empty() ? pointwise : reduction;
    std::optional<Loop> vector_loop;
    if (vec) {
      vector_loop = innermost_owner.back();
      innermost_owner.pop_back();
      config.vector_var = vector_loop->var;
      config.count = std::to_string(width);
      summary.nest_forms.push_back("vectorized(W=" + std::to_string(width) + ") over " +
                                   vector_loop->var);
    } else {
      summary.nest_forms.push_back("scalar");
    }
    // Transpose-like access (Section 8.2): some load walks the vectorized variable with a
    // large stride but the next-outer variable contiguously. Tiling both loops by T keeps the
    // cache lines of that load in L1 while all their elements are used.
    std::vector<scheduler::RecordingHandler::Record> transposed;
    if (vector_loop && n.reduction_sizes.empty() && !pointwise.empty()) {
      transposed = transposed_loads(nest, pointwise.back().var, vector_loop->var, config.ranges);
    }
    const bool tiled = !transposed.empty();
    if (tiled) {
      summary.nest_forms.back() =
          "tiled(T=" + std::to_string(kTile) + ") " + summary.nest_forms.back();
      // Float operands are transposed through an L1 tile; others are gathered.
      config.tile_outer_var = pointwise.back().var;
      config.tile_size = kTile;
      for (size_t k = 0; k < transposed.size(); ++k) {
        if (transposed[k].dtype != DType::Float32) continue;
        config.tiled_loads[transposed[k].buffer + "@" + index::to_string(transposed[k].index)] =
            "tile" + std::to_string(k);
      }
    }

    ReductionLoops blocked_loops;
    if (!n.reduction_sizes.empty()) {
      blocked_loops = reduction_loops(reduction, vector_loop, width);
      config.cascade = cascade_blocking(blocked_loops.lane_iterations).has_value();
    }
    BodyEmitter main(config);
    run_nodes(nest, main);
    std::ostringstream code;
    code << "{\n" << pragma;
    if (!n.reduction_sizes.empty()) {
      for (const Loop& l : pointwise) code << for_header(l) << " {\n";
      code << main.before_reduction()
           << emit_reduction_loops(reduction_nest(nest, config, blocked_loops, main, vector_loop))
           << main.after_reduction();
      for (size_t j = 0; j < pointwise.size(); ++j) code << "}\n";
      code << "}\n";
      return code.str();
    }
    std::optional<Loop> tiled_outer;
    if (tiled) {
      tiled_outer = pointwise.back();
      pointwise.back() = {tiled_outer->var + "_tile", tiled_outer->extent};
    }
    for (const Loop& l : pointwise) {
      if (tiled && &l == &pointwise.back()) {
        code << "for (int64_t " << l.var << " = 0; " << l.var << " < " << l.extent << "; " << l.var
             << " += " << kTile << ") {\n";
      } else {
        code << for_header(l) << " {\n";
      }
    }
    if (!vector_loop) {
      code << main.body();
    } else {
      const int64_t extent = vector_loop->extent;
      const int64_t main_end = extent - extent % width;
      const std::string& v = vector_loop->var;
      // Inside a tile, the rows of the tiled outer loop.
      auto tile_rows = [&]() {
        const std::string& a = tiled_outer->var;
        return "for (int64_t " + a + " = " + a + "_tile; " + a + " < (" + a + "_tile + " +
               std::to_string(kTile) + " < " + std::to_string(tiled_outer->extent) + " ? " + a +
               "_tile + " + std::to_string(kTile) + " : " + std::to_string(tiled_outer->extent) +
               "); ++" + a + ") {\n";
      };
      if (main_end > 0) {
        if (parallel_vector_loop) code << "#pragma omp for schedule(static)\n";
        if (tiled) {
          const std::string v_end = "(" + v + "_tile + " + std::to_string(kTile) + " < " +
                                    std::to_string(main_end) + " ? " + v + "_tile + " +
                                    std::to_string(kTile) + " : " + std::to_string(main_end) + ")";
          code << "for (int64_t " << v << "_tile = 0; " << v << "_tile < " << main_end << "; " << v
               << "_tile += " << kTile << ") {\n";
          // Read each transposed operand's block along its contiguous direction into L1.
          const std::string& a = tiled_outer->var;
          for (size_t k = 0; k < transposed.size(); ++k) {
            if (transposed[k].dtype != DType::Float32) continue;
            const std::string tile = "tile" + std::to_string(k);
            code << "alignas(64) float " << tile << "[" << kTile * kTile << "];\n"
                 << "for (int64_t " << v << " = " << v << "_tile; " << v << " < " << v_end << "; ++"
                 << v << ") {\n"
                 << tile_rows() << tile << "[(" << a << " - " << a << "_tile) * " << kTile << " + ("
                 << v << " - " << v << "_tile)] = "
                 << BodyEmitter::pointer_name(transposed[k].buffer,
                                              inputs_.count(transposed[k].buffer) > 0)
                 << "[" << index::to_cpp(transposed[k].index, config.ranges) << "];\n}\n}\n";
          }
          code << tile_rows() << "for (int64_t " << v << " = " << v << "_tile; " << v << " < "
               << v_end << "; " << v << " += " << width << ") {\n"
               << main.body() << "}\n}\n}\n";
        } else {
          code << "for (int64_t " << v << " = 0; " << v << " < " << main_end << "; " << v
               << " += " << width << ") {\n"
               << main.body() << "}\n";
        }
      }
      if (main_end < extent) {
        EmitterConfig tail_config = config;
        tail_config.full_vector = false;
        tail_config.count = std::to_string(extent - main_end);
        tail_config.tiled_loads.clear();  // the tail columns are outside every tile
        BodyEmitter tail(tail_config);
        run_nodes(nest, tail);
        if (parallel_vector_loop) code << "#pragma omp single\n";
        if (tiled) code << tile_rows();
        code << "{\nconst int64_t " << v << " = " << main_end << ";\n" << tail.body() << "}\n";
        if (tiled) code << "}\n";
      }
    }
    for (size_t j = 0; j < pointwise.size(); ++j) code << "}\n";
    code << "}\n";
    return code.str();
  }

  void emit_parallel_reduction(LoopCode& out) const {
    const LoopNest& n = f_.nests[0];
    std::vector<Loop> reduction;
    for (size_t j = 0; j < n.reduction_sizes.size(); ++j) {
      reduction.push_back({"r" + std::to_string(j), n.reduction_sizes[j]});
    }
    const bool vec = vectorize(0);
    const int64_t width = vec ? runtime::simd_width(o_.simd, DType::Float32) : 1;
    EmitterConfig config = base_config(0);
    config.vectorized = vec;
    config.partial_prefix = "partial_" + f_.name + "_";
    std::optional<Loop> vector_loop;
    if (vec) {
      vector_loop = reduction.back();
      reduction.pop_back();
      config.vector_var = vector_loop->var;
      config.count = std::to_string(width);
      out.summary.nest_forms.push_back("vectorized(W=" + std::to_string(width) + ") over " +
                                       vector_loop->var + ", split across threads");
    } else {
      out.summary.nest_forms.push_back("scalar, split across threads");
    }
    const ReductionLoops loops = reduction_loops(reduction, vector_loop, width);
    config.cascade = cascade_blocking(loops.lane_iterations).has_value();
    BodyEmitter main(config);
    run_nodes(0, main);
    std::ostringstream code;
    code << "// " << f_.name << ": " << f_.group_string() << "\n{\n" << main.before_reduction();
    // Threads share the outermost loop (its blocks, when it is the blocked one); when the
    // vectorized loop is the only one, one thread adds the tail into its own accumulators.
    ReductionLoopNest nest = reduction_nest(0, config, loops, main, vector_loop);
    nest.outer_pragma = "#pragma omp for schedule(static) nowait\n";
    nest.tail_pragma = "#pragma omp single nowait\n";
    code << emit_reduction_loops(nest);
    code << main.after_reduction() << "}\n#pragma omp barrier\n#pragma omp single\n{\n"
         << main.final_combine() << "}\n";
    out.code = code.str();
    out.preamble = main.kernel_preamble();
  }

  std::string emit_column_reduction(size_t nest, const std::string& pragma,
                                    bool parallel_vector_loop, const EmitterConfig& config,
                                    std::vector<Loop> pointwise, const std::vector<Loop>& reduction,
                                    int64_t width, LoopSummary& summary) const {
    const Loop vector_loop = pointwise.back();
    pointwise.pop_back();
    summary.nest_forms.push_back("vectorized(W=" + std::to_string(width) + ") over " +
                                 vector_loop.var + ", one output per lane");
    EmitterConfig main_config = config;
    main_config.vector_var = vector_loop.var;
    main_config.count = std::to_string(width);
    const ReductionLoops loops = reduction_loops(reduction, std::nullopt, width);
    main_config.cascade = cascade_blocking(loops.lane_iterations).has_value();
    // The reduction loops around `body`, blocked like every sum (cascade_sum.h).
    auto reduction_code = [&](const std::string& body, const std::string& block_end) {
      ReductionLoopNest n;
      n.loops = loops.loops;
      n.blocking = cascade_blocking(loops.lane_iterations);
      n.body = body;
      n.block_end = block_end;
      return emit_reduction_loops(n);
    };
    std::ostringstream code;
    code << "{\n" << pragma;
    for (const Loop& l : pointwise) code << for_header(l) << " {\n";
    auto emit_pass = [&](const EmitterConfig& c) {
      BodyEmitter pass(c);
      run_nodes(nest, pass);
      code << pass.before_reduction() << reduction_code(pass.body(), pass.block_end())
           << pass.after_reduction();
    };
    const std::string& v = vector_loop.var;
    const int64_t main_end = vector_loop.extent - vector_loop.extent % width;
    // Blocks of kColumnBlock vectors per step of the reduction loops: each row contributes
    // whole cache lines, which the next block would otherwise have to fetch again.
    const int64_t block = kColumnBlock * width;
    const int64_t blocks_end = main_end - main_end % block;
    if (blocks_end > 0) {
      std::vector<std::unique_ptr<BodyEmitter>> passes;
      for (int64_t k = 0; k < kColumnBlock; ++k) {
        EmitterConfig c = main_config;
        c.name_suffix = "_" + std::to_string(k);
        passes.push_back(std::make_unique<BodyEmitter>(c));
        run_nodes(nest, *passes.back());
      }
      auto lane_scope = [&](int64_t k) {
        return "{\nconst int64_t " + v + " = " + v + "_block + " + std::to_string(k * width) +
               ";\n";
      };
      if (parallel_vector_loop) code << "#pragma omp for schedule(static)\n";
      code << "for (int64_t " << v << "_block = 0; " << v << "_block < " << blocks_end << "; " << v
           << "_block += " << block << ") {\n";
      std::string bodies;
      std::string block_ends;
      for (int64_t k = 0; k < kColumnBlock; ++k) {
        const BodyEmitter& p = *passes[static_cast<size_t>(k)];
        code << p.before_reduction();
        bodies += lane_scope(k) + p.body() + "}\n";
        block_ends += p.block_end();
      }
      code << reduction_code(bodies, block_ends);
      for (int64_t k = 0; k < kColumnBlock; ++k) {
        code << lane_scope(k) << passes[static_cast<size_t>(k)]->after_reduction() << "}\n";
      }
      code << "}\n";
    }
    if (blocks_end < main_end) {
      if (parallel_vector_loop) code << "#pragma omp for schedule(static)\n";
      code << "for (int64_t " << v << " = " << blocks_end << "; " << v << " < " << main_end << "; "
           << v << " += " << width << ") {\n";
      emit_pass(main_config);
      code << "}\n";
    }
    if (main_end < vector_loop.extent) {
      EmitterConfig tail_config = main_config;
      tail_config.full_vector = false;
      tail_config.count = std::to_string(vector_loop.extent - main_end);
      if (parallel_vector_loop) code << "#pragma omp single\n";
      code << "{\nconst int64_t " << v << " = " << main_end << ";\n";
      emit_pass(tail_config);
      code << "}\n";
    }
    for (size_t j = 0; j < pointwise.size(); ++j) code << "}\n";
    code << "}\n";
    return code.str();
  }

  const scheduler::Schedule& s_;
  const FusedNode& f_;
  const CodegenOptions& o_;
  const std::set<std::string>& inputs_;
  std::set<std::string> elided_;
  std::set<std::string> localized_;
  std::map<std::string, Expr> zero_outer_;
  mutable std::map<size_t, bool> vectorizable_;
};

}  // namespace

LoopCode generate_loop(const scheduler::Schedule& schedule, const FusedNode& fused,
                       const CodegenOptions& options, const std::set<std::string>& input_names) {
  return LoopEmitter(schedule, fused, options, input_names).run();
}

}  // namespace stax::codegen
