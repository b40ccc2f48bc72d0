// The safetensors format (safetensors.h): the header as JSON, the bytes little-endian.
#include "package/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "ir/checked_arith.h"
#include "package/program_json.h"

namespace stax::package {

using nlohmann::json;

namespace {

constexpr std::pair<DType, const char*> kNames[] = {
    {DType::Bool, "BOOL"},   {DType::UInt8, "U8"},      {DType::Int8, "I8"},
    {DType::Int16, "I16"},   {DType::Int32, "I32"},     {DType::Int64, "I64"},
    {DType::Float16, "F16"}, {DType::BFloat16, "BF16"}, {DType::Float32, "F32"},
    {DType::Float64, "F64"},
};

const char* format_name(DType d) {
  for (const auto& [dtype, name] : kNames) {
    if (dtype == d) return name;
  }
  return "?";
}

}  // namespace

std::string safetensors_bytes(const std::map<std::string, Tensor>& tensors) {
  std::vector<std::pair<std::string, Tensor>> order;
  // A contiguous tensor is written from its own memory, another from a contiguous copy.
  for (const auto& [name, t] : tensors) {
    order.emplace_back(name, t.is_contiguous() ? t : t.contiguous_copy());
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second.dtype()) > dtype_size(b.second.dtype());
  });
  json header = json::object();
  size_t offset = 0;
  for (const auto& [name, t] : order) {
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", format_name(t.dtype())},
                    {"shape", t.sizes()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}, {"writer", "stax"}};
  std::string text = header.dump();
  text.append((64 - (8 + text.size()) % 64) % 64, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
  out += text;
  out.reserve(out.size() + offset);
  for (const auto& [name, t] : order) {
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    out.append(static_cast<const char*>(t.data()), bytes);
  }
  return out;
}

std::map<std::string, SafetensorsEntry> read_safetensors(std::string_view buffer,
                                                         const std::string& what) {
  const auto fail = [&](const std::string& why) -> void { throw PackageError(what + ": " + why); };
  if (buffer.size() < 8) fail("truncated: no header length");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<uint8_t>(buffer[i]);
  if (header_bytes > buffer.size() - 8) fail("truncated: the header reaches past the end");
  json header;
  try {
    header = json::parse(buffer.substr(8, header_bytes));
  } catch (const json::exception& e) {
    fail(std::string("malformed header: ") + e.what());
  }
  if (!header.is_object()) fail("malformed header: not an object");
  const size_t data_start = 8 + header_bytes;
  const size_t data_bytes = buffer.size() - data_start;
  std::map<std::string, SafetensorsEntry> out;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__") continue;
    SafetensorsEntry entry;
    try {
      const std::string dtype = e.at("dtype").get<std::string>();
      const auto it = std::find_if(std::begin(kNames), std::end(kNames),
                                   [&](const auto& p) { return dtype == p.second; });
      if (it == std::end(kNames))
        fail("tensor '" + name + "' has dtype " + dtype + ", which Stax does not take");
      entry.dtype = it->first;
      entry.sizes = e.at("shape").get<std::vector<int64_t>>();
      const auto range = e.at("data_offsets").get<std::vector<uint64_t>>();
      if (range.size() != 2 || range[0] > range[1] || range[1] > data_bytes) {
        fail("tensor '" + name + "' lies outside the data");
      }
      entry.offset = data_start + range[0];
      entry.bytes = range[1] - range[0];
    } catch (const json::exception& ex) {
      fail("malformed entry '" + name + "': " + ex.what());
    }
    int64_t numel = 1;
    for (int64_t s : entry.sizes) {
      const std::optional<int64_t> product = s < 0 ? std::nullopt : checked_mul(numel, s);
      if (!product) fail("tensor '" + name + "' has an invalid shape");
      numel = *product;
    }
    if (static_cast<uint64_t>(numel) > entry.bytes / std::max<size_t>(1, dtype_size(entry.dtype)) ||
        static_cast<size_t>(numel) * dtype_size(entry.dtype) != entry.bytes) {
      fail("tensor '" + name + "': its shape does not match its " + std::to_string(entry.bytes) +
           " bytes");
    }
    out.emplace(name, std::move(entry));
  }
  return out;
}

std::map<std::string, Tensor> load_safetensors_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PackageError("cannot read '" + path + "'");
  const std::string buffer((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, Tensor> out;
  for (const auto& [name, e] : read_safetensors(buffer, path)) {
    Tensor t = Tensor::empty(e.dtype, e.sizes);
    if (e.bytes > 0) std::memcpy(t.data(), buffer.data() + e.offset, e.bytes);
    out.emplace(name, std::move(t));
  }
  return out;
}

void save_safetensors_file(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  const std::string bytes = safetensors_bytes(tensors);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw PackageError("cannot write '" + path + "'");
}

}  // namespace stax::package
