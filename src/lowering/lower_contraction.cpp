// Lowering of contractions (mm, bmm, addmm, baddbmm): issue 14. Being written; until it lands
// no registered op has this category.
#include <stdexcept>

#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredValue Lowerer::lower_contraction(const ir::Node& node, const ir::Value&) {
  throw std::invalid_argument("lowering: no lowering for contraction " + node.op + " yet");
}

}  // namespace stax::lowering
