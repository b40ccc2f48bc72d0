// Draws a catalogue op, a dtype, operands and domain adapters for the program generator
// (see catalog_step.h).
#include "fuzz/catalog_step.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fuzz/op_catalog.h"
#include "ir/op_schema.h"

namespace stax::fuzz {

namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool broadcasts(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t x = a[a.size() - i], y = b[b.size() - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

// Domains an arbitrary exact value may be used for as it is.
bool unrestricted(Domain d) {
  return d == Domain::Any || d == Domain::Finite || d == Domain::Coarse || d == Domain::Wide;
}

const std::vector<const CatalogEntry*>& runnable_entries() {
  static const std::vector<const CatalogEntry*> entries = [] {
    std::vector<const CatalogEntry*> out;
    for (const CatalogEntry& e : op_catalog()) {
      if (is_runnable(e)) out.push_back(&e);
    }
    return out;
  }();
  return entries;
}

class Drawer {
 public:
  explicit Drawer(const CatalogStepContext& c) : c_(c) {}

  std::optional<CatalogStep> draw() {
    const auto& entries = runnable_entries();
    if (entries.empty()) return std::nullopt;
    const CatalogEntry& e = *entries[(*c_.rng)() % entries.size()];
    std::vector<DType> dtypes;
    for (DType d : all_dtypes()) {
      if (contains(e.dtypes, d) && has_operand(d)) dtypes.push_back(d);
    }
    if (dtypes.empty()) return std::nullopt;
    const DType dtype = dtypes[(*c_.rng)() % dtypes.size()];
    CallSite site;
    site.dtype = dtype;
    double bound = 0.0;
    for (size_t k = 0; k < e.operands.size(); ++k) {
      const bool condition = e.bool_condition && k == 0;
      const PoolValue* v = pick_operand(condition ? DType::Bool : dtype, e.operands[k], site.sizes);
      if (v == nullptr) return std::nullopt;
      if (site.sizes.empty() || k == (e.bool_condition ? 1u : 0u)) {
        if (!v->sizes.empty()) site.sizes = v->sizes;
      }
      site.operands.push_back(condition ? v->name : adapt(*v, e.operands[k]));
      if (!condition) bound = std::max(bound, v->bound);
    }
    if (site.sizes.empty()) return std::nullopt;  // the call sites index the last dim
    bool index_ok = true;
    site.temp = [&](const std::string& expr) { return temp(expr); };
    site.temp_results = [&](const std::string& expr, int count) {
      std::vector<std::string> names;
      step_.statements.push_back(result_targets(c_.fresh_name(), count, names) + " = " + expr);
      return names;
    };
    site.index_input = [&](const std::vector<int64_t>& sizes, int64_t size) {
      if (ir::find_op_schema("remainder") == nullptr || size <= 0) {
        index_ok = false;
        return std::string("missing");
      }
      const std::string k = c_.fresh_input_name();
      step_.new_inputs.push_back(k + ": i64" + list(sizes));
      return temp("remainder(" + k + ", " + std::to_string(size) + ")");
    };
    site.destination_input = [&](DType d, const std::vector<int64_t>& sizes,
                                 const std::vector<int64_t>& strides) {
      const std::string k = c_.fresh_input_name();
      step_.new_inputs.push_back(k + ": " + std::string(dtype_name(d)) + list(sizes) +
                                 (strides.empty() ? "" : " strides=" + list(strides)));
      return k;
    };
    const std::optional<std::string> call = e.call(site);
    if (!call || !index_ok) return std::nullopt;
    // Of several results (split, var_mean) the last is the step's value.
    const int results = e.result_count ? e.result_count(site) : 1;
    std::vector<std::string> names;
    const std::string lhs = result_targets(c_.fresh_name(), results, names);
    step_.result.name = names.back();
    step_.statements.push_back(lhs + " = " + *call);
    if (uses_excluded(e, dtype)) return std::nullopt;
    const std::optional<ir::TensorType> type = c_.result_type(step_, step_.result.name);
    if (!type) return std::nullopt;
    step_.result.sizes = type->sizes;
    step_.result.dtype = type->dtype;
    step_.result.exact = e.exact || (!is_floating(dtype) && !is_floating(type->dtype));
    step_.result.bound =
        step_.result.exact ? std::max(bound, 1.0) : std::numeric_limits<double>::infinity();
    return step_;
  }

 private:
  // Whether the step applies an excluded case: the entry itself, or an op of its adapters and
  // prepared operands ("abs" of "add(abs(x), 0.5)") on the step's dtype.
  bool uses_excluded(const CatalogEntry& e, DType dtype) const {
    if (c_.excluded == nullptr || c_.excluded->empty()) return false;
    const std::string suffix = " " + std::string(dtype_name(dtype));
    if (c_.excluded->count(e.name + suffix)) return true;
    for (size_t i = 0; i + 1 < step_.statements.size(); ++i) {
      const std::string& s = step_.statements[i];
      const size_t eq = s.find(" = ");
      const std::string op = s.substr(eq + 3, s.find('(') - eq - 3);
      if (c_.excluded->count(op + suffix)) return true;
    }
    return false;
  }

  bool has_operand(DType d) const {
    for (const PoolValue& v : *c_.pool) {
      if (v.dtype == d && v.exact) return true;
    }
    return false;
  }

  const PoolValue* pick_operand(DType dtype, Domain domain, const std::vector<int64_t>& sizes) {
    std::vector<const PoolValue*> candidates;
    for (const PoolValue& v : *c_.pool) {
      if (v.dtype != dtype || !v.exact) continue;
      if (!sizes.empty() && !broadcasts(v.sizes, sizes)) continue;
      // Restricted domains are reached from inputs (|x| < 1 for floats, |x| <= 10 or
      // 0 ... 20 for integers); transcendental ops see bounded values only.
      if (!unrestricted(domain) && !v.is_input && dtype != DType::Bool) continue;
      if (is_floating(dtype) && v.bound > 2.0) continue;
      candidates.push_back(&v);
    }
    if (candidates.empty()) return nullptr;
    return candidates[(*c_.rng)() % candidates.size()];
  }

  std::string temp(const std::string& expr) {
    const std::string name = c_.fresh_name();
    step_.statements.push_back(name + " = " + expr);
    return name;
  }

  // `v` mapped into `domain` (v is an input when the domain is restricted).
  std::string adapt(const PoolValue& v, Domain domain) {
    if (v.dtype == DType::Bool) return v.name;
    const bool floating = is_floating(v.dtype);
    switch (domain) {
      case Domain::Positive:
        return temp("add(" + temp("abs(" + v.name + ")") + (floating ? ", 0.5)" : ", 1)"));
      case Domain::AboveOne:
        return temp("add(" + temp("abs(" + v.name + ")") + (floating ? ", 1.25)" : ", 2)"));
      case Domain::NonZero:
        return temp("where(" + temp("eq(" + v.name + ", 0)") + ", 1, " + v.name + ")");
      case Domain::Unit:
        return floating ? temp("mul(" + v.name + ", 0.5)") : v.name;
      case Domain::NearOne:
        return floating ? temp("add(" + temp("mul(" + v.name + ", 0.25)") + ", 1.0)") : v.name;
      case Domain::ShiftCount:
      case Domain::Exponent:
        return floating ? v.name : temp("abs(" + v.name + ")");
      default:
        return v.name;
    }
  }

  const CatalogStepContext& c_;
  CatalogStep step_;
};

}  // namespace

std::optional<CatalogStep> draw_catalog_step(const CatalogStepContext& context) {
  return Drawer(context).draw();
}

}  // namespace stax::fuzz
