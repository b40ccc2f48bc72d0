// The state lowering keeps for each graph value: a loader, and, when the value is stored data
// seen through views, the strided layout over that storage.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "index/shape_exprs.h"
#include "lowering/composed_nodes.h"
#include "lowering/loop_ir.h"
#include "lowering/materialization.h"

namespace stax::lowering {

struct StridedLayout {
  std::string buffer;
  bool is_input = false;
  std::vector<index::Expr> strides;
  index::Expr offset = 0;
  // For the op families whose lowering does not take size symbols yet (issue 33): they lower
  // static nodes only (Lowerer::refuse_symbolic_sizes), whose layouts are constants.
  std::vector<int64_t> static_strides() const {
    return index::static_values(strides, "lowering", "a stride");
  }
  int64_t static_offset() const { return index::static_value(offset, "lowering", "an offset"); }
};

struct LoweredValue {
  DType dtype = DType::Float32;
  std::vector<index::Expr> sizes;
  // The sizes as constants, for the op families that lower static nodes only (above).
  std::vector<int64_t> static_sizes() const { return index::static_values(sizes, "lowering"); }
  Loader loader;
  // Set while the value only reads stored data, through index rewrites that a strided
  // layout can express.
  std::optional<StridedLayout> layout;
  // True while the value reads stored data without computing anything (a view, possibly one
  // no strided layout expresses). Such values are never materialized.
  bool pure_view = false;
  // What running the loader costs per element (the materialization rule's input).
  BodyStats stats;
  // The ops composed into the loader, for logs ("mul", "exp", ...).
  std::vector<std::string> origin;
  // The graph nodes composed into the loader (what a buffer storing it records).
  ComposedNodes composed;
};

}  // namespace stax::lowering
