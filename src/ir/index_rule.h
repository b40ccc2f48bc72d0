// How an op that reads through an index tensor (gather, index_select, embedding, index.Tensor)
// validates the index values, as eager PyTorch 2.13 on CPU does. The rule is made once per
// node (ir::indirect_args) and followed by the eager interpreter, by lowering (which hands it
// to OpsHandler::indirect_index) and by compiled kernels, so the three agree on which values
// wrap, which raise, with which message and which Python exception class.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace stax::ir {

// An index value an op refuses where PyTorch raises IndexError (index_select, embedding,
// index.Tensor); the Python extension raises IndexError for it. Ops whose PyTorch error is a
// RuntimeError (gather; index_select along dim 1) throw plain std::out_of_range instead.
class IndexError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

struct IndexRule {
  // Valid values: [-size, size) when `wraps` (a negative value counts from the end once),
  // otherwise [0, size). Only index.Tensor wraps; eager raises for any negative index of
  // gather, index_select and embedding.
  int64_t size = 0;
  bool wraps = false;
  bool index_error = false;  // PyTorch raises IndexError (else RuntimeError)
  // "op: PyTorch's message", with "{}" where the offending value goes.
  std::string message;

  int64_t lowest() const { return wraps ? -size : 0; }
  bool accepts(int64_t value) const { return value >= lowest() && value < size; }
  // The message with `value` in place of "{}".
  std::string message_for(int64_t value) const;
  // Throws IndexError or std::out_of_range (as PyTorch's class) with message_for(value).
  [[noreturn]] void fail(int64_t value) const;
};

}  // namespace stax::ir
