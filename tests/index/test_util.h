// Test helpers for the index algebra: common loop variables, readable gtest output for Expr
// and collapse results.
#pragma once

#include <ostream>

#include "index/expr.h"

namespace stax::index {

// The loop variables most tests index with.
inline const Expr i0 = Expr::var("i0");
inline const Expr i1 = Expr::var("i1");
inline const Expr i2 = Expr::var("i2");
inline const Expr c0 = Expr::var("c0");

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
