// The vector width of a nest from the element types it computes in (vector_width.h).
#include "kernel/vector_width.h"

#include <map>
#include <optional>
#include <set>

#include "kernel/vector_form.h"

namespace stax::kernel {

namespace {

// The type a value of `dtype` is computed in: Half and BFloat16 are loaded into, computed in
// and stored from float registers.
DType computed_in(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype;
}

class WidestType {
 public:
  void consider(DType dtype) {
    const DType d = computed_in(dtype);
    if (!widest_ || dtype_size(d) > dtype_size(*widest_)) widest_ = d;
  }
  const std::optional<DType>& widest() const { return widest_; }

 private:
  std::optional<DType> widest_;
};

}  // namespace

VectorWidth choose_vector_width(const Kernel& k, const Block& body, const std::string& var,
                                const TargetOptions& target) {
  const VectorAnalysis analysis = analyze_vector_form(k, body, var);
  std::map<int, DType> dtype_of;  // of every value, those defined outside the body included
  for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Let) dtype_of[s.let.id] = s.let.type.dtype;
  });
  std::set<int> index_arithmetic;
  WidestType widest;
  for_each_stmt(body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Reduce) widest.consider(k.accumulator(s.accumulator).dtype);
    if (s.kind != StmtKind::Let || !analysis.varying.count(s.let.id)) return;
    const Let& l = s.let;
    // Index arithmetic: an index value, or an integer computed from index arithmetic and
    // values that do not vary (those become index vectors too).
    bool from_indices = l.kind == LetKind::IndexValue;
    if (l.kind == LetKind::Compute || l.kind == LetKind::Convert) {
      from_indices = true;
      for (int a : l.args) {
        if (analysis.varying.count(a) && !index_arithmetic.count(a)) from_indices = false;
      }
    }
    if (from_indices && (l.kind == LetKind::IndexValue || is_integral(l.type.dtype))) {
      index_arithmetic.insert(l.id);
      return;
    }
    widest.consider(l.type.dtype);
    if (l.kind == LetKind::Compute && !from_indices) {
      for (int a : l.args) widest.consider(dtype_of.at(a));
    }
  });
  for (int v : analysis.stored_along) widest.consider(dtype_of.at(v));
  VectorWidth w;
  const std::string simd(runtime::simd_level_name(target.simd));
  const std::string bytes = std::to_string(target.vector_register_bytes());
  if (!widest.widest()) {
    w.lanes = static_cast<int>(target.vector_lanes(DType::Float32));
    w.reason = "no value varies along " + var + ": " + std::string(dtype_name(DType::Float32)) +
               "'s " + std::to_string(w.lanes) + " lanes of one " + bytes + "-byte " + simd +
               " register";
    return w;
  }
  const DType d = *widest.widest();
  w.lanes = static_cast<int>(target.vector_lanes(d));
  w.reason = std::string(dtype_name(d)) + " is the widest type computed along " + var + ": " +
             std::to_string(w.lanes) + " lanes fill one " + bytes + "-byte " + simd + " register";
  return w;
}

}  // namespace stax::kernel
