// Test helpers for the index algebra: readable gtest output for Expr and collapse results.
#pragma once

#include <ostream>

#include "index/expr.h"

namespace stax::index {

inline void PrintTo(const Expr& e, std::ostream* os) {
  *os << to_string(e);
}

inline void PrintTo(const CollapsedIndex& c, std::ostream* os) {
  *os << to_string(c.index) << " over {";
  for (size_t i = 0; i < c.vars.size(); ++i) {
    *os << (i > 0 ? ", " : "") << c.vars[i].name << ": " << to_string(c.vars[i].extent);
  }
  *os << "}";
}

inline void PrintTo(const LoopVar& l, std::ostream* os) {
  *os << l.name << ": " << to_string(l.extent);
}

}  // namespace stax::index
