// A library call site over size symbols (issue 33): its call's operands and its results'
// layouts are expressions, and the runtime binds the site to the sizes of each call before it
// builds (or finds) the plan for them (driver/external_calls.h).
#include "index/shape_exprs.h"
#include "program/host_program.h"

namespace stax::program {

bool ExternalSite::is_symbolic() const {
  if (call->is_symbolic() || !index::all_constant(output_sizes) ||
      !index::all_constant(output_strides)) {
    return true;
  }
  for (size_t r = 0; r < further_sizes.size(); ++r) {
    if (!index::all_constant(further_sizes[r]) || !index::all_constant(further_strides[r])) {
      return true;
    }
  }
  return false;
}

ExternalSite bind_external_site(const ExternalSite& site,
                                const std::map<std::string, int64_t>& values) {
  ExternalSite bound = site;
  bound.call = std::make_shared<const lowering::ExternalCall>(
      lowering::bind_external_call(*site.call, values));
  auto at = [&](std::vector<index::Expr>& exprs) {
    for (index::Expr& e : exprs) e = index::Expr(index::evaluate(e, values));
  };
  at(bound.output_sizes);
  at(bound.output_strides);
  for (auto& sizes : bound.further_sizes) at(sizes);
  for (auto& strides : bound.further_strides) at(strides);
  return bound;
}

}  // namespace stax::program
