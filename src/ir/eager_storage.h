// Where the eager interpreter (the oracle) keeps each value of a graph: which storage it
// views, with which strides and offset, decided from the graph alone. Lowering follows it
// wherever storage is observable (`view` refused exactly when eager refuses it, as_strided
// reading its base's storage), and the graph's outputs are checked against it for inputs that
// copy_ overwrites, the one rule the eager interpreter, lowering and the fuzzer's generator
// share (issue 32, point 4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace stax::ir {

// A view of the storage of value `base` (a graph input or a value with storage of its own)
// with these strides and storage offset.
struct EagerLayout {
  int base = -1;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

class EagerLayouts {
 public:
  explicit EagerLayouts(const Graph& graph) : graph_(graph) {}
  // Throws what ir::view_layout throws for a `view` that the strides make impossible.
  const EagerLayout& of(int value_index);

 private:
  EagerLayout step(int value_index);  // its storage parent's layout known
  const Graph& graph_;
  std::unordered_map<int, EagerLayout> layouts_;
};

// A graph output that is an input copy_ overwrites, or a view of one (its eager storage is the
// input's). The graph's values are functional (Section 7.1's renaming), so such an output
// would name the input's contents before the write, which the write destroys in place; in
// PyTorch the same text (`x.copy_(v); return x`) returns the written contents instead. Neither
// reading is safe to guess, so such a graph is refused, and the message names both spellings
// that say what is meant: the copy_'s result for the written value, a clone for the old one.
// (torch.compile's bridge never produces such a graph: AOTAutograd returns the written value.)
struct OverwrittenOutput {
  size_t output = 0;  // position among the graph's outputs
  ValueRef input;     // the input it is or views
  const Node* write;  // the copy_ that overwrites it
  std::string message() const;
  const Graph* graph = nullptr;
};
std::optional<OverwrittenOutput> output_of_overwritten_input(const Graph& graph);
// Throws std::invalid_argument with OverwrittenOutput::message() for the first such output.
void check_no_output_of_overwritten_input(const Graph& graph);

}  // namespace stax::ir
