// The code-generating OpsHandler: turns the bodies of the nodes of one loop nest into C++
// statements, in scalar form or in vectorized form along one loop variable (Section 8.1).
// Common subexpressions are emitted once; values that do not depend on the vectorized
// variable stay scalar until combined with a vector. Reductions accumulate into a
// Vectorized<float> of W lanes, combined after the loop by vec_reduce_* (Proposition 8.1);
// sums of blocked loops accumulate into block accumulators folded by block_end()
// (codegen/cascade_sum.h).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lowering/ops_handler.h"

namespace stax::codegen {

struct EmitterConfig {
  bool vectorized = false;
  std::string vector_var;   // the loop variable stepped by W
  std::string count;        // lanes valid in this iteration: "W" literal or a tail expression
  bool full_vector = true;  // count == W (main loop): full loads and stores
  // Vectorized along a pointwise variable of a reduction nest (a column reduction): each
  // lane accumulates its own output, so accumulators are stored as vectors, never combined.
  bool vector_over_pointwise = false;
  // Appended to accumulator names, so that several copies of a body can share one scope.
  std::string name_suffix;
  // The reduction loops are blocked (cascade_blocking): sums accumulate into a block
  // accumulator, which block_end() adds into the double outer accumulator.
  bool cascade = false;
  // Parallel reduction over the reduction loop: each thread stores its accumulator into a
  // shared array named <partial_prefix><acc> of STAX_MAX_THREADS elements (declared by
  // kernel_preamble()), and final_combine() combines those of the team in thread order.
  std::string partial_prefix;
  index::RangeMap ranges;                // every loop variable in scope
  std::set<std::string> input_buffers;   // named in_<name> in C++
  std::set<std::string> elided_buffers;  // kept in registers, never stored
  // Per-outer-iteration local arrays: indexed with the outer loop variables set to 0.
  std::set<std::string> localized_buffers;
  std::map<std::string, index::Expr> zero_outer;
  // Loads served from an L1 tile (the 2-D tiled form): "<buffer>@<index>" -> tile array,
  // laid out [tile_outer_var - tile_outer_var_tile][vector_var - vector_var_tile].
  std::map<std::string, std::string> tiled_loads;
  std::string tile_outer_var;
  int64_t tile_size = 0;
};

class BodyEmitter final : public lowering::OpsHandler {
 public:
  explicit BodyEmitter(EmitterConfig config) : config_(std::move(config)) {}

  // Statements of the loop body, of the part before the reduction loops (accumulator
  // declarations) and after them (combining accumulators, storing reductions).
  const std::string& body() const { return body_; }
  const std::string& before_reduction() const { return before_; }
  const std::string& after_reduction() const { return after_; }
  // Statements ending one block of a blocked reduction loop (config.cascade).
  const std::string& block_end() const { return block_end_; }
  const std::string& kernel_preamble() const { return preamble_; }
  const std::string& final_combine() const { return final_; }

  lowering::OpsValue load(const std::string& buffer, const index::Expr& index,
                          DType dtype) override;
  lowering::OpsValue constant(double value, DType dtype) override;
  lowering::OpsValue compute(lowering::PointwiseOp op, std::span<const lowering::OpsValue> args,
                             DType result) override;
  lowering::OpsValue to_dtype(lowering::OpsValue value, DType dtype) override;
  lowering::OpsValue index_value(const index::Expr& index, DType dtype) override;
  index::Expr indirect_index(lowering::OpsValue value, int64_t size,
                             const std::string& what) override;
  void push_mask(lowering::OpsValue mask) override;
  void pop_mask() override;
  lowering::OpsValue reduction(lowering::ReductionType type, lowering::OpsValue value) override;
  void store(const std::string& buffer, const index::Expr& index,
             lowering::OpsValue value) override;
  void store_reduction(const std::string& buffer, const index::Expr& index,
                       lowering::OpsValue value) override;

  // The C++ name of a buffer's pointer.
  static std::string pointer_name(const std::string& buffer, bool is_input);

 private:
  struct Emitted {
    std::string name;
    bool vector;
    DType dtype;
  };
  lowering::OpsValue define(const std::string& expr, bool vector, DType dtype);
  std::string as_vector(const lowering::OpsValue& v);
  std::string index_cpp(const index::Expr& e) const;
  // The simplified index of an access, made local for localized buffers.
  index::Expr access_index(const std::string& buffer, const index::Expr& e) const;
  // The index of lane `lane` (a variable of the generated code) of a vector access.
  std::string lane_index_cpp(const index::Expr& simplified) const;
  std::string store_code(const std::string& buffer, const index::Expr& index,
                         const lowering::OpsValue& value);
  std::string ptr(const std::string& buffer) const;

  EmitterConfig config_;
  std::string body_;
  std::string before_;
  std::string after_;
  std::string block_end_;
  std::string preamble_;
  std::string final_;
  std::map<std::string, lowering::ReductionType> accumulator_types_;
  std::vector<Emitted> values_;
  std::map<std::string, int> cse_;
  std::map<std::string, lowering::OpsValue> elided_values_;
  int reductions_ = 0;
};

std::string float_literal(double value);

}  // namespace stax::codegen
