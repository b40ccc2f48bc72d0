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
// primitive's tensors are 3-D (library_batched in matmul.cpp), else 2-D. Returns, per binary
// post-op of the spec in order, the index of the oneDNN post-op that reads its operand
// (DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1) and that operand's memory desc.
struct BinaryArgument {
  int library_index;
  dnnl::memory::desc desc;
  int64_t batch_stride_bytes;  // to move the operand per batch when the plan calls per batch
};
std::vector<BinaryArgument> append_post_ops(const MatmulSpec& spec, bool batched,
                                            dnnl::post_ops& ops);

// Number of binary post-ops (run()'s post_operands).
size_t binary_post_op_count(const MatmulSpec& spec);

}  // namespace stax::external::detail
