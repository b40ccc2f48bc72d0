// IndexRule's messages and errors (ir/index_rule.h).
#include "ir/index_rule.h"

namespace stax::ir {

std::string IndexRule::message_for(int64_t value) const {
  std::string out = message;
  const size_t at = out.find("{}");
  if (at != std::string::npos) out.replace(at, 2, std::to_string(value));
  return out;
}

void IndexRule::fail(int64_t value) const {
  if (index_error) throw IndexError(message_for(value));
  throw std::out_of_range(message_for(value));
}

}  // namespace stax::ir
