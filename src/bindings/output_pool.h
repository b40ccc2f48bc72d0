// Memory for the large outputs of compiled regions, kept across calls and handed to PyTorch
// through DLPack. PyTorch's CPU allocator gives every large tensor fresh pages (glibc maps
// blocks above 32 MiB anew each time, and trims smaller ones), so a region writing a
// vocabulary-sized gradient or a language-model head's logits spent as long faulting in
// pages as computing them, on every call. A pooled output is an ordinary PyTorch tensor
// whose DLPack deleter gives its block back here instead of to the C library; the next call
// asking for that many bytes takes it back with its pages mapped.
//
// The blocks come from the process's runtime::BlockPool (runtime/block_pool.h), which the
// loaded programs' arenas and scratch share: size buckets, huge pages for large blocks, a
// footprint bounded by the most it handed out at once, trimmed on memory pressure. Deleters
// take no Python lock: PyTorch may free a tensor on any thread.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <dlpack/dlpack.h>

#include "ir/dtype.h"
#include "runtime/block_pool.h"

namespace stax::bindings {

// A DLPack capsule ("dltensor") over a pooled block of `nbytes` (at least the extent of
// `sizes`/`strides` in `dtype`, a Stax dtype name) laid out with those sizes and strides.
// Throws std::invalid_argument for a dtype DLPack 0.6 cannot name or a size below the extent.
// The DLPack type of `dtype`; bool (which DLPack 0.6 lacks) as uint8, for the caller to view.
DLDataType dlpack_type(DType dtype);

PyObject* pooled_output(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        const std::string& dtype, int64_t nbytes);

// pooled_output over `block`, a block the process's pool handed out (a slot that
// CompiledGraph::run_into_pooled took): the capsule owns it from then on. On an exception the
// block stays the caller's.
PyObject* pooled_block_capsule(void* block, const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& strides, const std::string& dtype,
                               int64_t nbytes);
// (blocks, bytes) kept by the pool now, for tests and explain.
std::pair<int64_t, int64_t> output_pool_cached();
runtime::BlockPoolStats output_pool_stats();
// Frees every cached block (stax.trim_output_pool()); returns the bytes freed.
int64_t output_pool_trim();

}  // namespace stax::bindings
