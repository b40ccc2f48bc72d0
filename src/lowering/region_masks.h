// Masks over index values, for values defined on a region of their index space (a padded
// tensor's interior, one operand of a concatenation, a convolution window inside its input):
// loads run under the mask (OpsHandler::push_mask) so they never read outside their operand,
// and select_where picks the region's value or the fill.
#pragma once

#include <optional>

#include "index/expr.h"
#include "lowering/ops_handler.h"

namespace stax::lowering {

// idx >= bound, and idx < bound, as boolean values; a bound may be an expression over the size
// symbols (issue 33: the regions of a cat along a dim of size s0).
OpsValue index_at_least(OpsHandler& h, const index::Expr& idx, const index::Expr& bound);
OpsValue index_below(OpsHandler& h, const index::Expr& idx, const index::Expr& bound);
// a && b, or b alone when there is no a yet.
OpsValue both(OpsHandler& h, std::optional<OpsValue> a, OpsValue b);
// Where(mask, x, y) for values of x's dtype; 16-bit floats choose in float32 (exactly: both
// branches widen and narrow back without rounding), as the op vocabulary requires.
OpsValue select_where(OpsHandler& h, OpsValue mask, OpsValue x, OpsValue y);

}  // namespace stax::lowering
