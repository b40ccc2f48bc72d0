// Post-ops of a matmul plan (MatmulSpec::post_ops) as oneDNN 2.6 post-ops: which kinds and
// operand layouts the library computes as eager does, and their translation. Internal to
// src/external (matmul.cpp builds the primitive with them).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "external/matmul.h"

namespace stax::external::detail {

// "" when the post-ops are well formed (no library asked), else what is wrong: an operand on
// exactly the binary kinds, broadcasting to c, non-negative strides, a Clip with lo <= hi or
// NaN bounds, ...
std::string post_ops_error(const MatmulSpec& spec);

// "" when oneDNN computes the spec's post-ops as eager's ops do (float32 results, kinds and
// operand layouts whose results match eager's: post_ops.cpp), else why not.
std::string post_ops_refusal(const MatmulSpec& spec);

// Appends the spec's post-ops to `ops` (after a sum post-op it may hold). `batched`: the
// primitive's tensors are 3-D (library_batched in matmul.cpp), else 2-D. Returns the second
// operand of every oneDNN binary post-op it appended: the index of that post-op (its argument
// is DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1), the memory desc, and either
// which of run()'s post_operands it is or a float32 constant the plan holds (a scalar of
// Linear or a negation).
struct BinaryArgument {
  int library_index = 0;
  dnnl::memory::desc desc;
  int operand = -1;                // index into run()'s post_operands, or -1: `constant`
  float constant = 0;              // the plan points oneDNN at this (the argument must not move)
  int64_t batch_stride_bytes = 0;  // moves the operand per batch when the plan calls per batch
};
std::vector<BinaryArgument> append_post_ops(const MatmulSpec& spec, bool batched,
                                            dnnl::post_ops& ops);

// Number of binary post-ops (run()'s post_operands).
size_t binary_post_op_count(const MatmulSpec& spec);

}  // namespace stax::external::detail
