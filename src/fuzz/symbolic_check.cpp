// Issue 33's fuzz mode (symbolic_check.h).
#include "fuzz/symbolic_check.h"

#include <regex>
#include <sstream>

#include "driver/compiler.h"
#include "driver/tolerance.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "graph_passes/bind_sizes.h"
#include "ir/graph.h"

namespace stax::fuzz {

namespace {

// The header's input types: "name: f32[4, 6]" (with " strides=[...]" where not contiguous).
const std::regex kInputType(R"((\w+): (\w+)\[([0-9, ]*)\]( strides=\[[^\]]*\])?)");

}  // namespace

std::optional<std::string> symbolize(const std::string& text) {
  const size_t header_end = text.find(":\n");
  if (text.rfind("def ", 0) != 0 || header_end == std::string::npos ||
      text.find(" where ") < header_end) {
    return std::nullopt;
  }
  const std::string header = text.substr(0, header_end);
  // N: the first dim of size >= 2 of a contiguous input.
  std::optional<int64_t> n;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), kInputType);
       it != std::sregex_iterator() && !n; ++it) {
    if ((*it)[4].matched) continue;
    std::istringstream dims((*it)[3].str());
    std::string dim;
    while (std::getline(dims, dim, ',')) {
      const int64_t size = std::stoll(dim);
      if (size >= 2) {
        n = size;
        break;
      }
    }
  }
  if (!n) return std::nullopt;
  std::string out;
  size_t last = 0;
  for (auto it = std::sregex_iterator(header.begin(), header.end(), kInputType);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out += header.substr(last, static_cast<size_t>(m.position(0)) - last);
    last = static_cast<size_t>(m.position(0) + m.length(0));
    if (m[4].matched) {
      out += m.str(0);
      continue;
    }
    std::istringstream dims(m[3].str());
    std::string dim, spelled;
    while (std::getline(dims, dim, ',')) {
      const int64_t size = std::stoll(dim);
      spelled += (spelled.empty() ? "" : ", ") + (size == *n ? "s0" : std::to_string(size));
    }
    out += m[1].str() + ": " + m[2].str() + "[" + spelled + "]";
  }
  out += header.substr(last);
  out += " where s0: [2, 4096] hint=" + std::to_string(*n) + text.substr(header_end);
  try {
    if (!ir::parse_graph(out).is_symbolic()) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // the shape rules tie other sizes to N
  }
  return out;
}

Outcome check_symbolic(const std::string& symbolic, const CaseOptions& options) {
  auto fail = [](FailureKind kind, std::string detail) {
    Outcome o;
    o.kind = kind;
    o.stage = "symbolic";
    o.detail = std::move(detail);
    return o;
  };
  ir::Graph graph;
  CompiledGraph compiled;
  try {
    graph = ir::parse_graph(symbolic);
    CompileOptions compile_options;
    compile_options.simd = options.simd;
    compile_options.num_threads = options.num_threads;
    compile_options.fuse = options.fuse;
    compile_options.localize = options.localize;
    compiled = compile(graph, compile_options);
  } catch (const std::exception& e) {
    return fail(FailureKind::Refused, std::string("compiling the symbolic program: ") + e.what());
  }
  const int64_t hint = graph.size_symbols().at("s0").hint;
  for (const int64_t s0 : {hint, hint + 1, int64_t{2}, 2 * hint + 3}) {
    ir::Graph bound;
    std::vector<Tensor> inputs, expected, oracle_values;
    try {
      bound = graph_passes::bind_sizes(graph, {{"s0", s0}});
      inputs = random_inputs(bound, options.input_seed + static_cast<uint64_t>(s0));
      expected = eager::run(bound, inputs, &oracle_values);
    } catch (const std::exception&) {
      continue;  // the program holds at its generated sizes only
    }
    std::vector<Tensor> actual;
    try {
      actual = compiled.run(inputs);
    } catch (const std::exception& e) {
      return fail(FailureKind::Refused,
                  "s0 = " + std::to_string(s0) + ": the one program refused: " + e.what());
    }
    const std::vector<Tolerance> tolerances = output_tolerances(bound, &oracle_values);
    for (size_t k = 0; k < actual.size() && k < expected.size(); ++k) {
      const eager::Difference diff =
          eager::compare(actual[k], expected[k], tolerances[k].rtol, tolerances[k].atol);
      if (!diff.within_tolerance) {
        std::ostringstream detail;
        detail << "s0 = " << s0 << " (hint " << hint << "), "
               << (compiled.takes_every_size() ? "one program" : "a program per size")
               << ": output " << k << " ('" << graph.value(graph.outputs()[k]).name
               << "'): max abs difference " << diff.max_abs << ", max rel " << diff.max_rel
               << " (rtol " << tolerances[k].rtol << ", atol " << tolerances[k].atol << ")";
        return fail(FailureKind::Mismatch, detail.str());
      }
    }
  }
  return {};
}

}  // namespace stax::fuzz
