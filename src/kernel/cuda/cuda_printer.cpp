// The CUDA printer of kernel IR (see cuda_printer.h).
#include "kernel/cuda/cuda_printer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "kernel/printer.h"

namespace stax::kernel::cuda {

namespace {

std::string value_name(int id) {
  return "tmp" + std::to_string(id);
}

// Values: 16-bit floats are held as float (as on the CPU, kernel_ir.h).
std::string value_type(DType d) {
  if (d == DType::Float16 || d == DType::BFloat16) return "float";
  return cuda_storage_type(d);
}

bool is_half(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

std::string combine_name(ReductionType type) {
  switch (type) {
    case ReductionType::Sum:
      return "sum";
    case ReductionType::Prod:
      return "prod";
    case ReductionType::Max:
      return "max";
    case ReductionType::Min:
      return "min";
    default:
      throw std::logic_error("no GPU combine for this reduction (gpu_form.cpp refuses it)");
  }
}

// A literal of `value` as `dtype`: the bit patterns of NaN and the infinities (no builtins
// that NVRTC might lack).
std::string literal(const ir::Scalar& value, DType dtype) {
  const bool held_as_float = is_half(dtype);
  const ir::Scalar v = ir::convert_scalar(value, held_as_float ? DType::Float32 : dtype);
  switch (dtype) {
    case DType::Bool:
      return v.bool_value() ? "true" : "false";
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: {
      const float f = static_cast<float>(v.float_value());
      if (std::isnan(f) || std::isinf(f)) {
        uint32_t bits = 0;
        std::memcpy(&bits, &f, sizeof bits);
        char buf[32];
        std::snprintf(buf, sizeof buf, "__int_as_float(0x%08x)", bits);
        return buf;
      }
      return cpp_literal(value, DType::Float32);
    }
    case DType::Float64: {
      const double d = v.float_value();
      if (std::isnan(d) || std::isinf(d)) {
        uint64_t bits = 0;
        std::memcpy(&bits, &d, sizeof bits);
        char buf[48];
        std::snprintf(buf, sizeof buf, "__longlong_as_double(0x%016llxLL)",
                      static_cast<unsigned long long>(bits));
        return buf;
      }
      return cpp_literal(value, DType::Float64);
    }
    default: {
      const int64_t i = v.int_value();
      if (i == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
      return "static_cast<" + cuda_storage_type(dtype) + ">(" + std::to_string(i) + "LL)";
    }
  }
}

class Printer {
 public:
  explicit Printer(const Kernel& k) : k_(k) {
    for_each_stmt(k.body, [&](const Stmt& s) {
      if (s.kind == StmtKind::Let) types_[s.let.id] = s.let.type;
      if (s.kind == StmtKind::Loop && s.loop->kind == ForKind::GpuRows) {
        threads_per_row_ = s.loop->threads_per_row;
        rows_per_block_ = s.loop->rows_per_block;
      }
    });
  }

  std::string run() {
    const GpuDecision& d = k_.decisions.gpu;
    if (!d.on) throw std::logic_error("kernel " + k_.name + ": no GPU form to print");
    out_ << print_source_ops(k_);
    out_ << "// " << d.form << " (" << d.reason << "); " << d.launch_reason << "\n";
    std::string params;
    for (const KernelParam& p : kernel_params(k_)) {
      if (!params.empty()) params += ", ";
      if (!p.buffer) {
        params += "stax::i64 " + p.name;
      } else {
        params += std::string(p.written ? "" : "const ") + cuda_storage_type(p.dtype) +
                  "* __restrict__ " + p.name;
      }
    }
    out_ << "extern \"C\" __global__ void __launch_bounds__(" << d.block << ") stax_" << k_.name
         << "(" << params << ") {\n";
    // Shared memory for the combines across warps, one array per accumulator dtype.
    if (threads_per_row_ > 32) {
      std::set<std::string> types;
      for (const Accumulator& a : k_.accumulators) types.insert(value_type(a.dtype));
      for (const std::string& t : types) line(1, "__shared__ " + t + " " + scratch(t) + "[32];");
    }
    if (d.form != "pointwise") {
      line(1, "const int stax_lane = static_cast<int>(threadIdx.x) % " +
                  std::to_string(threads_per_row_) + ";");
    }
    block(k_.body, 1);
    out_ << "}\n";
    return out_.str();
  }

 private:
  static std::string scratch(const std::string& type) {
    std::string n = "stax_scratch_" + type;
    for (char& c : n) {
      if (c == ':') c = '_';
    }
    return n;
  }

  void line(int indent, const std::string& text) {
    out_ << std::string(static_cast<size_t>(indent) * 2, ' ') << text << "\n";
  }

  std::string idx(const index::Expr& e) const { return index::to_cpp(e, k_.ranges); }

  std::string ptr(const std::string& buffer) const {
    auto it = k_.buffer_is_input.find(buffer);
    return pointer_name(buffer, it != k_.buffer_is_input.end() && it->second);
  }

  const ValueType& type_of(int id) const {
    auto it = types_.find(id);
    if (it == types_.end()) {
      throw std::logic_error("kernel " + k_.name + ": value " + value_name(id) + " is not defined");
    }
    return it->second;
  }

  std::string args_list(const std::vector<int>& args) const {
    std::string s;
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + value_name(args[i]);
    return s;
  }

  std::string load_expr(const Let& l) const {
    const Access& a = l.access;
    if (a.form != AccessForm::Scalar) {
      throw std::logic_error("kernel " + k_.name + ": a vector access on the GPU");
    }
    const std::string p = ptr(a.buffer);
    std::string element = is_half(a.storage) ? "stax::load_float(" + p + " + " + idx(a.index) + ")"
                                             : p + "[" + idx(a.index) + "]";
    if (!is_half(a.storage) && a.storage != l.type.dtype) {
      element = "stax::convert<" + value_type(l.type.dtype) + ">(" + element + ")";
    }
    if (a.mask < 0) return element;
    return "(" + value_name(a.mask) + " ? " + element + " : " + literal(int64_t{0}, l.type.dtype) +
           ")";
  }

  std::string let_expr(const Let& l) const {
    switch (l.kind) {
      case LetKind::Constant:
        return literal(l.constant, l.type.dtype);
      case LetKind::Load:
        return load_expr(l);
      case LetKind::Compute:
        return "stax::op_" + std::string(lowering::op_info(l.op).name) + "(" + args_list(l.args) +
               ")";
      case LetKind::Convert:
        if (l.via) {
          // Rounded through a 16-bit float, held as float again.
          return "stax::to_float(stax::from_float<" + cuda_storage_type(*l.via) + ">(" +
                 value_name(l.args[0]) + "))";
        }
        return "stax::convert<" + value_type(l.type.dtype) + ">(" + value_name(l.args[0]) + ")";
      case LetKind::IndexValue:
        return "static_cast<" + value_type(l.type.dtype) + ">(" + idx(l.index) + ")";
      case LetKind::AccumulatorResult:
        return k_.accumulator(l.accumulator).name();
      default:
        throw std::logic_error("kernel " + k_.name + ": a CPU value kind on the GPU");
    }
  }

  void store(const Stmt& s, int indent) {
    const Access& a = s.access;
    const std::string p = ptr(a.buffer);
    const std::string v = value_name(s.value);
    std::string text;
    if (is_half(a.storage)) {
      text = "stax::store_float(" + p + " + " + idx(a.index) + ", " + v + ");";
    } else {
      const bool narrowed = a.storage != type_of(s.value).dtype;
      text = p + "[" + idx(a.index) + "] = " +
             (narrowed ? "stax::convert<" + cuda_storage_type(a.storage) + ">(" + v + ")" : v) +
             ";";
    }
    line(indent, s.first_thread_of_row ? "if (stax_lane == 0) " + text : text);
  }

  // The variables of a flattened chain of loops, from its flat index, row-major.
  void unflatten(const std::vector<const Loop*>& loops, const std::string& flat, int indent) {
    index::Expr inner(1);
    std::vector<std::string> lines(loops.size());
    for (size_t j = loops.size(); j-- > 0;) {
      const Loop& l = *loops[j];
      const std::string extent = idx(l.end - l.begin);
      std::string v = inner == index::Expr(1) ? flat : "(" + flat + " / (" + idx(inner) + "))";
      if (j > 0) v = "(" + v + " % (" + extent + "))";
      if (l.begin != index::Expr(0)) v = idx(l.begin) + " + " + v;
      lines[j] = "const stax::i64 " + l.var + " = " + v + ";";
      inner = inner * (l.end - l.begin);
    }
    for (const std::string& text : lines) line(indent, text);
  }

  std::vector<const Loop*> chain(const Stmt& s, const Block** body) const {
    std::vector<const Loop*> loops;
    const Stmt* at = &s;
    for (int j = 0; j < s.loop->collapse; ++j) {
      loops.push_back(at->loop.get());
      *body = &at->body;
      if (j + 1 < s.loop->collapse) at = &at->body[0];
    }
    return loops;
  }

  void loop(const Stmt& s, int indent) {
    const Loop& l = *s.loop;
    const Block* body = &s.body;
    if (l.kind == ForKind::GpuRows) {
      const auto loops = chain(s, &body);
      index::Expr rows(1);
      for (const Loop* c : loops) rows = rows * (c->end - c->begin);
      const std::string per_block = std::to_string(l.rows_per_block);
      const std::string first =
          l.threads_per_row == 1
              ? "static_cast<stax::i64>(blockIdx.x) * " + per_block + " + threadIdx.x"
              : "static_cast<stax::i64>(blockIdx.x) * " + per_block + " + threadIdx.x / " +
                    std::to_string(l.threads_per_row);
      line(indent, "for (stax::i64 stax_row = " + first + "; stax_row < " + idx(rows) +
                       "; stax_row += static_cast<stax::i64>(gridDim.x) * " + per_block + ") {");
      unflatten(loops, "stax_row", indent + 1);
    } else if (l.kind == ForKind::GpuLanes) {
      const auto loops = chain(s, &body);
      index::Expr n(1);
      for (const Loop* c : loops) n = n * (c->end - c->begin);
      line(indent, "for (stax::i64 stax_r = stax_lane; stax_r < " + idx(n) +
                       "; stax_r += " + std::to_string(threads_per_row_) + ") {");
      unflatten(loops, "stax_r", indent + 1);
    } else {
      line(indent, "for (stax::i64 " + l.var + " = " + idx(l.begin) + "; " + l.var + " < " +
                       idx(l.end) + "; " +
                       (l.step == 1 ? "++" + l.var : l.var + " += " + std::to_string(l.step)) +
                       ") {");
    }
    block(*body, indent + 1);
    line(indent, "}");
  }

  void block(const Block& b, int indent) {
    for (const Stmt& s : b) stmt(s, indent);
  }

  void stmt(const Stmt& s, int indent) {
    switch (s.kind) {
      case StmtKind::Let: {
        const Let& l = s.let;
        line(indent, "const " + value_type(l.type.dtype) + " " + value_name(l.id) + " = " +
                         let_expr(l) + ";");
        break;
      }
      case StmtKind::Store:
        store(s, indent);
        break;
      case StmtKind::Loop:
        loop(s, indent);
        break;
      case StmtKind::Block:
        line(indent, "{");
        block(s.body, indent + 1);
        line(indent, "}");
        break;
      case StmtKind::DefineIndex:
        line(indent, "const stax::i64 " + s.name + " = " +
                         (s.index ? idx(*s.index) : value_name(s.value)) + ";");
        break;
      case StmtKind::AccumulatorInit: {
        const Accumulator& a = k_.accumulator(s.accumulator);
        line(indent, value_type(a.dtype) + " " + a.name() + " = " +
                         literal(reduction_identity(a.type, a.dtype), a.dtype) + ";");
        break;
      }
      case StmtKind::Reduce: {
        const Accumulator& a = k_.accumulator(s.accumulator);
        line(indent, a.name() + " = stax::combine_" + combine_name(a.type) + "(" + a.name() + ", " +
                         value_name(s.value) + ");");
        break;
      }
      case StmtKind::ThreadCombine: {
        const Accumulator& a = k_.accumulator(s.accumulator);
        const std::string n = a.name();
        if (threads_per_row_ <= 32) {
          line(indent, n + " = stax::warp_allreduce_" + combine_name(a.type) + "(" + n + ", " +
                           std::to_string(threads_per_row_) + ");");
        } else {
          line(indent, n + " = stax::block_allreduce_" + combine_name(a.type) + "(" + n + ", " +
                           scratch(value_type(a.dtype)) + ");");
        }
        break;
      }
      case StmtKind::Comment:
        line(indent, "// " + s.text);
        break;
      case StmtKind::LocalArray:
        // One element per row: a register of each thread (gpu_form.cpp refuses longer ones).
        line(indent,
             cuda_storage_type(s.dtype) + " " + s.name + "[" + std::to_string(s.elements) + "];");
        break;
      case StmtKind::Barrier:
        // The row's threads wait for each other: a block's, or the lanes of its warp.
        if (threads_per_row_ > 32) {
          line(indent, "__syncthreads();");
        } else if (threads_per_row_ == 32) {
          line(indent, "__syncwarp();");
        } else {
          line(indent, "__syncwarp((0xffffffffu >> " + std::to_string(32 - threads_per_row_) +
                           ") << (static_cast<int>(threadIdx.x) % 32 / " +
                           std::to_string(threads_per_row_) + " * " +
                           std::to_string(threads_per_row_) + "));");
        }
        break;
      default:
        throw std::logic_error("kernel " + k_.name + ": a CPU statement on the GPU");
    }
  }

  const Kernel& k_;
  std::map<int, ValueType> types_;
  int threads_per_row_ = 1;
  int rows_per_block_ = 1;
  std::ostringstream out_;
};

}  // namespace

std::string cuda_storage_type(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "stax::u8";
    case DType::Int8:
      return "stax::i8";
    case DType::Int16:
      return "stax::i16";
    case DType::Int32:
      return "stax::i32";
    case DType::Int64:
      return "stax::i64";
    case DType::Float16:
      return "stax::f16";
    case DType::BFloat16:
      return "stax::bf16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  return "float";
}

std::vector<KernelParam> kernel_params(const Kernel& k) {
  std::map<std::string, KernelParam> buffers;
  std::set<std::string> local;
  for_each_stmt(k.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::LocalArray) local.insert(s.name);
  });
  for_each_stmt(k.body, [&](const Stmt& s) {
    const Access* a = s.kind == StmtKind::Store                                ? &s.access
                      : s.kind == StmtKind::Let && s.let.kind == LetKind::Load ? &s.let.access
                                                                               : nullptr;
    if (a == nullptr || local.count(a->buffer)) return;
    KernelParam& p = buffers[a->buffer];
    auto input = k.buffer_is_input.find(a->buffer);
    p.is_input = input != k.buffer_is_input.end() && input->second;
    p.buffer_name = a->buffer;
    p.name = pointer_name(a->buffer, p.is_input);
    p.dtype = a->storage;
    p.written = p.written || s.kind == StmtKind::Store;
  });
  std::vector<KernelParam> out;
  for (auto& [name, p] : buffers) out.push_back(p);
  for (const auto& [symbol, fact] : k.ranges.symbols) {
    KernelParam p;
    p.name = symbol;
    p.buffer = false;
    p.dtype = DType::Int64;
    out.push_back(p);
  }
  return out;
}

std::string print_cuda_kernel(const Kernel& kernel) {
  return Printer(kernel).run();
}

}  // namespace stax::kernel::cuda
