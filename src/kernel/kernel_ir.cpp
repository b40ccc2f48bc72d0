// Constructors and copies of kernel IR statements.
#include "kernel/kernel_ir.h"

#include <limits>

namespace stax::kernel {

Stmt make_let(Let let) {
  Stmt s;
  s.kind = StmtKind::Let;
  s.let = std::move(let);
  return s;
}

Stmt make_store(Access access, int value) {
  Stmt s;
  s.kind = StmtKind::Store;
  s.access = std::move(access);
  s.value = value;
  return s;
}

Stmt make_loop(Loop loop, Block body) {
  Stmt s;
  s.kind = StmtKind::Loop;
  s.loop = std::make_shared<Loop>(std::move(loop));
  s.body = std::move(body);
  return s;
}

Stmt make_block(Block body) {
  Stmt s;
  s.kind = StmtKind::Block;
  s.body = std::move(body);
  return s;
}

Stmt make_comment(std::string text) {
  Stmt s;
  s.kind = StmtKind::Comment;
  s.text = std::move(text);
  return s;
}

Block clone_block(const Block& block) {
  Block out;
  out.reserve(block.size());
  for (const Stmt& s : block) {
    Stmt c = s;
    if (s.loop) c.loop = std::make_shared<Loop>(*s.loop);
    c.body = clone_block(s.body);
    out.push_back(std::move(c));
  }
  return out;
}

std::string_view kernel_form_name(KernelForm form) {
  switch (form) {
    case KernelForm::Scalar:
      return "scalar";
    case KernelForm::Vectorized:
      return "vectorized";
    case KernelForm::Tiled:
      return "tiled";
    case KernelForm::ColumnReduction:
      return "column reduction";
  }
  return "?";
}

ir::Scalar reduction_identity(ReductionType type, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  const DType held = dtype == DType::Float16 || dtype == DType::BFloat16 ? DType::Float32 : dtype;
  auto of_dtype = [held](const ir::Scalar& s) { return ir::convert_scalar(s, held); };
  switch (type) {
    case ReductionType::Sum:
    case ReductionType::Any:
    case ReductionType::WelfordMean:
    case ReductionType::WelfordM2:
      return of_dtype(int64_t{0});
    case ReductionType::Prod:
    case ReductionType::All:
      return of_dtype(int64_t{1});
    case ReductionType::Max:
    case ReductionType::ArgMax:
      if (dtype == DType::Bool) return false;
      if (is_integral(dtype)) return integer_range(dtype).lowest;
      return -inf;
    case ReductionType::Min:
    case ReductionType::ArgMin:
      if (dtype == DType::Bool) return true;
      if (is_integral(dtype)) return integer_range(dtype).highest;
      return inf;
  }
  return of_dtype(int64_t{0});
}

}  // namespace stax::kernel
