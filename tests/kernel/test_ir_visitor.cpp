// The kernel IR visitor and mutator (kernel_ir_visitor.h): the visitor sees every use of a
// value in nested loops, whatever field holds it; a mutator that renames a value changes
// every use; the default mutator rebuilds the IR unchanged (and unaliased); the passes that
// walk uses through them cover the statement kinds they used to miss.
#include <cctype>
#include <map>
#include <set>

#include "kernel/kernel_ir_visitor.h"
#include "kernel/passes.h"
#include "kernel/verifier.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using index::Expr;
using kernel::Access;
using kernel::AccessForm;
using kernel::Block;
using kernel::CallArg;
using kernel::IndexRole;
using kernel::IRMutator;
using kernel::IRVisitor;
using kernel::Kernel;
using kernel::Let;
using kernel::LetKind;
using kernel::Stmt;
using kernel::StmtKind;
using kernel::ValueRole;
using lowering::PointwiseOp;

Let constant(int id, DType dtype, int lanes = 1) {
  Let l;
  l.id = id;
  l.kind = LetKind::Constant;
  l.type = {dtype, lanes};
  l.constant = 1;
  return l;
}

Let compute(int id, PointwiseOp op, std::vector<int> args, DType dtype, int lanes = 1) {
  Let l;
  l.id = id;
  l.kind = LetKind::Compute;
  l.op = op;
  l.args = std::move(args);
  l.type = {dtype, lanes};
  return l;
}

kernel::Loop loop(const std::string& var, int64_t end) {
  kernel::Loop l;
  l.var = var;
  l.end = Expr(end);
  return l;
}

Stmt reduce(int accumulator, int value) {
  Stmt s;
  s.kind = StmtKind::Reduce;
  s.accumulator = accumulator;
  s.value = value;
  return s;
}

// Value 0 (a float), value 1 (an int64) and value 2 (a bool) defined at the top and used in
// every field that can hold a value, two loops deep:
//   x0: x1: tmp3 = 0 + 0 (2 uses of 0); store y[x0*8+x1] = 0 (1); load z masked by 2;
//           reduce acc0 <- 0 (1), index 1; check 1 (1); call f(0) (1); index i = 1 (1);
//           gather w at offsets v16 (a vector load of its own).
// Uses of value 0: 5; of value 1: 3; of value 2: 1.
Kernel nested_kernel() {
  Kernel k;
  k.name = "visited";
  k.ranges.extents["x0"] = 4;
  k.ranges.extents["x1"] = 8;
  k.ranges.extents["i"] = 100;
  kernel::Accumulator acc;
  acc.id = 0;
  acc.type = lowering::ReductionType::ArgMax;
  k.accumulators.push_back(acc);
  Block inner;
  inner.push_back(kernel::make_let(compute(3, PointwiseOp::Add, {0, 0}, DType::Float32)));
  Access y;
  y.buffer = "y";
  y.index = Expr::var("x0") * Expr(8) + Expr::var("x1");
  inner.push_back(kernel::make_store(y, 0));
  Let load;
  load.id = 4;
  load.kind = LetKind::Load;
  load.access.buffer = "z";
  load.access.index = Expr::var("x1");
  load.access.mask = 2;
  inner.push_back(kernel::make_let(load));
  Stmt r = reduce(0, 0);
  r.index_value = 1;
  inner.push_back(r);
  Stmt check;
  check.kind = StmtKind::Check;
  check.check = kernel::CheckKind::IndexOutOfRange;
  check.value = 1;
  check.hi = 100;
  check.error_code = 1;
  inner.push_back(check);
  Stmt call;
  call.kind = StmtKind::Call;
  call.name = "f";
  CallArg arg;
  arg.kind = CallArg::Kind::Value;
  arg.value = 0;
  CallArg buffer;
  buffer.kind = CallArg::Kind::Buffer;
  buffer.buffer = "y";
  call.call_args = {arg, buffer};
  inner.push_back(call);
  Stmt define;
  define.kind = StmtKind::DefineIndex;
  define.name = "i";
  define.value = 1;
  inner.push_back(define);
  Let offsets;
  offsets.id = 5;
  offsets.kind = LetKind::IndexValue;
  offsets.type = {DType::Int64, 16};
  offsets.index = Expr::var("x1");
  offsets.step = 1;
  inner.push_back(kernel::make_let(offsets));
  Let gather;
  gather.id = 6;
  gather.kind = LetKind::Load;
  gather.type = {DType::Float32, 16};
  gather.access.buffer = "w";
  gather.access.form = AccessForm::Gather;
  gather.access.offsets = 5;
  inner.push_back(kernel::make_let(gather));

  Block outer;
  outer.push_back(kernel::make_loop(loop("x1", 8), std::move(inner)));
  Stmt init;
  init.kind = StmtKind::AccumulatorInit;
  init.accumulator = 0;
  k.body.push_back(kernel::make_let(constant(0, DType::Float32)));
  Let index;
  index.id = 1;
  index.kind = LetKind::IndexValue;
  index.type = {DType::Int64, 1};
  index.index = Expr::var("x0");
  Let mask = compute(2, PointwiseOp::Lt, {0, 0}, DType::Bool);
  Block body;
  body.push_back(kernel::make_let(index));
  body.push_back(kernel::make_let(mask));
  body.push_back(init);
  for (Stmt& s : outer) body.push_back(std::move(s));
  k.body.push_back(kernel::make_loop(loop("x0", 4), std::move(body)));
  k.next_value = 7;
  return k;
}

// Counts the uses of each value, and which statement kinds and roles they come from.
class UseCounter : public IRVisitor {
 public:
  std::map<int, int> uses;
  std::set<ValueRole> roles;
  int indices = 0;
  int loops = 0;

 protected:
  void visit_value_use(int value, ValueRole role, const Stmt&) override {
    ++uses[value];
    roles.insert(role);
  }
  void visit_index(const Expr&, IndexRole, const Stmt&) override { ++indices; }
  void visit_loop(const Stmt& s) override {
    ++loops;
    visit_children(s);  // the default recursion, kept
  }
};

TEST(KernelIRVisitor, CountsEveryUseInNestedLoops) {
  const Kernel k = nested_kernel();
  UseCounter c;
  c.visit(k.body);
  EXPECT_EQ(c.uses[0], 5 + 2);  // five in the inner loop, two by the mask's comparison
  EXPECT_EQ(c.uses[1], 3);
  EXPECT_EQ(c.uses[2], 1);
  EXPECT_EQ(c.uses[5], 1);  // the gather's offsets
  EXPECT_EQ(c.loops, 2);
  EXPECT_EQ(c.roles, (std::set<ValueRole>{ValueRole::Operand, ValueRole::Mask, ValueRole::Offsets,
                                          ValueRole::Stored, ValueRole::Reduced,
                                          ValueRole::ReducedIndex, ValueRole::Checked,
                                          ValueRole::IndexSource, ValueRole::CallArgument}));
  // Loop bounds (2 x 2), the store's and the load's offsets, two index values, the gather base.
  EXPECT_EQ(c.indices, 4 + 2 + 2 + 1);
}

TEST(KernelIRVisitor, BufferUsesSayWhatIsReadAndWritten) {
  const Kernel k = nested_kernel();
  std::map<std::string, std::set<kernel::BufferRole>> roles;
  kernel::for_each_stmt(k.body, [&](const Stmt& s) {
    kernel::for_each_buffer_use(
        s, [&](const std::string& b, kernel::BufferRole r) { roles[b].insert(r); });
  });
  using kernel::BufferRole;
  EXPECT_EQ(roles["y"], (std::set<BufferRole>{BufferRole::Write, BufferRole::MayReadWrite}));
  EXPECT_EQ(roles["z"], (std::set<BufferRole>{BufferRole::Read}));
  EXPECT_EQ(roles["w"], (std::set<BufferRole>{BufferRole::Read}));
}

// Renames value `from` to `to` wherever it is used (definitions stay).
class RenameUses : public IRMutator {
 public:
  RenameUses(int from, int to) : from_(from), to_(to) {}

 protected:
  int mutate_value(int value, ValueRole) override { return value == from_ ? to_ : value; }

 private:
  int from_, to_;
};

TEST(KernelIRMutator, RenamingAValueChangesEveryUse) {
  const Kernel k = nested_kernel();
  Kernel renamed = k;
  renamed.body = RenameUses(0, 42).mutate(k.body);
  UseCounter before, after;
  before.visit(k.body);
  after.visit(renamed.body);
  EXPECT_EQ(after.uses.count(0), 0u);
  EXPECT_EQ(after.uses[42], before.uses[0]);
  EXPECT_EQ(after.uses[1], before.uses[1]);
  // The original is untouched.
  UseCounter again;
  again.visit(k.body);
  EXPECT_EQ(again.uses, before.uses);
}

// Every value renamed (definitions and uses) in a real kernel of every form: the renamed IR
// verifies (no use was missed, or it would name an undefined value) and prints as the
// original with the names shifted.
class RenameAll : public IRMutator {
 public:
  explicit RenameAll(int shift) : shift_(shift) {}

 protected:
  int mutate_value(int value, ValueRole) override { return value + shift_; }
  void mutate_let(const Stmt& s, Block& out) override {
    Stmt n = rebuild(s);
    n.let.id += shift_;
    out.push_back(std::move(n));
  }

 private:
  int shift_;
};

std::string shift_names(const std::string& text, int shift) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "tmp") == 0 && i + 3 < text.size() && std::isdigit(text[i + 3])) {
      size_t j = i + 3;
      while (j < text.size() && std::isdigit(text[j])) ++j;
      out += "tmp" + std::to_string(std::stoi(text.substr(i + 3, j - i - 3)) + shift);
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Programs reaching every statement kind the pipeline makes: vector loops with tails, split
// and column reductions with cascades and independent accumulators, tiles with register
// transposes, indirect indices with their checks, Welford and arg-reductions.
const char* const kPrograms[] = {
    "def f(x: f32[100003]):\n    s = sum(x)\n    m = argmax(x)\n    return s, m\n",
    "def f(x: f32[300, 200]):\n    s = sum(x, dim=[0])\n    return s\n",
    "def f(x: f32[130, 70], y: f32[70, 130]):\n    t = transpose(y, 0, 1)\n"
    "    z = mul(x, t)\n    return z\n",
    "def f(x: f32[32, 1000]):\n    m = amax(x, dim=[1], keepdim=True)\n"
    "    d = sub(x, m)\n    e = exp(d)\n    s = sum(e, dim=[1], keepdim=True)\n"
    "    y = div(e, s)\n    return y\n",
    "def f(x: f32[8, 300]):\n    v = var(x, [1])\n    return v\n",
    "def f(w: f32[50, 20], i: i64[30]):\n    y = embedding(w, i)\n    return y\n",
    "def f(m: f32[40, 30], col: i64[40, 5]):\n    g = gather(m, 1, col)\n    return g\n",
    "def f(a: i32[200], b: i32[200]):\n    q = floor_divide(a, b)\n    return q\n",
};

std::vector<Kernel> kernels_of(const char* program) {
  auto s = schedule_text(program);
  return lower_all(*s, avx512(4));
}

TEST(KernelIRMutator, RenamingEveryValueOfRealKernelsMissesNoUse) {
  for (const char* program : kPrograms) {
    for (const Kernel& k : kernels_of(program)) {
      Kernel renamed = k;
      renamed.body = RenameAll(1000).mutate(k.body);
      renamed.next_value += 1000;
      EXPECT_NO_THROW(kernel::verify(renamed, "renaming")) << program;
      EXPECT_EQ(kernel::print_kernel(renamed), shift_names(kernel::print_kernel(k), 1000))
          << program;
    }
  }
}

TEST(KernelIRMutator, DefaultMutatorLeavesTheIRIdenticalAndUnaliased) {
  for (const char* program : kPrograms) {
    for (const Kernel& k : kernels_of(program)) {
      Kernel copy = k;
      copy.body = IRMutator().mutate(k.body);
      EXPECT_EQ(kernel::print_kernel(copy), kernel::print_kernel(k)) << program;
      // Its loops are fresh objects: changing them leaves the original's alone.
      auto steps = [](const Block& b) {
        std::vector<int64_t> out;
        kernel::for_each_stmt(b, [&](const Stmt& s) {
          if (s.kind == StmtKind::Loop) out.push_back(s.loop->step);
        });
        return out;
      };
      const std::vector<int64_t> original = steps(k.body);
      kernel::for_each_stmt(copy.body, [&](Stmt& s) {
        if (s.kind == StmtKind::Loop) s.loop->step += 1;
      });
      EXPECT_FALSE(original.empty()) << program;
      EXPECT_EQ(steps(k.body), original) << program;
    }
  }
}

// Before the visitor, simplify re-canonicalized load, store and index-value indices only;
// an index definition or a block transpose kept the form it was built with.
TEST(KernelIRVisitor, SimplifyCanonicalizesEveryIndexExpression) {
  Kernel k;
  k.name = "indices";
  k.ranges.extents["x0"] = 8;
  k.ranges.extents["i"] = 8;
  Stmt define;
  define.kind = StmtKind::DefineIndex;
  define.name = "i";
  define.index = index::mod(Expr::var("x0"), 8);  // x0 < 8: x0 % 8 is x0
  Block body;
  body.push_back(define);
  k.body.push_back(kernel::make_loop(loop("x0", 8), std::move(body)));
  kernel::simplify(k);
  const Stmt& d = k.body.at(0).body.at(0);
  ASSERT_EQ(d.kind, StmtKind::DefineIndex);
  EXPECT_EQ(index::to_string(*d.index), "x0");
}

}  // namespace
}  // namespace stax::kernel_test
