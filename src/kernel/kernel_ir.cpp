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

double reduction_identity(ReductionType type, DType dtype) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (type) {
    case ReductionType::Sum:
    case ReductionType::Any:
    case ReductionType::WelfordMean:
    case ReductionType::WelfordM2:
      return 0.0;
    case ReductionType::Prod:
    case ReductionType::All:
      return 1.0;
    case ReductionType::Max:
    case ReductionType::ArgMax:
      return dtype == DType::Bool ? 0.0 : -inf;
    case ReductionType::Min:
    case ReductionType::ArgMin:
      return dtype == DType::Bool ? 1.0 : inf;
  }
  return 0.0;
}

}  // namespace stax::kernel
