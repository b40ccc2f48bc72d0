// The random program generator: grows a pool of values step by step, each step one op (or a
// short chain that keeps its operand in a well-conditioned domain), tracking every value's
// sizes, magnitude bound, exactness and eager layout so that each emitted statement is valid.
#include "fuzz/program_generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "fuzz/catalog_step.h"
#include "fuzz/op_catalog.h"
#include "ir/eager_storage.h"
#include "ir/graph.h"

namespace stax::fuzz {

namespace {

// Largest magnitude a value may reach. Rounding differences are a few ulp of the operands'
// magnitude, so with |values| <= 16 they stay well inside float32's atol of 1e-5.
constexpr double kMaxBound = 16.0;
constexpr int kMaxRank = 5;

struct Value {
  std::string name;
  std::vector<int64_t> sizes;
  bool is_bool = false;
  DType dtype = DType::Float32;  // Bool when is_bool
  bool exact = true;             // computed without rounding, so comparisons of it are stable
  bool contiguous = true;        // laid out contiguously by the eager interpreter (`view` needs it)
  double bound = 1.0;            // |element| <= bound
  bool is_input = false;
  // A catalogue step's result that is not float32, or was rounded: only catalogue steps
  // (which track its dtype and exactness) and the outputs use it.
  bool typed = false;
};

int64_t numel(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a,
                                              const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = std::max(x, y);
  }
  return out;
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions& options) : rng_(seed), opt_(options) {}

  GeneratedCase run() {
    GeneratedCase out;
    make_inputs();
    const int target =
        opt_.min_statements + pick(std::max(1, opt_.max_statements - opt_.min_statements + 1));
    for (int attempt = 0; statements_ < target && attempt < 20 * target; ++attempt) step();
    if (statements_ == 0) emit(unary_of(pool_[0], "neg"));
    out.text = with_outputs(outputs());
    const std::vector<runtime::SimdLevel> levels = runnable_simd_levels();
    out.options.simd = levels[static_cast<size_t>(pick(static_cast<int>(levels.size())))];
    out.options.num_threads = 1 + pick(2);
    out.options.fuse = pick(8) != 0;
    out.options.localize = pick(8) != 0;
    out.options.input_seed = rng_() % 1000000;
    out.options.symbolic = opt_.symbolic_one_in > 0 && pick(opt_.symbolic_one_in) == 0;
    return out;
  }

 private:
  struct Stmt {
    std::string expr;
    Value value;
  };

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int one_in) { return pick(one_in) == 0; }
  template <typename T, size_t N>
  const T& choose(const T (&items)[N]) {
    return items[pick(static_cast<int>(N))];
  }

  int64_t random_size() {
    // 1 (broadcast and degenerate loops), tails that are not multiples of 8 or 16, exact vectors.
    static const int64_t kSizes[] = {1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 33};
    static const int64_t kLarge[] = {64, 65, 100, 128, 130, 257};
    return large_ && chance(2) ? choose(kLarge) : choose(kSizes);
  }

  std::string header() const {
    std::string text = "def g(";
    for (size_t i = 0; i < input_decls_.size(); ++i) text += (i ? ", " : "") + input_decls_[i];
    return text + "):\n";
  }

  void make_inputs() {
    large_ = opt_.large_one_in > 0 && chance(opt_.large_one_in);
    budget_ = large_ ? opt_.large_max_elements : opt_.max_elements;
    std::vector<int64_t> base(
        static_cast<size_t>(opt_.min_rank + pick(opt_.max_rank - opt_.min_rank + 1)));
    for (auto& s : base) s = random_size();
    while (numel(base) > budget_ / 2) {
      auto& s = base[static_cast<size_t>(pick(static_cast<int>(base.size())))];
      s = std::max<int64_t>(1, s / 2);
    }
    const int inputs = 1 + pick(opt_.max_inputs);
    for (int i = 0; i < inputs; ++i) {
      Value v;
      v.name = std::string(1, static_cast<char>('a' + i));
      v.sizes = base;
      if (i > 0 && chance(3))
        v.sizes.erase(v.sizes.begin(), v.sizes.begin() + pick(static_cast<int>(base.size())));
      if (i > 0 && chance(2)) {
        for (auto& s : v.sizes) {
          if (chance(2)) s = 1;
        }
      }
      v.is_input = true;
      std::vector<int64_t> strides = contiguous(v.sizes);
      if (opt_.strided_inputs && !v.sizes.empty() && chance(2)) {
        strides = random_strides(v.sizes);
        v.contiguous = strides == contiguous(v.sizes);
      }
      std::string decl = v.name + ": f32" + list(v.sizes);
      if (strides != contiguous(v.sizes)) decl += " strides=" + list(strides);
      input_decls_.push_back(decl);
      pool_.push_back(v);
    }
    // Inputs of the other dtypes, for the catalogue steps.
    const std::vector<DType> dtypes = all_dtypes();
    const int typed = opt_.catalog_ops ? pick(3) : 0;
    for (int i = 0; i < typed; ++i) {
      Value v;
      v.name = std::string(1, static_cast<char>('a' + inputs + i));
      v.dtype = dtypes[static_cast<size_t>(pick(static_cast<int>(dtypes.size())))];
      v.is_bool = v.dtype == DType::Bool;
      v.sizes = base;
      v.is_input = true;
      v.typed = v.dtype != DType::Float32;
      v.bound = is_floating(v.dtype) ? 1.0 : 20.0;
      input_decls_.push_back(v.name + ": " + std::string(dtype_name(v.dtype)) + list(v.sizes));
      pool_.push_back(v);
    }
  }

  std::vector<int64_t> random_strides(const std::vector<int64_t>& sizes) {
    const size_t rank = sizes.size();
    std::vector<int64_t> strides(rank);
    const int layout = pick(4);
    if (layout <= 1) {  // permuted: dims laid out in a random memory order
      std::vector<size_t> order(rank);
      std::iota(order.begin(), order.end(), 0);
      for (size_t i = rank; i > 1; --i)
        std::swap(order[i - 1], order[static_cast<size_t>(pick(static_cast<int>(i)))]);
      int64_t running = 1;
      for (size_t k = rank; k-- > 0;) {
        strides[order[k]] = running;
        running *= sizes[order[k]];
      }
    } else if (layout == 2) {  // padded rows: gaps between consecutive innermost rows
      int64_t running = 1;
      for (size_t i = rank; i-- > 0;) {
        strides[i] = running;
        running *= sizes[i] + (i == rank - 1 ? 1 + pick(3) : 0);
      }
    } else {  // one dim broadcast in memory (stride 0), as torch.expand produces
      strides = contiguous(sizes);
      strides[static_cast<size_t>(pick(static_cast<int>(rank)))] = 0;
    }
    return strides;
  }

  // A random float value, preferring recent ones so that chains grow deep.
  const Value* any_float() {
    std::vector<const Value*> floats;
    for (const Value& v : pool_) {
      if (!v.is_bool && !v.typed) floats.push_back(&v);
    }
    if (floats.size() > 3 && chance(3) == false) {
      return floats[floats.size() - 1 -
                    static_cast<size_t>(pick(std::min<int>(4, static_cast<int>(floats.size()))))];
    }
    return floats[static_cast<size_t>(pick(static_cast<int>(floats.size())))];
  }
  // A value (of the wanted kind) that broadcasts with `a` within the element budget.
  const Value* partner(const Value& a, bool want_bool, bool want_exact) {
    for (int attempt = 0; attempt < 12; ++attempt) {
      const Value& b = pool_[static_cast<size_t>(pick(static_cast<int>(pool_.size())))];
      if (b.is_bool != want_bool || b.typed || (want_exact && !b.exact)) continue;
      auto shape = broadcast(a.sizes, b.sizes);
      if (shape && numel(*shape) <= budget_ && static_cast<int>(shape->size()) <= kMaxRank)
        return &b;
    }
    return nullptr;
  }

  std::string fresh() { return "v" + std::to_string(counter_++); }
  // Emits `name = expr` and adds the value to the pool; returns the pooled value.
  const Value& emit(Stmt s) {
    s.value.name = fresh();
    s.value.is_input = false;
    body_ << "    " << s.value.name << " = " << s.expr << "\n";
    pool_.push_back(s.value);
    ++statements_;
    return pool_.back();
  }
  static Stmt unary_of(const Value& v, const std::string& op) {
    Value r = v;
    r.contiguous = true;
    if (op == "tanh" || op == "sigmoid") {
      r.bound = 1.0;
      r.exact = false;
    }
    return {op + "(" + v.name + ")", r};
  }
  // |v| + 1: a value >= 1, the domain of log, sqrt, rsqrt, fractional pow and denominators.
  const Value& at_least_one(const Value& v) {
    const Value& a = emit(unary_of(v, "abs"));
    Value r = a;
    r.bound = a.bound + 1.0;
    r.exact = false;
    return emit({"add(" + a.name + ", 1.0)", r});
  }

  void step() {
    if (opt_.catalog_ops && chance(3)) {
      step_catalog();
      return;
    }
    const int kind = pick(opt_.views ? 20 : 14);
    if (kind <= 1) {
      step_unary();
    } else if (kind <= 5) {
      step_binary();
    } else if (kind == 6) {
      step_div();
    } else if (kind == 7) {
      step_positive_domain();
    } else if (kind == 8) {
      step_exp();
    } else if (kind <= 10) {
      step_reduction();
    } else if (kind <= 12) {
      step_compare();
    } else if (kind == 13) {
      step_copy();
    } else {
      step_view();
    }
  }

  // An op of the catalogue on any dtype (catalog_step.h).
  void step_catalog() {
    std::vector<PoolValue> pool;
    for (const Value& v : pool_) {
      pool.push_back(
          {v.name, v.sizes, v.is_bool ? DType::Bool : v.dtype, v.exact, v.bound, v.is_input});
    }
    CatalogStepContext context;
    context.rng = &rng_;
    context.pool = &pool;
    context.excluded = &opt_.excluded_cases;
    int names = counter_;
    context.fresh_name = [&] { return "v" + std::to_string(names++); };
    int input_names = static_cast<int>(input_decls_.size());
    context.fresh_input_name = [&] { return "k" + std::to_string(input_names++); };
    context.result_type = [&](const CatalogStep& step,
                              const std::string& result) -> std::optional<ir::TensorType> {
      std::vector<std::string> decls = input_decls_;
      decls.insert(decls.end(), step.new_inputs.begin(), step.new_inputs.end());
      std::string text = "def g(";
      for (size_t i = 0; i < decls.size(); ++i) text += (i ? ", " : "") + decls[i];
      text += "):\n" + body_.str();
      for (const std::string& s : step.statements) text += "    " + s + "\n";
      text += "    return " + result + "\n";
      try {
        const ir::Graph g = ir::parse_graph(text);
        const ir::TensorType type = g.value(g.outputs().at(0)).type;
        int64_t elements = 0;
        for (const ir::Value& v : g.values()) elements = std::max(elements, v.type.numel());
        if (elements > budget_) return std::nullopt;
        return type;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    };
    const std::optional<CatalogStep> step = draw_catalog_step(context);
    if (!step) return;
    counter_ = names;
    for (const std::string& decl : step->new_inputs) {
      input_decls_.push_back(decl);
      Value k;
      k.name = decl.substr(0, decl.find(':'));
      k.dtype = DType::Int64;
      k.typed = true;
      k.is_input = true;
      k.bound = 10.0;
      k.sizes = {};  // index sources: used by the step that declared them only
      k.exact = false;
      pool_.push_back(k);
    }
    for (size_t i = 0; i + 1 < step->statements.size(); ++i) {
      body_ << "    " << step->statements[i] << "\n";
      ++statements_;
    }
    Value r;
    r.sizes = step->result.sizes;
    r.dtype = step->result.dtype;
    r.is_bool = r.dtype == DType::Bool;
    r.exact = step->result.exact;
    r.bound = step->result.bound;
    r.contiguous = false;
    r.typed = r.dtype != DType::Float32 && !r.is_bool;
    // A rounded float32 result, or an exact one past the bound the float32 steps keep, is
    // typed too: the float32 steps rely on their magnitude bounds.
    if (!r.is_bool && (!r.exact || r.bound > kMaxBound)) r.typed = true;
    body_ << "    " << step->statements.back() << "\n";
    ++statements_;
    r.name = step->result.name;
    pool_.push_back(r);
  }

  void step_unary() {
    static const char* kOps[] = {"neg", "abs", "relu", "tanh", "sigmoid"};
    emit(unary_of(*any_float(), choose(kOps)));
  }

  void step_binary() {
    static const char* kOps[] = {"add", "sub", "mul", "maximum", "minimum"};
    const std::string op = choose(kOps);
    const Value a = *any_float();
    const bool tensor_only = op == "maximum" || op == "minimum";
    const Value* b = chance(4) && !tensor_only ? nullptr : partner(a, false, false);
    Value r = a;
    r.contiguous = true;
    if (b == nullptr) {
      if (tensor_only) return;
      static const char* kScalars[] = {"0.5", "2.0", "-1.5", "3", "-0.25"};
      const std::string s = choose(kScalars);
      const double m = std::abs(std::stod(s));
      r.bound = op == "mul" ? a.bound * m : a.bound + m;
      r.exact = false;
      // A scalar `self` (like torch.rsub) is legal for add/sub/mul.
      const std::string expr =
          chance(4) ? op + "(" + s + ", " + a.name + ")" : op + "(" + a.name + ", " + s + ")";
      if (r.bound <= kMaxBound) emit({expr, r});
      return;
    }
    r.sizes = *broadcast(a.sizes, b->sizes);
    std::string extra;
    if (op == "add" || op == "sub") {
      r.bound = a.bound + b->bound;
      if (chance(5)) {
        extra = ", alpha=2";
        r.bound = a.bound + 2 * b->bound;
      }
      r.exact = false;
    } else if (op == "mul") {
      r.bound = a.bound * b->bound;
      r.exact = false;
    } else {
      r.bound = std::max(a.bound, b->bound);
      r.exact = a.exact && b->exact;
    }
    if (r.bound <= kMaxBound) emit({op + "(" + a.name + ", " + b->name + extra + ")", r});
  }

  void step_div() {
    const Value a = *any_float();
    Value r = a;
    r.contiguous = true;
    r.exact = false;
    if (chance(3)) {
      static const char* kDivisors[] = {"2.0", "-4.0", "0.5", "3"};
      const std::string d = choose(kDivisors);
      r.bound = a.bound / std::abs(std::stod(d));
      if (r.bound <= kMaxBound) emit({"div(" + a.name + ", " + d + ")", r});
      return;
    }
    const Value* b = partner(a, false, false);
    if (b == nullptr) return;
    const Value denominator = at_least_one(*b);
    r.sizes = *broadcast(a.sizes, denominator.sizes);
    emit({"div(" + a.name + ", " + denominator.name + ")", r});
  }

  void step_positive_domain() {
    static const char* kOps[] = {"log", "sqrt", "rsqrt", "pow"};
    const std::string op = choose(kOps);
    const Value v = *any_float();
    if (op == "pow" && chance(2)) {  // integral exponents need no positive base
      static const char* kExponents[] = {"2.0", "3.0", "2"};
      const std::string e = choose(kExponents);
      Value r = v;
      r.contiguous = true;
      r.exact = false;
      r.bound = std::pow(v.bound, e == "3.0" ? 3.0 : 2.0);
      if (r.bound <= kMaxBound) emit({"pow(" + v.name + ", " + e + ")", r});
      return;
    }
    const Value p = at_least_one(v);
    Value r = p;
    r.contiguous = true;
    if (op == "log") {
      r.bound = std::log(p.bound);
    } else if (op == "sqrt") {
      r.bound = std::sqrt(p.bound);
    } else if (op == "rsqrt") {
      r.bound = 1.0;
    } else {
      static const char* kExponents[] = {"0.5", "-1.0", "1.7", "-0.5"};
      const std::string e = choose(kExponents);
      r.bound = std::max(1.0, std::pow(p.bound, std::stod(e)));
      if (r.bound <= kMaxBound) emit({"pow(" + p.name + ", " + e + ")", r});
      return;
    }
    emit({op + "(" + p.name + ")", r});
  }

  void step_exp() {
    const Value* v = any_float();
    // exp amplifies: keep its argument within [-2.5, 2.5] so the result stays below kMaxBound.
    const Value arg = v->bound <= 2.5 ? *v : emit(unary_of(*v, "tanh"));
    Value r = arg;
    r.contiguous = true;
    r.exact = false;
    r.bound = std::exp(arg.bound);
    emit({"exp(" + arg.name + ")", r});
  }

  void step_reduction() {
    const Value v = *any_float();
    if (v.sizes.empty()) return;
    const int rank = static_cast<int>(v.sizes.size());
    bool keepdim = chance(2);
    std::vector<int64_t> dims;
    const bool all = opt_.zero_dim_values && chance(6);
    if (!all) {
      for (int d = 0; d < rank; ++d) {
        if (chance(2)) dims.push_back(chance(3) ? d - rank : d);
      }
      if (dims.empty()) dims.push_back(pick(rank));
      if (!opt_.zero_dim_values && static_cast<int>(dims.size()) == rank) keepdim = true;
    }
    int64_t length = 1;
    std::vector<int64_t> sizes;
    for (int d = 0; d < rank; ++d) {
      const bool reduced = all || std::find_if(dims.begin(), dims.end(), [&](int64_t x) {
                                    return (x + rank) % rank == d;
                                  }) != dims.end();
      if (reduced) length *= v.sizes[static_cast<size_t>(d)];
      if (!reduced) sizes.push_back(v.sizes[static_cast<size_t>(d)]);
      if (reduced && keepdim) sizes.push_back(1);
    }
    static const char* kOps[] = {"sum", "mean", "amax", "amin"};
    std::string op = choose(kOps);
    if (op == "sum" && v.bound * static_cast<double>(length) > kMaxBound) op = "mean";
    Value r = v;
    r.sizes = sizes;
    r.contiguous = true;
    r.exact = v.exact && (op == "amax" || op == "amin");
    if (op == "sum") r.bound = v.bound * static_cast<double>(length);
    std::string args = v.name;
    const bool positional = !all && chance(4);
    if (!all) args += (positional ? ", " : ", dim=") + list(dims);
    if (keepdim) args += positional ? ", True" : ", keepdim=True";
    emit({op + "(" + args + ")", r});
  }

  void step_compare() {
    std::vector<const Value*> exact;
    for (const Value& v : pool_) {
      if (!v.is_bool && !v.typed && v.exact) exact.push_back(&v);
    }
    if (exact.empty()) return;
    const Value a = *exact[static_cast<size_t>(pick(static_cast<int>(exact.size())))];
    static const char* kOps[] = {"gt", "lt", "ge", "le", "eq", "ne"};
    const std::string op = choose(kOps);
    const Value* b = chance(3) ? nullptr : partner(a, false, true);
    Value c = a;
    c.is_bool = true;
    c.dtype = DType::Bool;
    c.exact = true;
    c.bound = 1.0;
    c.contiguous = true;
    std::string expr;
    if (b == nullptr) {
      static const char* kThresholds[] = {"0.0", "0.25", "-0.5"};
      expr = op + "(" + a.name + ", " + choose(kThresholds) + ")";
    } else {
      c.sizes = *broadcast(a.sizes, b->sizes);
      expr = op + "(" + a.name + ", " + b->name + ")";
    }
    const Value cond = emit({expr, c});
    if (chance(6)) {  // a bool operand of float arithmetic promotes to float32
      const Value* x = partner(cond, false, false);
      if (x == nullptr) return;
      Value r = *x;
      r.sizes = *broadcast(cond.sizes, x->sizes);
      r.contiguous = true;
      emit({"mul(" + x->name + ", " + cond.name + ")", r});
      return;
    }
    if (chance(4)) return;  // the bool value may stay an output
    const Value* x = partner(cond, false, false);
    const Value* y = x == nullptr ? nullptr : partner(*x, false, false);
    if (x == nullptr || y == nullptr) return;
    const bool scalar_other = chance(4);
    auto shape = broadcast(cond.sizes, scalar_other ? x->sizes : *broadcast(x->sizes, y->sizes));
    if (!shape || numel(*shape) > budget_) return;
    Value r = *x;
    r.sizes = *shape;
    r.contiguous = true;
    r.bound = scalar_other ? x->bound : std::max(x->bound, y->bound);
    r.exact = x->exact && (scalar_other || y->exact);
    const std::string other = scalar_other ? std::string("0.0") : y->name;
    emit({"where(" + cond.name + ", " + x->name + ", " + other + ")", r});
  }

  void step_copy() {
    const Value v = *any_float();
    Value r = v;
    // clone (preserve_format) keeps the strides of a dense input, a transposed one included,
    // so only `contiguous` makes a value `view` can flatten.
    const bool clone = chance(2);
    r.contiguous = clone ? v.contiguous : true;
    emit({std::string(clone ? "clone(" : "contiguous(") + v.name + ")", r});
  }

  void step_view() {
    const Value v = *any_float();
    const int rank = static_cast<int>(v.sizes.size());
    Value r = v;
    r.contiguous = false;
    auto dim_text = [&](int d, int of_rank) { return std::to_string(chance(3) ? d - of_rank : d); };
    switch (pick(7)) {
      case 0: {  // permute
        if (rank < 2) return;
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        for (size_t i = perm.size(); i > 1; --i)
          std::swap(perm[i - 1], perm[static_cast<size_t>(pick(static_cast<int>(i)))]);
        std::vector<int64_t> written = perm;
        for (size_t i = 0; i < perm.size(); ++i) {
          r.sizes[i] = v.sizes[static_cast<size_t>(perm[i])];
          if (chance(4)) written[i] -= rank;
        }
        emit({"permute(" + v.name + ", " + list(written) + ")", r});
        return;
      }
      case 1: {  // transpose
        if (rank < 2) return;
        const int d0 = pick(rank);
        const int d1 = pick(rank);
        std::swap(r.sizes[static_cast<size_t>(d0)], r.sizes[static_cast<size_t>(d1)]);
        emit({"transpose(" + v.name + ", " + dim_text(d0, rank) + ", " + dim_text(d1, rank) + ")",
              r});
        return;
      }
      case 2:
      case 3: {  // reshape / view to a refactoring of the sizes
        std::vector<int64_t> shape = refactor(v.sizes);
        if (static_cast<int>(shape.size()) > kMaxRank) return;
        const bool as_view = v.contiguous && chance(2);
        r.sizes = shape;
        r.contiguous = as_view || v.contiguous;
        if (!shape.empty() && chance(3))
          shape[static_cast<size_t>(pick(static_cast<int>(shape.size())))] = -1;
        emit({std::string(as_view ? "view(" : "reshape(") + v.name + ", " + list(shape) + ")", r});
        return;
      }
      case 4: {  // expand size-1 dims, perhaps adding a leading dim
        std::vector<int64_t> target;
        r.sizes.clear();
        if (rank < kMaxRank && chance(3)) {
          target.push_back(random_size());
          r.sizes.push_back(target.back());
        }
        for (int64_t s : v.sizes) {
          const int64_t want = s == 1 && chance(2) ? random_size() : (chance(3) ? -1 : s);
          target.push_back(want);
          r.sizes.push_back(want == -1 ? s : want);
        }
        if (numel(r.sizes) > budget_) return;
        emit({"expand(" + v.name + ", " + list(target) + ")", r});
        return;
      }
      case 5: {  // squeeze
        std::vector<int64_t> ones;
        for (int d = 0; d < rank; ++d) {
          if (v.sizes[static_cast<size_t>(d)] == 1) ones.push_back(d);
        }
        r.sizes.clear();
        if (ones.empty() || chance(2)) {
          for (int64_t s : v.sizes) {
            if (s != 1) r.sizes.push_back(s);
          }
          if (r.sizes.empty() && !opt_.zero_dim_values) return;
          emit({"squeeze(" + v.name + ")", r});
          return;
        }
        const int64_t d = ones[static_cast<size_t>(pick(static_cast<int>(ones.size())))];
        r.sizes = v.sizes;
        r.sizes.erase(r.sizes.begin() + d);
        if (r.sizes.empty() && !opt_.zero_dim_values) return;
        emit({"squeeze(" + v.name + ", dim=[" + dim_text(static_cast<int>(d), rank) + "])", r});
        return;
      }
      default: {  // unsqueeze
        if (rank >= kMaxRank) return;
        const int d = pick(rank + 1);
        r.sizes.insert(r.sizes.begin() + d, 1);
        emit({"unsqueeze(" + v.name + ", " + dim_text(d, rank + 1) + ")", r});
        return;
      }
    }
  }

  // Other sizes with the same element count: flattened, two adjacent dims merged, a dim split
  // by one of its factors, or a 1 inserted.
  std::vector<int64_t> refactor(std::vector<int64_t> sizes) {
    const int choice = pick(4);
    if (choice == 0) return {numel(sizes)};
    if (choice == 1 && sizes.size() >= 2) {
      const size_t i = static_cast<size_t>(pick(static_cast<int>(sizes.size()) - 1));
      sizes[i] *= sizes[i + 1];
      sizes.erase(sizes.begin() + static_cast<int64_t>(i) + 1);
      return sizes;
    }
    if (choice == 2 && !sizes.empty()) {
      const size_t i = static_cast<size_t>(pick(static_cast<int>(sizes.size())));
      for (int64_t f : {2, 3, 4, 5, 7, 8}) {
        if (sizes[i] % f == 0 && sizes[i] > f) {
          sizes[i] /= f;
          sizes.insert(sizes.begin() + static_cast<int64_t>(i) + 1, f);
          return sizes;
        }
      }
    }
    sizes.insert(sizes.begin() + pick(static_cast<int>(sizes.size()) + 1), 1);
    return sizes;
  }

  // The program returning `names`. An output that is an input copy_ overwrites, or a view of
  // one, is refused by the eager interpreter and by lowering alike (ir/eager_storage.h: the
  // functional graph would name the old contents, PyTorch's text the new ones); the generator
  // returns a clone of it instead, the spelling of the old contents, which also has the
  // compiler order that read before the write.
  std::string with_outputs(std::vector<std::string> names) {
    for (;;) {
      std::string s;
      for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
      const std::string text = header() + body_.str() + "    return " + s + "\n";
      size_t output = 0;
      try {
        const ir::Graph graph = ir::parse_graph(text);
        const std::optional<ir::OverwrittenOutput> overwritten =
            ir::output_of_overwritten_input(graph);
        if (!overwritten) return text;
        output = overwritten->output;
      } catch (const std::exception&) {
        return text;  // not this function's concern: the generator's tests parse every program
      }
      const std::string clone = fresh();
      body_ << "    " << clone << " = clone(" << names[output] << ")\n";
      names[output] = clone;
    }
  }

  std::vector<std::string> outputs() {
    std::vector<std::string> names;
    const Value& last = pool_.back();
    names.push_back(last.name);
    const int extra = pick(3);
    for (int k = 0; k < extra; ++k) {
      const Value& v = pool_[static_cast<size_t>(pick(static_cast<int>(pool_.size())))];
      if (v.is_input && !chance(8)) continue;  // an input as output is legal but rare
      if (std::find(names.begin(), names.end(), v.name) != names.end() && !chance(10)) continue;
      names.push_back(v.name);
    }
    return names;
  }

  std::mt19937_64 rng_;
  GeneratorOptions opt_;
  std::vector<Value> pool_;
  std::ostringstream body_;
  std::vector<std::string> input_decls_;
  int counter_ = 0;
  int statements_ = 0;
  bool large_ = false;
  int64_t budget_ = 0;
};

}  // namespace

GeneratedCase generate_case(uint64_t seed, const GeneratorOptions& options) {
  return Generator(seed, options).run();
}

}  // namespace stax::fuzz
