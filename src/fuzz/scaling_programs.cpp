// Programs of growing size in the shapes that once made compile time explode, shared by the
// compile-time benchmark and the scaling tests.
#include "fuzz/scaling_programs.h"

#include <sstream>
#include <vector>

namespace stax::fuzz {

std::string chain_program(int n) {
  std::ostringstream s;
  s << "def chain(x: f32[64, 128]):\n    v0 = relu(x)\n";
  static const char* kOps[] = {"neg", "abs", "relu", "sigmoid"};
  for (int i = 1; i < n; ++i) s << "    v" << i << " = " << kOps[i % 4] << "(v" << i - 1 << ")\n";
  s << "    return v" << n - 1 << "\n";
  return s.str();
}

// v = add(v, v), repeated: every value is read twice by its only user.
std::string self_read_program(int n) {
  std::ostringstream s;
  s << "def self_read(x: f32[64, 128]):\n    v0 = add(x, x)\n";
  for (int i = 1; i < n; ++i) s << "    v" << i << " = add(v" << i - 1 << ", v" << i - 1 << ")\n";
  s << "    return v" << n - 1 << "\n";
  return s.str();
}

// transpose then reshape to another factorization, repeated, over a computed value: no
// strided layout expresses these views, so their index arithmetic composes.
std::string view_chain_program(int n) {
  std::ostringstream s;
  s << "def view_chain(x: f32[12, 35]):\n    v0 = add(x, 1.0)\n";
  for (int i = 1; i < n; ++i) {
    if (i % 2 == 1) {
      s << "    v" << i << " = transpose(v" << i - 1 << ", 0, 1)\n";
    } else {
      s << "    v" << i << " = reshape(v" << i - 1
        << (i % 4 == 2 ? ", [20, 21])\n" : ", [12, 35])\n");
    }
  }
  s << "    v" << n << " = add(v" << n - 1 << ", 1.0)\n";
  s << "    return v" << n << "\n";
  return s.str();
}

// n outputs, each a pointwise function of the same input: one kernel with n stores.
std::string many_outputs_program(int n) {
  std::ostringstream s;
  s << "def many_outputs(x: f32[64, 128]):\n";
  for (int i = 0; i < n; ++i) s << "    o" << i << " = mul(x, " << i + 1 << ".0)\n";
  s << "    return ";
  for (int i = 0; i < n; ++i) s << (i ? ", " : "") << "o" << i;
  s << "\n";
  return s.str();
}

// A binary tree of adds over many products and row sums: wide, and reductions mixed in.
std::string wide_dag_program(int n) {
  std::ostringstream s;
  s << "def wide_dag(x: f32[64, 128], y: f32[64, 128]):\n";
  std::vector<std::string> level;
  int k = 0;
  for (int i = 0; i < n / 2; ++i) {
    const std::string name = "p" + std::to_string(k++);
    if (i % 3 == 2) {
      s << "    " << name << " = sum(x, dim=[-1], keepdim=True)\n";
    } else {
      s << "    " << name << " = mul(" << (i % 2 ? "x" : "y") << ", " << i + 1 << ".0)\n";
    }
    level.push_back(name);
  }
  while (level.size() > 1) {
    std::vector<std::string> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      const std::string name = "p" + std::to_string(k++);
      s << "    " << name << " = add(" << level[i] << ", " << level[i + 1] << ")\n";
      next.push_back(name);
    }
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  s << "    return " << level[0] << "\n";
  return s.str();
}

std::string many_fusions_program(int n) {
  std::ostringstream s;
  s << "def many_fusions(x: f32[64, 128]):\n    acc0 = relu(x)\n";
  int blocks = 0;
  for (int i = 0; 4 * i + 1 < n; ++i, ++blocks) {
    s << "    t" << i << " = mul(x, " << i + 1 << ".0)\n";
    s << "    s" << i << " = sum(t" << i << ", dim=[-1], keepdim=True)\n";
    s << "    u" << i << " = div(t" << i << ", s" << i << ")\n";
    s << "    acc" << i + 1 << " = add(acc" << i << ", u" << i << ")\n";
  }
  s << "    return acc" << blocks << "\n";
  return s.str();
}

}  // namespace stax::fuzz
