// Weights in the safetensors format (an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the bytes): what a package keeps a
// model's parameters in, readable by the `safetensors` Python package and other tools, and
// what the C++ example reads its inputs and expected outputs from.
//
// Written tensors are ordered by element size, largest first, after a header padded with
// spaces to a multiple of 64 bytes: every tensor starts at a multiple of its element size
// from a 64-byte boundary, so a reader can use the bytes in place.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tensor.h"

namespace stax::package {

// The file's bytes for these tensors (each written contiguous, whatever its strides).
std::string safetensors_bytes(const std::map<std::string, Tensor>& tensors);

// A tensor of a safetensors buffer: where its bytes are in the buffer.
struct SafetensorsEntry {
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  size_t offset = 0;  // from the start of the buffer
  size_t bytes = 0;
};

// The tensors a safetensors buffer holds, by name; throws PackageError naming the first entry
// (or header field) that is malformed or reaches past the buffer. `what` names the buffer in
// messages.
std::map<std::string, SafetensorsEntry> read_safetensors(std::string_view buffer,
                                                         const std::string& what);

// Reads a safetensors file into tensors (copies; for inputs and reference outputs).
std::map<std::string, Tensor> load_safetensors_file(const std::string& path);
void save_safetensors_file(const std::string& path, const std::map<std::string, Tensor>& tensors);

}  // namespace stax::package
