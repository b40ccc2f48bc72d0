// `stax explain`: the lowering decisions, the nodes with their dependences and iteration
// groups, the fusion log in the seed's form (candidates per round, "fusing op0 with op1", the
// reason and the score), the final nodes, the kernels with their form, parallel depth and the
// graph ops each loop computes, and the buffers allocated and freed — as text, or as one JSON
// document. The JSON lists every fusion candidate with its reason; the text lists the fusions
// made and counts the other candidates of each round, unless verbose (`stax explain
// --verbose`), which lists each refused pair ("cannot fuse op0 with op3: <reason>") and each
// legal pair left unfused ("not fusing ...").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "driver/compiler.h"
#include "driver/external_calls.h"

namespace stax {

// With `plans` (the loaded program's library plans), each matrix product also shows its
// plan: the library's kernel and how B is handed to it (measured on this machine when the
// plan was built, external/matmul_weights_form.h).
nlohmann::json explain_json(const Compilation& compilation,
                            const driver::ExternalPlans* plans = nullptr);
std::string explain_text(const Compilation& compilation, bool verbose = false,
                         const driver::ExternalPlans* plans = nullptr);

}  // namespace stax
