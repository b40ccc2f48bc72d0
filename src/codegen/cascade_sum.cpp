// Blocked summation: the choice of the blocked loop and the emission of the loops.
#include "codegen/cascade_sum.h"

#include <algorithm>

namespace stax::codegen {

std::optional<CascadeBlocking> cascade_blocking(const std::vector<int64_t>& iterations) {
  // Scanning from the innermost loop, the first loop that takes the iterations inside it
  // past one block is strip-mined: the loops inside it make at most one block together.
  int64_t inside = 1;
  for (size_t k = iterations.size(); k-- > 0;) {
    if (iterations[k] == 0) return std::nullopt;
    if (inside * iterations[k] > kCascadeBlock) {
      return CascadeBlocking{k, std::max<int64_t>(1, kCascadeBlock / inside)};
    }
    inside *= iterations[k];
  }
  return std::nullopt;
}

int64_t cascade_error_chain(int64_t length) {
  const int64_t n = std::max<int64_t>(length, 0);
  return std::min(n, kCascadeBlock) + std::min(n, kMaxSumLanes);
}

namespace {

std::string emit_level(const ReductionLoopNest& nest, size_t level) {
  if (level == nest.loops.size()) return nest.body;
  const ReductionLoop& l = nest.loops[level];
  const bool innermost = level + 1 == nest.loops.size();
  const bool blocked = nest.blocking && nest.blocking->level == level;
  const std::string pragma = level == 0 ? nest.outer_pragma : "";
  const std::string inner = emit_level(nest, level + 1);
  const std::string extent = std::to_string(l.extent);
  const std::string step = std::to_string(l.step);
  std::string code;
  if (l.extent > 0) {
    if (blocked) {
      const std::string block = std::to_string(nest.blocking->chunk * l.step);
      const std::string& v = l.var;
      code += pragma + "for (int64_t " + v + "_blk = 0; " + v + "_blk < " + extent + "; " + v +
              "_blk += " + block + ") {\nconst int64_t " + v + "_end = " + v + "_blk + " + block +
              " < " + extent + " ? " + v + "_blk + " + block + " : " + extent + ";\nfor (int64_t " +
              v + " = " + v + "_blk; " + v + " < " + v + "_end; " + v + " += " + step + ") {\n" +
              inner + "}\n" + nest.block_end + "}\n";
    } else {
      code += pragma + "for (int64_t " + l.var + " = 0; " + l.var + " < " + extent + "; " + l.var +
              " += " + step + ") {\n" + inner + "}\n";
    }
  }
  if (innermost && !nest.tail.empty()) {
    // A tail after a blocked loop is a block of its own; inside a block it joins that block.
    code += (level == 0 ? nest.tail_pragma : "") + "{\n" + nest.tail +
            (blocked ? nest.block_end : "") + "}\n";
  }
  return code;
}

}  // namespace

std::string emit_reduction_loops(const ReductionLoopNest& nest) {
  return emit_level(nest, 0);
}

}  // namespace stax::codegen
