// The index-narrowing pass (issue 6 point 8): loop and index variables become int32 where
// their values and every index expression they take part in provably fit int32
// (index_width.h), int64 otherwise. C++ computes `2048*x0 + x1` in the type of its operands,
// so the rule is per variable over whole expressions: a variable stays int64 when any index
// it appears in may leave int32, and then so do all the other variables of that index. An
// expression with an int32 variable therefore fits int32 in every subterm. Indirect indices
// (`ind<k>`, read from tensors) stay int64: their range check runs on the int64 value before
// any index arithmetic uses it. Index values become int32 vectors where only conversions and
// gathers read them (16 lanes in one AVX-512 register instead of two).
#include <algorithm>
#include <map>
#include <set>

#include "index/shape_exprs.h"
#include "kernel/index_width.h"
#include "kernel/kernel_ir_visitor.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

// Values something other than a conversion or a gather's offsets reads (they need int64).
std::set<int> values_needing_int64(const Kernel& k) {
  std::set<int> out;
  for_each_stmt(k.body, [&](const Stmt& s) {
    const bool converts = s.kind == StmtKind::Let && s.let.kind == LetKind::Convert;
    const bool gathers = s.kind == StmtKind::Let && s.let.kind == LetKind::Load;
    for_each_value_use(s, [&](int id, ValueRole role) {
      if (id < 0) return;
      if (converts && role == ValueRole::Operand) return;
      // The API takes int32 offsets for gathers (docs/kernel_header_api.md), not scatters.
      if (gathers && role == ValueRole::Offsets) return;
      out.insert(id);
    });
  });
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

void narrow_indices(Kernel& k) {
  std::set<std::string> candidates;         // loop variables and index definitions
  std::map<std::string, std::string> wide;  // variable -> why it stays int64
  int64_t largest = 0;
  auto fits = [&](const std::optional<int64_t>& m) {
    if (!m || *m > kInt32IndexMax) return false;
    largest = std::max(largest, *m);
    return true;
  };
  for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Loop) {
      const Loop& l = *s.loop;
      candidates.insert(l.var);
      const auto m = loop_header_magnitude(l, k.ranges);
      if (!fits(m)) {
        wide.emplace(l.var, m ? "loop " + l.var + " reaches " + std::to_string(*m)
                              : "loop " + l.var + " has no bound within its range");
      }
    } else if (s.kind == StmtKind::DefineIndex) {
      if (!s.index) {
        wide.emplace(s.name, "read from a tensor");
        return;
      }
      candidates.insert(s.name);
      // Every bound takes the variable within its recorded range.
      const auto b = index::bounds(*s.index, k.ranges);
      const auto range = k.ranges.extents.find(s.name);
      const auto extent = range == k.ranges.extents.end()
                              ? std::nullopt
                              : index::upper_bound(range->second, k.ranges.symbols);
      if (!b || !extent || b->lo < 0 || b->hi >= *extent) {
        wide.emplace(s.name, "index " + s.name + " leaves its range");
      }
    }
  });
  for_each_index_expr(k, [&](const index::Expr& e, const std::string& where) {
    const auto m = index_magnitude_as_printed(e, k.ranges);
    if (fits(m)) return;
    const std::string why = index::to_string(e) + " in " + where +
                            (m ? " reaches " + std::to_string(*m) : " has no bound");
    for (const std::string& v : index::free_vars(e)) wide.emplace(v, why);
  });

  auto type_of = [&](const std::string& var) {
    return wide.count(var) ? DType::Int64 : DType::Int32;
  };
  for_each_stmt(k.body, [&](Stmt& s) {
    if (s.kind == StmtKind::Loop) s.loop->index_type = type_of(s.loop->var);
    if (s.kind == StmtKind::DefineIndex && s.index) s.index_type = type_of(s.name);
  });
  const std::set<int> int64_uses = values_needing_int64(k);
  for_each_stmt(k.body, [&](Stmt& s) {
    if (s.kind != StmtKind::Let || s.let.kind != LetKind::IndexValue) return;
    Let& l = s.let;
    if (l.type.dtype != DType::Int64 || int64_uses.count(l.id)) return;
    const auto vars = index::free_vars(l.index);
    const bool int32_vars = std::all_of(
        vars.begin(), vars.end(), [&](const std::string& v) { return type_of(v) == DType::Int32; });
    if (int32_vars && fits(index_value_magnitude(l, k.ranges))) l.type.dtype = DType::Int32;
  });

  // The reason explain --ir prints: the int64 variables grouped by what keeps them int64.
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& [var, why] : wide) by_reason[why].push_back(var);
  std::vector<std::string> groups;
  for (const auto& [why, vars] : by_reason) groups.push_back(join(vars, ", ") + ": " + why);
  const bool any_int32 = std::any_of(candidates.begin(), candidates.end(),
                                     [&](const std::string& v) { return !wide.count(v); });
  const std::string below = " < 2^31 (largest " + std::to_string(largest) + ")";
  if (candidates.empty() && wide.empty()) {
    k.decisions.index_width_reason = "no loop or index variables";
  } else if (wide.empty()) {
    k.decisions.index_width_reason = "int32 indices: every index" + below;
  } else if (!any_int32) {
    k.decisions.index_width_reason = "int64 indices (" + join(groups, "; ") + ")";
  } else {
    k.decisions.index_width_reason =
        "int32 indices except " + join(groups, "; ") + "; the other indices" + below;
  }
}

}  // namespace stax::kernel
