// One step of the random program generator that applies an op of the catalogue
// (op_catalog.h) — any registered pointwise op, reduction or view, on any dtype it accepts —
// to values of the program so far. Operands are values computed without rounding (inputs,
// views, integer results, selections), so one op of them is as well-conditioned as its
// catalogue domain makes it: operands whose domain is restricted (positive, unit, nonzero,
// shift counts) are inputs mapped into the domain by exact or correctly rounded ops
// (abs(x) + 0.5, x * 0.5, where(x == 0, 1, x)), and index tensors are int64 inputs taken
// modulo the indexed size. A result that is rounded is a final value (an output, never an
// operand), so that no rounding difference is amplified by a later op.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace stax::fuzz {

struct PoolValue {
  std::string name;
  std::vector<int64_t> sizes;
  DType dtype = DType::Float32;
  bool exact = true;   // computed without rounding
  double bound = 1.0;  // |element| <= bound (floats)
  bool is_input = false;
};

struct CatalogStep {
  std::vector<std::string> new_inputs;  // "name: i64[3, 4]" declarations to add
  std::vector<std::string> statements;  // "name = op(...)", the last one the result
  PoolValue result;
};

struct CatalogStepContext {
  std::mt19937_64* rng = nullptr;
  const std::vector<PoolValue>* pool = nullptr;
  std::function<std::string()> fresh_name;        // a new value name
  std::function<std::string()> fresh_input_name;  // a new input name
  // "case dtype" pairs not to use (the known failures); null: none.
  const std::set<std::string>* excluded = nullptr;
  // The type of `result` in the program extended by the step, or nullopt when it does not
  // parse (an op x dtype x shape the registry refuses).
  std::function<std::optional<ir::TensorType>(const CatalogStep& step, const std::string& result)>
      result_type;
};

// nullopt when no catalogue op applies this time.
std::optional<CatalogStep> draw_catalog_step(const CatalogStepContext& context);

}  // namespace stax::fuzz
