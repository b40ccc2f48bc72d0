// JSON of a loaded program's run-time half (program_json.h). Readers check kinds and ranges
// field by field: a value out of range is a PackageError naming its path, never undefined
// behaviour in the runtime.
#include "package/program_json.h"

#include <utility>
#include <vector>

#include "index/node.h"

namespace stax::package {

using nlohmann::json;

namespace {

// The member `key` of `j`, which must be an object holding it.
const json& field(const json& j, const char* key) {
  if (!j.is_object())
    throw PackageError("package manifest: expected an object around '" + std::string(key) + "'");
  auto it = j.find(key);
  if (it == j.end())
    throw PackageError(std::string("package manifest: missing field '") + key + "'");
  return *it;
}

template <typename T>
T get(const json& j, const char* key) {
  const json& v = field(j, key);
  try {
    return v.get<T>();
  } catch (const json::exception& e) {
    throw PackageError(std::string("package manifest: field '") + key +
                       "' has the wrong kind: " + e.what());
  }
}

// An enum stored as its underlying integer, checked against its last enumerator.
template <typename E>
E get_enum(const json& j, const char* key, E last) {
  const int64_t v = get<int64_t>(j, key);
  if (v < 0 || v > static_cast<int64_t>(last)) {
    throw PackageError(std::string("package manifest: field '") + key + "' is out of range (" +
                       std::to_string(v) + ")");
  }
  return static_cast<E>(v);
}

template <typename E>
json enum_json(E e) {
  return static_cast<int64_t>(e);
}

json dtype_json(DType d) {
  return std::string(dtype_name(d));
}
DType dtype_from(const json& j, const char* key) {
  const std::string name = get<std::string>(j, key);
  std::optional<DType> d = parse_dtype(name);
  if (!d) throw PackageError("package manifest: unknown dtype '" + name + "'");
  return *d;
}

json exprs_json(const std::vector<index::Expr>& es) {
  json out = json::array();
  for (const index::Expr& e : es) out.push_back(expr_to_json(e));
  return out;
}
std::vector<index::Expr> exprs_from(const json& j, const char* key) {
  const json& list = field(j, key);
  if (!list.is_array())
    throw PackageError(std::string("package manifest: '") + key + "' is not a list");
  std::vector<index::Expr> out;
  for (const json& e : list) out.push_back(expr_from_json(e));
  return out;
}

json atom_json(const index::detail::Atom& a) {
  using index::detail::AtomKind;
  if (a.kind == AtomKind::kVar) return a.name;
  json o;
  o[a.kind == AtomKind::kFloorDiv ? "div" : "mod"] = expr_to_json(a.arg);
  o["by"] = expr_to_json(a.divisor);
  return o;
}

index::Expr atom_from(const json& j) {
  if (j.is_string()) {
    const std::string name = j.get<std::string>();
    if (name.empty()) throw PackageError("package manifest: an expression names an empty variable");
    return index::Expr::var(name);
  }
  if (!j.is_object()) throw PackageError("package manifest: malformed expression atom");
  const bool div = j.contains("div");
  const index::Expr arg = expr_from_json(field(j, div ? "div" : "mod"));
  const index::Expr divisor = expr_from_json(field(j, "by"));
  // floordiv/mod refuse a divisor that is not positive: their own checks guard the runtime.
  try {
    return div ? index::floordiv(arg, divisor) : index::mod(arg, divisor);
  } catch (const std::exception& e) {
    throw PackageError(std::string("package manifest: malformed division: ") + e.what());
  }
}

json operand_json(const lowering::ExternalOperand& o) {
  return {{"buffer", o.buffer},
          {"is_input", o.is_input},
          {"dtype", dtype_json(o.dtype)},
          {"sizes", exprs_json(o.sizes)},
          {"strides", exprs_json(o.strides)},
          {"offset", expr_to_json(o.offset)}};
}
lowering::ExternalOperand operand_from(const json& j) {
  lowering::ExternalOperand o;
  o.buffer = get<std::string>(j, "buffer");
  o.is_input = get<bool>(j, "is_input");
  o.dtype = dtype_from(j, "dtype");
  o.sizes = exprs_from(j, "sizes");
  o.strides = exprs_from(j, "strides");
  if (o.sizes.size() != o.strides.size()) {
    throw PackageError("package manifest: operand '" + o.buffer + "' has " +
                       std::to_string(o.sizes.size()) + " sizes and " +
                       std::to_string(o.strides.size()) + " strides");
  }
  o.offset = expr_from_json(field(j, "offset"));
  return o;
}

json optional_operand(const std::optional<lowering::ExternalOperand>& o) {
  return o ? operand_json(*o) : json(nullptr);
}
std::optional<lowering::ExternalOperand> optional_operand_from(const json& j, const char* key) {
  const json& v = field(j, key);
  if (v.is_null()) return std::nullopt;
  return operand_from(v);
}

json rule_json(const ir::IndexRule& r) {
  return {
      {"size", r.size}, {"wraps", r.wraps}, {"index_error", r.index_error}, {"message", r.message}};
}
ir::IndexRule rule_from(const json& j) {
  ir::IndexRule r;
  r.size = get<int64_t>(j, "size");
  r.wraps = get<bool>(j, "wraps");
  r.index_error = get<bool>(j, "index_error");
  r.message = get<std::string>(j, "message");
  return r;
}

json scatter_json(const lowering::ScatterCall& s) {
  json indices = json::array();
  for (const lowering::ScatterIndex& i : s.indices) {
    indices.push_back({{"operand", operand_json(i.operand)},
                       {"index_dims", i.index_dims},
                       {"rule", rule_json(i.rule)},
                       {"skipped", i.skipped ? json(*i.skipped) : json(nullptr)},
                       {"rule_size", i.rule_size ? expr_to_json(*i.rule_size) : json(nullptr)}});
  }
  return {{"indices", indices},
          {"values", optional_operand(s.values)},
          {"self", optional_operand(s.self)},
          {"space", exprs_json(s.space)},
          {"dest_dims", s.dest_dims},
          {"values_dims", s.values_dims},
          {"combine", enum_json(s.combine)},
          {"float_sum", s.float_sum},
          {"include_self", s.include_self},
          {"fused_multiply_add", s.fused_multiply_add},
          {"product_in_dtype", s.product_in_dtype},
          {"value", s.value},
          {"int_value", s.int_value},
          {"alpha", s.alpha},
          {"int_alpha", s.int_alpha}};
}
lowering::ScatterCall scatter_from(const json& j) {
  lowering::ScatterCall s;
  for (const json& i : field(j, "indices")) {
    lowering::ScatterIndex index;
    index.operand = operand_from(field(i, "operand"));
    index.index_dims = get<std::vector<int64_t>>(i, "index_dims");
    index.rule = rule_from(field(i, "rule"));
    if (!field(i, "skipped").is_null()) index.skipped = get<int64_t>(i, "skipped");
    if (!field(i, "rule_size").is_null()) index.rule_size = expr_from_json(field(i, "rule_size"));
    s.indices.push_back(std::move(index));
  }
  s.values = optional_operand_from(j, "values");
  s.self = optional_operand_from(j, "self");
  s.space = exprs_from(j, "space");
  s.dest_dims = get<std::vector<int64_t>>(j, "dest_dims");
  s.values_dims = get<std::vector<int64_t>>(j, "values_dims");
  s.combine = get_enum(j, "combine", ir::ScatterCombine::Min);
  s.float_sum = get<bool>(j, "float_sum");
  s.include_self = get<bool>(j, "include_self");
  s.fused_multiply_add = get<bool>(j, "fused_multiply_add");
  s.product_in_dtype = get<bool>(j, "product_in_dtype");
  s.value = get<double>(j, "value");
  s.int_value = get<int64_t>(j, "int_value");
  s.alpha = get<double>(j, "alpha");
  s.int_alpha = get<int64_t>(j, "int_alpha");
  return s;
}

json attention_json(const lowering::AttentionCall& a) {
  return {{"backward", a.backward},
          {"query", operand_json(a.query)},
          {"key", operand_json(a.key)},
          {"value", operand_json(a.value)},
          {"mask", optional_operand(a.mask)},
          {"mask_dims", a.mask_dims},
          {"causal", a.causal},
          {"masked_rows_nan", a.masked_rows_nan},
          {"scale", a.scale},
          {"grad_out", optional_operand(a.grad_out)},
          {"out", optional_operand(a.out)},
          {"logsumexp", optional_operand(a.logsumexp)}};
}
lowering::AttentionCall attention_from(const json& j) {
  lowering::AttentionCall a;
  a.backward = get<bool>(j, "backward");
  a.query = operand_from(field(j, "query"));
  a.key = operand_from(field(j, "key"));
  a.value = operand_from(field(j, "value"));
  a.mask = optional_operand_from(j, "mask");
  a.mask_dims = get<std::vector<int64_t>>(j, "mask_dims");
  a.causal = get<bool>(j, "causal");
  a.masked_rows_nan = get<bool>(j, "masked_rows_nan");
  a.scale = get<double>(j, "scale");
  a.grad_out = optional_operand_from(j, "grad_out");
  a.out = optional_operand_from(j, "out");
  a.logsumexp = optional_operand_from(j, "logsumexp");
  return a;
}

json call_json(const lowering::ExternalCall& c) {
  json j = {{"op", c.op},
            {"a", operand_json(c.a)},
            {"b", operand_json(c.b)},
            {"bias", optional_operand(c.bias)},
            {"alpha", c.alpha},
            {"beta", c.beta},
            {"alpha_zero_skips_product", c.alpha_zero_skips_product},
            {"library", c.library},
            {"reason", c.reason},
            {"convolution", nullptr},
            {"scatter", nullptr},
            {"attention", nullptr},
            {"scan", nullptr},
            {"result_of", nullptr}};
  if (c.convolution) {
    const lowering::ConvolutionWindow& w = *c.convolution;
    j["convolution"] = {{"stride", w.stride},
                        {"padding", w.padding},
                        {"dilation", w.dilation},
                        {"groups", w.groups},
                        {"direction", enum_json(w.direction)},
                        {"result_sizes", exprs_json(w.result_sizes)}};
  }
  if (c.scatter) j["scatter"] = scatter_json(*c.scatter);
  if (c.attention) j["attention"] = attention_json(*c.attention);
  if (c.scan) {
    j["scan"] = {{"kind", enum_json(c.scan->kind)},
                 {"input", operand_json(c.scan->input)},
                 {"dim", c.scan->dim}};
  }
  if (c.result_of)
    j["result_of"] = {{"call_buffer", c.result_of->call_buffer}, {"index", c.result_of->index}};
  return j;
}

lowering::ExternalCall call_from(const json& j) {
  lowering::ExternalCall c;
  c.op = get<std::string>(j, "op");
  c.a = operand_from(field(j, "a"));
  c.b = operand_from(field(j, "b"));
  c.bias = optional_operand_from(j, "bias");
  c.alpha = get<double>(j, "alpha");
  c.beta = get<double>(j, "beta");
  c.alpha_zero_skips_product = get<bool>(j, "alpha_zero_skips_product");
  c.library = get<std::string>(j, "library");
  c.reason = get<std::string>(j, "reason");
  if (const json& w = field(j, "convolution"); !w.is_null()) {
    lowering::ConvolutionWindow window;
    window.stride = get<std::vector<int64_t>>(w, "stride");
    window.padding = get<std::vector<int64_t>>(w, "padding");
    window.dilation = get<std::vector<int64_t>>(w, "dilation");
    window.groups = get<int64_t>(w, "groups");
    window.direction =
        get_enum(w, "direction", lowering::ConvolutionWindow::Direction::BackwardWeight);
    window.result_sizes = exprs_from(w, "result_sizes");
    c.convolution = std::move(window);
  }
  if (const json& s = field(j, "scatter"); !s.is_null()) c.scatter = scatter_from(s);
  if (const json& a = field(j, "attention"); !a.is_null()) c.attention = attention_from(a);
  if (const json& s = field(j, "scan"); !s.is_null()) {
    lowering::ScanCall scan;
    scan.kind = get_enum(s, "kind", ir::ScanKind::Min);
    scan.input = operand_from(field(s, "input"));
    scan.dim = get<int64_t>(s, "dim");
    c.scan = std::move(scan);
  }
  if (const json& r = field(j, "result_of"); !r.is_null()) {
    c.result_of = lowering::ResultOf{get<std::string>(r, "call_buffer"), get<int>(r, "index")};
  }
  return c;
}

json epilogue_json(const std::vector<scheduler::EpilogueOp>& ops) {
  json out = json::array();
  for (const scheduler::EpilogueOp& op : ops) {
    out.push_back({{"kind", enum_json(op.kind)}, {"alpha", op.alpha}, {"beta", op.beta}});
  }
  return out;
}
std::vector<scheduler::EpilogueOp> epilogue_from(const json& j) {
  std::vector<scheduler::EpilogueOp> out;
  if (!j.is_array()) throw PackageError("package manifest: 'epilogue' is not a list");
  for (const json& op : j) {
    scheduler::EpilogueOp e;
    e.kind = get_enum(op, "kind", scheduler::EpilogueOp::Kind::Linear);
    e.alpha = get<double>(op, "alpha");
    e.beta = get<double>(op, "beta");
    out.push_back(e);
  }
  return out;
}

json site_json(const program::ExternalSite& s) {
  json further_sizes = json::array();
  json further_strides = json::array();
  for (const auto& sizes : s.further_sizes) further_sizes.push_back(exprs_json(sizes));
  for (const auto& strides : s.further_strides) further_strides.push_back(exprs_json(strides));
  return {{"output", s.output},
          {"call", call_json(*s.call)},
          {"output_sizes", exprs_json(s.output_sizes)},
          {"output_strides", exprs_json(s.output_strides)},
          {"dtype", dtype_json(s.dtype)},
          {"source", s.source},
          {"epilogue", epilogue_json(s.epilogue)},
          {"further_results", s.further_results},
          {"further_sizes", further_sizes},
          {"further_strides", further_strides}};
}

program::ExternalSite site_from(const json& j) {
  program::ExternalSite s;
  s.output = get<std::string>(j, "output");
  s.call = std::make_shared<const lowering::ExternalCall>(call_from(field(j, "call")));
  s.output_sizes = exprs_from(j, "output_sizes");
  s.output_strides = exprs_from(j, "output_strides");
  s.dtype = dtype_from(j, "dtype");
  s.source = get<std::string>(j, "source");
  s.epilogue = epilogue_from(field(j, "epilogue"));
  s.further_results = get<std::vector<std::string>>(j, "further_results");
  for (const json& sizes : field(j, "further_sizes")) {
    s.further_sizes.push_back(exprs_from(json{{"l", sizes}}, "l"));
  }
  for (const json& strides : field(j, "further_strides")) {
    s.further_strides.push_back(exprs_from(json{{"l", strides}}, "l"));
  }
  if (s.further_sizes.size() != s.further_results.size() ||
      s.further_strides.size() != s.further_results.size()) {
    throw PackageError("package manifest: site '" + s.output +
                       "' lists its further results' layouts inconsistently");
  }
  return s;
}

}  // namespace

json expr_to_json(const index::Expr& e) {
  const index::detail::ExprNode& n = e.node();
  json terms = json::array();
  for (const index::detail::Term& t : n.terms) {
    json factors = json::array();
    for (const index::detail::Atom& a : t.factors) factors.push_back(atom_json(a));
    terms.push_back(json::array({t.coeff, factors}));
  }
  return {{"c", n.constant}, {"t", terms}};
}

index::Expr expr_from_json(const json& j) {
  index::Expr e(get<int64_t>(j, "c"));
  const json& terms = field(j, "t");
  if (!terms.is_array()) throw PackageError("package manifest: malformed expression terms");
  for (const json& t : terms) {
    if (!t.is_array() || t.size() != 2 || !t[0].is_number_integer() || !t[1].is_array() ||
        t[1].empty()) {
      throw PackageError("package manifest: malformed expression term");
    }
    index::Expr term(t[0].get<int64_t>());
    for (const json& a : t[1]) term = term * atom_from(a);
    e = e + term;
  }
  return e;
}

json symbols_to_json(const index::SymbolTable& symbols) {
  json out = json::object();
  for (const auto& [name, s] : symbols) {
    out[name] = {{"lo", s.lo}, {"hi", s.hi}, {"multiple_of", s.multiple_of}, {"hint", s.hint}};
  }
  return out;
}

index::SymbolTable symbols_from_json(const json& j) {
  if (!j.is_object()) throw PackageError("package manifest: 'symbols' is not an object");
  index::SymbolTable out;
  for (const auto& [name, s] : j.items()) {
    index::SizeSymbol symbol;
    symbol.lo = get<int64_t>(s, "lo");
    symbol.hi = get<int64_t>(s, "hi");
    symbol.multiple_of = get<int64_t>(s, "multiple_of");
    symbol.hint = get<int64_t>(s, "hint");
    if (symbol.lo < 0 || symbol.hi < symbol.lo || symbol.multiple_of < 1) {
      throw PackageError("package manifest: size symbol '" + name + "' has inconsistent facts");
    }
    out.emplace(name, symbol);
  }
  return out;
}

json runtime_compilation_to_json(const Compilation& c) {
  const codegen::GeneratedModule& m = c.module;
  json inputs = json::array();
  for (const lowering::InputBuffer& in : c.lowered.inputs) {
    inputs.push_back({{"name", in.name},
                      {"dtype", dtype_json(in.dtype)},
                      {"sizes", exprs_json(in.sizes)},
                      {"strides", exprs_json(in.strides)}});
  }
  json outputs = json::array();
  for (const lowering::OutputSpec& o : c.lowered.outputs) {
    outputs.push_back({{"buffer", o.buffer},
                       {"is_input", o.is_input},
                       {"dtype", dtype_json(o.dtype)},
                       {"sizes", exprs_json(o.sizes)},
                       {"strides", exprs_json(o.strides)},
                       {"offset", expr_to_json(o.offset)}});
  }
  json bindings = json::array();
  for (const codegen::OutputBinding& b : m.outputs) {
    bindings.push_back({{"from_input", b.from_input},
                        {"index", b.index},
                        {"dtype", dtype_json(b.dtype)},
                        {"sizes", exprs_json(b.sizes)},
                        {"strides", exprs_json(b.strides)},
                        {"offset", expr_to_json(b.offset)}});
  }
  json sites = json::array();
  for (const program::ExternalSite& s : m.externals) sites.push_back(site_json(s));
  const codegen::CodegenOptions& t = m.options;
  json target = {
      {"simd", std::string(runtime::simd_level_name(t.simd))},
      {"num_threads", t.num_threads},
      {"caches", {t.caches.line_bytes, t.caches.l1d_bytes, t.caches.l2_bytes, t.caches.llc_bytes}},
      {"outputs_in_mapped_memory", t.outputs_in_mapped_memory},
      {"libraries", t.libraries},
      {"library_notes", t.library_notes}};
  return {{"name", c.lowered.name},
          {"inputs", inputs},
          {"outputs", outputs},
          {"symbols", symbols_to_json(m.symbols)},
          {"entry_point", m.entry_point},
          {"output_bindings", bindings},
          {"output_slot_bytes", exprs_json(m.output_slot_bytes)},
          {"arena_bytes", m.arena_bytes},
          {"target", target},
          {"external_sites", sites}};
}

std::shared_ptr<Compilation> runtime_compilation_from_json(const json& j) {
  auto c = std::make_shared<Compilation>();
  c->lowered.name = get<std::string>(j, "name");
  for (const json& in : field(j, "inputs")) {
    lowering::InputBuffer b;
    b.name = get<std::string>(in, "name");
    b.dtype = dtype_from(in, "dtype");
    b.sizes = exprs_from(in, "sizes");
    b.strides = exprs_from(in, "strides");
    if (b.sizes.size() != b.strides.size()) {
      throw PackageError("package manifest: input '" + b.name +
                         "' has mismatched sizes and strides");
    }
    c->lowered.inputs.push_back(std::move(b));
  }
  for (const json& o : field(j, "outputs")) {
    lowering::OutputSpec spec;
    spec.buffer = get<std::string>(o, "buffer");
    spec.is_input = get<bool>(o, "is_input");
    spec.dtype = dtype_from(o, "dtype");
    spec.sizes = exprs_from(o, "sizes");
    spec.strides = exprs_from(o, "strides");
    spec.offset = expr_from_json(field(o, "offset"));
    c->lowered.outputs.push_back(std::move(spec));
  }
  codegen::GeneratedModule& m = c->module;
  m.symbols = symbols_from_json(field(j, "symbols"));
  c->lowered.symbols = m.symbols;
  m.entry_point = get<std::string>(j, "entry_point");
  for (const json& b : field(j, "output_bindings")) {
    codegen::OutputBinding binding;
    binding.from_input = get<bool>(b, "from_input");
    binding.index = get<int>(b, "index");
    binding.dtype = dtype_from(b, "dtype");
    binding.sizes = exprs_from(b, "sizes");
    binding.strides = exprs_from(b, "strides");
    binding.offset = expr_from_json(field(b, "offset"));
    m.outputs.push_back(std::move(binding));
  }
  m.output_slot_bytes = exprs_from(j, "output_slot_bytes");
  for (const codegen::OutputBinding& b : m.outputs) {
    const size_t limit = b.from_input ? c->lowered.inputs.size() : m.output_slot_bytes.size();
    if (b.index < 0 || static_cast<size_t>(b.index) >= limit ||
        b.sizes.size() != b.strides.size()) {
      throw PackageError("package manifest: an output binding names slot or input " +
                         std::to_string(b.index) + ", which the program does not have");
    }
  }
  m.arena_bytes = get<int64_t>(j, "arena_bytes");
  const json& t = field(j, "target");
  const std::string simd = get<std::string>(t, "simd");
  const std::optional<runtime::SimdLevel> level = runtime::parse_simd_level(simd);
  if (!level) throw PackageError("package manifest: unknown SIMD level '" + simd + "'");
  m.options.simd = *level;
  m.options.num_threads = get<int>(t, "num_threads");
  if (m.options.num_threads < 1) throw PackageError("package manifest: thread count below 1");
  const auto caches = get<std::vector<int64_t>>(t, "caches");
  if (caches.size() != 4) throw PackageError("package manifest: 'caches' needs 4 sizes");
  m.options.caches = {caches[0], caches[1], caches[2], caches[3]};
  m.options.outputs_in_mapped_memory = get<bool>(t, "outputs_in_mapped_memory");
  m.options.libraries = get<std::vector<std::string>>(t, "libraries");
  m.options.library_notes = get<std::vector<std::string>>(t, "library_notes");
  for (const json& s : field(j, "external_sites")) m.externals.push_back(site_from(s));
  return c;
}

}  // namespace stax::package
