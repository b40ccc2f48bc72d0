// Decisions a library plan measured on this machine (matmul_weights_form.h: B in place or
// packed), kept for the process and, when a directory is given, on disk, so that only the
// first process to plan a shape on a machine pays for the measurement (a GPT-2 training
// step's plans measured for 0.6-0.9 s of its first call on the Intel Xeon with AMX).
// Internal to src/external.
//
// On disk: one small file per decision under the given directory (the torch.compile bridge
// and the CLI pass <Stax's cache directory>/library-plans), named by a hash of the machine
// (the CPU's model name, the library's version) and the decision's key; it holds the key in
// full, then the answer. A file whose key differs (a hash collision, another format) or that
// is malformed is ignored and measured again; a directory that cannot be written only loses
// the saving, never the plan.
#pragma once

#include <functional>
#include <string>

namespace stax::external::detail {

// The answer for `key`: the process's (per directory and key), else the one on disk under
// `directory` (if not empty), else `measure()`'s, which is then kept in both. `from_disk` (if not
// null) says whether the answer was read from disk in this call. Thread-safe; concurrent calls for
// one key measure once.
std::string measured_once(const std::string& key, const std::string& directory,
                          const std::function<std::string()>& measure, bool* from_disk = nullptr);

// The file measured_once keeps `key`'s answer in under `directory`.
std::string measurement_file(const std::string& directory, const std::string& key);

}  // namespace stax::external::detail
