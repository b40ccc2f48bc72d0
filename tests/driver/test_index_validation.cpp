// Index validation of the ops that read through an index tensor (issue 13, point 3): the eager
// interpreter and compiled code at every SIMD level against torch 2.13.0 eager, for the values
// -size-1, -size, -1, size and the extremes of the index dtype. Only index.Tensor wraps a
// negative index; index_select, gather and embedding raise for any value outside [0, size),
// with PyTorch's message and class: ir::IndexError where PyTorch raises IndexError,
// std::out_of_range (RuntimeError in Python) where it raises RuntimeError. One graph holds
// every op, each with its own index input, so one compilation per level serves all cases: a
// case makes one index element bad and must raise that op's error, naming the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"
#include "ir/index_rule.h"

namespace stax {
namespace {

// The indexing ops of PyTorch's tests (python/tests/test_index_validation.py). The indexed
// values feed a product, so the checks also run inside fused kernels.
constexpr const char* kGraph = R"(
def f(t: f32[3, 4], v: f32[5], t3: f32[3, 4, 2], w: f32[5, 3], i_rows: i64[2], i_cols: i64[2], i_vec: i64[2], i_dim2: i64[2], g_rows: i64[1, 4], g_cols: i64[3, 1], e: i64[2, 2], x_rows: i64[20], x_cols: i64[2], j: i32[2]):
    a = index_select(t, 0, i_rows)
    b = index_select(t, 1, i_cols)
    c = index_select(v, 0, i_vec)
    d = index_select(t3, 2, i_dim2)
    g0 = gather(t, 0, g_rows)
    g1 = gather(t, 1, g_cols)
    m = embedding(w, e)
    m2 = mul(m, 2.0)
    x0 = index(t, [x_rows])
    x1 = index(t, [None, x_cols])
    x2 = index(t, [j])
    return a, b, c, d, g0, g1, m2, x0, x1, x2
)";

struct IndexInput {
  std::string name;
  int64_t size;  // of the dim it indexes
  // What torch 2.13.0 eager raises for a bad value V ("{}"): the message and whether it is
  // an IndexError; empty when eager accepts negative values down to -size (index.Tensor).
  std::string message;
  bool index_error;
  bool wraps;
};

const std::vector<IndexInput>& index_inputs() {
  static const std::vector<IndexInput> inputs = {
      // torch.index_select(arange(12.).reshape(3, 4), 0, tensor([-1])):
      // IndexError: index out of range in self
      {"i_rows", 3, "index out of range in self", true, false},
      // torch.index_select(t, 1, tensor([-1])):
      // RuntimeError: INDICES element is out of DATA bounds, id=-1 axis_dim=4
      {"i_cols", 4, "INDICES element is out of DATA bounds, id={} axis_dim=4", false, false},
      {"i_vec", 5, "index out of range in self", true, false},
      {"i_dim2", 2, "index out of range in self", true, false},
      // torch.gather(t, 0, full((1, 4), -1)):
      // RuntimeError: index -1 is out of bounds for dimension 0 with size 3
      {"g_rows", 3, "index {} is out of bounds for dimension 0 with size 3", false, false},
      {"g_cols", 4, "index {} is out of bounds for dimension 1 with size 4", false, false},
      // F.embedding(tensor([-1]), w): IndexError: index out of range in self
      {"e", 5, "index out of range in self", true, false},
      // t[tensor([-4])]: IndexError: index -4 is out of bounds for dimension 0 with size 3
      {"x_rows", 3, "index {} is out of bounds for dimension 0 with size 3", true, true},
      // t[:, tensor([4])]: IndexError: index 4 is out of bounds for dimension 0 with size 4
      {"x_cols", 4, "index {} is out of bounds for dimension 0 with size 4", true, true},
      {"j", 3, "index {} is out of bounds for dimension 0 with size 3", true, true},
  };
  return inputs;
}

void set_int(const Tensor& t, int64_t position, int64_t value) {
  if (t.dtype() == DType::Int32) {
    static_cast<int32_t*>(t.data())[position] = static_cast<int32_t>(value);
  } else {
    static_cast<int64_t*>(t.data())[position] = value;
  }
}

// The graph's inputs with every index valid: index input k holds p % size at position p.
std::vector<Tensor> valid_inputs(const ir::Graph& g) {
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < g.inputs().size(); ++k) {
    const ir::Value& in = g.value(g.inputs()[k]);
    Tensor t = Tensor::empty(in.type.dtype, in.type.sizes);
    std::optional<int64_t> size;
    for (const IndexInput& i : index_inputs()) {
      if (i.name == in.name) size = i.size;
    }
    for (int64_t p = 0; p < t.numel(); ++p) {
      if (size) {
        set_int(t, p, p % *size);
      } else {
        t.set_flat(p, static_cast<double>(p));
      }
    }
    inputs.push_back(t);
  }
  return inputs;
}

size_t input_position(const ir::Graph& g, const std::string& name) {
  for (size_t k = 0; k < g.inputs().size(); ++k) {
    if (g.value(g.inputs()[k]).name == name) return k;
  }
  throw std::logic_error("no input " + name);
}

std::string with_value(std::string message, int64_t value) {
  const size_t at = message.find("{}");
  if (at != std::string::npos) message.replace(at, 2, std::to_string(value));
  return message;
}

// Runs `run` and checks it throws the error eager PyTorch raises for `value` in `input`.
template <class Run>
void expect_torch_error(const Run& run, const IndexInput& input, int64_t value,
                        const std::string& where) {
  const std::string message = with_value(input.message, value);
  const std::string op = input.name[0] == 'i'   ? "index_select: "
                         : input.name[0] == 'g' ? "gather: "
                         : input.name[0] == 'e' ? "embedding: "
                                                : "index: ";
  try {
    run();
    ADD_FAILURE() << where << ": no error";
  } catch (const ir::IndexError& e) {
    EXPECT_TRUE(input.index_error) << where << ": IndexError " << e.what();
    EXPECT_NE(std::string(e.what()).find(op + message), std::string::npos) << where << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(value)), std::string::npos) << e.what();
  } catch (const std::out_of_range& e) {
    EXPECT_FALSE(input.index_error) << where << ": RuntimeError " << e.what();
    EXPECT_NE(std::string(e.what()).find(op + message), std::string::npos) << where << e.what();
  }
}

TEST(IndexValidation, EveryIndexingOpWrapsOrRaisesAsEager) {
  const ir::Graph g = ir::parse_graph(kGraph, "index.stax");
  const std::vector<Tensor> valid = valid_inputs(g);
  std::vector<CompiledGraph> compiled;
  for (auto simd : runtime::runnable_simd_levels()) {
    CompileOptions options;
    options.simd = simd;
    options.num_threads = 2;
    compiled.push_back(compile(g, options));
  }
  for (const IndexInput& input : index_inputs()) {
    const bool i32 = input.name == "j";
    const int64_t lowest =
        i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    const int64_t highest =
        i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    const size_t k = input_position(g, input.name);
    for (int64_t value : {-input.size - 1, -input.size, int64_t{-1}, input.size, lowest, highest}) {
      std::vector<Tensor> inputs = valid;
      inputs[k] = valid[k].contiguous_copy();
      set_int(inputs[k], inputs[k].numel() - 1, value);  // past the first vector of x_rows
      const bool accepted = input.wraps && value >= -input.size && value < 0;
      const std::string where = input.name + " = " + std::to_string(value);
      if (accepted) {
        const std::vector<Tensor> expected = eager::run(g, inputs);
        for (const CompiledGraph& c : compiled) {
          const std::vector<Tensor> got = c.run(inputs);
          for (size_t o = 0; o < got.size(); ++o) {
            EXPECT_TRUE(eager::compare(got[o], expected[o], 0.0, 0.0).within_tolerance)
                << where << ", output " << o;
          }
        }
        continue;
      }
      expect_torch_error([&] { eager::run(g, inputs); }, input, value, "eager, " + where);
      for (size_t l = 0; l < compiled.size(); ++l) {
        expect_torch_error(
            [&] { compiled[l].run(inputs); }, input, value,
            std::string(runtime::simd_level_name(runtime::runnable_simd_levels()[l])) + ", " +
                where);
      }
    }
  }
}

TEST(IndexValidation, IndexTensorWrapsNegativeIndicesOnce) {
  // t = arange(12.).reshape(3, 4); t[tensor([-1, -3])] -> [[8, 9, 10, 11], [0, 1, 2, 3]] and
  // t[:, tensor([-4])] -> [[0], [4], [8]] in torch 2.13.0 eager.
  const ir::Graph g = ir::parse_graph(R"(
def f(t: f32[3, 4], r: i64[2], c: i64[1]):
    a = index(t, [r])
    b = index(t, [None, c])
    return a, b
)",
                                      "wrap.stax");
  Tensor t = Tensor::empty(DType::Float32, {3, 4});
  for (int64_t p = 0; p < 12; ++p) t.set_flat(p, static_cast<double>(p));
  Tensor r = Tensor::empty(DType::Int64, {2});
  set_int(r, 0, -1);
  set_int(r, 1, -3);
  Tensor c = Tensor::empty(DType::Int64, {1});
  set_int(c, 0, -4);
  const std::vector<double> a = {8, 9, 10, 11, 0, 1, 2, 3};
  const std::vector<double> b = {0, 4, 8};
  auto check = [&](const std::vector<Tensor>& out, const std::string& where) {
    for (size_t p = 0; p < a.size(); ++p) EXPECT_EQ(out[0].get_flat(p), a[p]) << where;
    for (size_t p = 0; p < b.size(); ++p) EXPECT_EQ(out[1].get_flat(p), b[p]) << where;
  };
  check(eager::run(g, {t, r, c}), "eager");
  for (auto simd : runtime::runnable_simd_levels()) {
    CompileOptions options;
    options.simd = simd;
    check(compile(g, options).run({t, r, c}), std::string(runtime::simd_level_name(simd)));
  }
}

TEST(IndexValidation, EveryIndexThroughAnEmptyDimIsRefused) {
  // torch 2.13.0 eager, with index tensor([0]) (any value is refused):
  //   index_select(zeros(0), 0, i)      IndexError: index out of range in self
  //   index_select(zeros(0, 4), 0, i)   RuntimeError: index_select(): self indexing axis dim
  //                                     should be positive
  //   gather(zeros(3, 0), 1, zeros(3, 1)) RuntimeError: index 0 is out of bounds for dimension
  //                                       1 with size 0
  //   zeros(0, 2)[i]                    IndexError: index is out of bounds for dimension with
  //                                     size 0
  struct Case {
    std::string statement, inputs, message;
    bool index_error;
  };
  const std::vector<Case> cases = {
      {"index_select(s, 0, i)", "s: f32[0], i: i64[1]", "index out of range in self", true},
      {"index_select(s, 0, i)", "s: f32[0, 4], i: i64[1]",
       "index_select(): self indexing axis dim should be positive", false},
      {"gather(s, 1, i)", "s: f32[3, 0], i: i64[3, 1]",
       "index 0 is out of bounds for dimension 1 with size 0", false},
      {"index(s, [i])", "s: f32[0, 2], i: i64[1]",
       "index is out of bounds for dimension with size 0", true},
      // The same with an empty result (no element reads through the index):
      //   index_select(zeros(0, 0), 0, i), embedding(i, zeros(0, 0))  RuntimeError: index_select():
      //                                     self indexing axis dim should be positive
      //   zeros(0, 0)[i], zeros(0, 0)[:, i] IndexError: index is out of bounds for dimension
      //                                     with size 0
      {"index_select(s, 0, i)", "s: f32[0, 0], i: i64[1]",
       "index_select(): self indexing axis dim should be positive", false},
      {"embedding(s, i)", "s: f32[0, 0], i: i64[1]",
       "index_select(): self indexing axis dim should be positive", false},
      {"index(s, [i])", "s: f32[0, 0], i: i64[1]",
       "index is out of bounds for dimension with size 0", true},
      {"index(s, [None, i])", "s: f32[0, 0], i: i64[1]",
       "index is out of bounds for dimension with size 0", true},
  };
  for (const Case& c : cases) {
    const ir::Graph g = ir::parse_graph(
        "def f(" + c.inputs + "):\n    y = " + c.statement + "\n    return y\n", "empty.stax");
    std::vector<Tensor> inputs;
    for (const ir::ValueRef in : g.inputs()) {
      inputs.push_back(Tensor::empty(g.value(in).type.dtype, g.value(in).type.sizes));
    }
    auto expect_error = [&](const auto& run, const std::string& where) {
      try {
        run();
        ADD_FAILURE() << where << ": no error";
      } catch (const ir::IndexError& e) {
        EXPECT_TRUE(c.index_error) << where << ": IndexError " << e.what();
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      } catch (const std::out_of_range& e) {
        EXPECT_FALSE(c.index_error) << where << ": RuntimeError " << e.what();
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      }
    };
    expect_error([&] { eager::run(g, inputs); }, "eager " + c.statement);
    const CompiledGraph compiled = compile(g);
    expect_error([&] { compiled.run(inputs); }, "compiled " + c.statement);
  }
}

TEST(IndexValidation, AnEmptyResultStillChecksEveryIndexValue) {
  // Each result has no elements because of a dim other than the indexed one, so no element
  // reads through the index; torch 2.13.0 eager still checks every value of index_select
  // and embedding, with one RuntimeError for any dim, and checks nothing of index.Tensor:
  //   index_select(zeros(3, 0), 0, tensor([0, -1]))  RuntimeError: INDICES element is out of
  //                                                  DATA bounds, id=-1 axis_dim=3
  //   embedding(tensor([[0, 1], [2, 5]]), zeros(3, 0))  ... id=5 axis_dim=3
  //   zeros(3, 0)[tensor([5])]                       no error, a (1, 0) result
  // (An empty indexed dim refuses every index: EveryIndexThroughAnEmptyDimIsRefused.) One
  // graph holds every op with its own index; a case makes one index element bad.
  const ir::Graph g = ir::parse_graph(R"(
def f(s30: f32[3, 0], s302: f32[3, 0, 2], s023: f32[0, 2, 3], s03: f32[0, 3], wb: bf16[3, 0], i_rows: i64[2], i_dim0: i64[1], i_dim2: i64[2], i_dim1: i64[1], i_32: i32[1], e: i64[2, 2], e_bf16: i64[1], x: i64[1]):
    a = index_select(s30, 0, i_rows)
    b = index_select(s302, 0, i_dim0)
    c = index_select(s023, 2, i_dim2)
    d = index_select(s03, 1, i_dim1)
    k = index_select(s30, 0, i_32)
    m = embedding(s30, e)
    n = embedding(wb, e_bf16)
    n2 = mul(n, 2.0)
    y = index(s30, [x])
    return a, b, c, d, k, m, n2, y
)",
                                      "empty_result.stax");
  const std::vector<std::pair<std::string, std::string>> checked = {
      {"i_rows", "index_select"}, {"i_dim0", "index_select"}, {"i_dim2", "index_select"},
      {"i_dim1", "index_select"}, {"i_32", "index_select"},   {"e", "embedding"},
      {"e_bf16", "embedding"}};
  // Valid indices (p % 3 at position p), and x = 5, which eager accepts for the empty result.
  std::vector<Tensor> valid;
  for (const ir::ValueRef in : g.inputs()) {
    const ir::Value& v = g.value(in);
    Tensor t = Tensor::empty(v.type.dtype, v.type.sizes);
    if (!is_floating(v.type.dtype)) {
      for (int64_t p = 0; p < t.numel(); ++p) set_int(t, p, v.name == "x" ? 5 : p % 3);
    }
    valid.push_back(t);
  }
  std::vector<CompiledGraph> compiled;
  for (auto simd : runtime::runnable_simd_levels()) {
    CompileOptions options;
    options.simd = simd;
    options.num_threads = 2;
    compiled.push_back(compile(g, options));
  }
  auto expect_empty = [&](const std::vector<Tensor>& out, const std::string& where) {
    ASSERT_EQ(out.size(), 8u) << where;
    for (const Tensor& t : out) EXPECT_EQ(t.numel(), 0) << where;
  };
  expect_empty(eager::run(g, valid), "eager, all valid");
  for (const CompiledGraph& c : compiled) expect_empty(c.run(valid), "compiled, all valid");
  for (const auto& [name, op] : checked) {
    const bool i32 = name == "i_32";
    const int64_t lowest =
        i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    const int64_t highest =
        i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    const size_t k = input_position(g, name);
    for (int64_t value : {int64_t{-4}, int64_t{-1}, int64_t{3}, lowest, highest}) {
      std::vector<Tensor> inputs = valid;
      inputs[k] = valid[k].contiguous_copy();
      set_int(inputs[k], inputs[k].numel() - 1, value);
      const IndexInput input{name, 3, "INDICES element is out of DATA bounds, id={} axis_dim=3",
                             false, false};
      const std::string where = name + " = " + std::to_string(value);
      const std::string prefix = op + ": ";
      auto expect_error = [&](const auto& run, const std::string& at) {
        try {
          run();
          ADD_FAILURE() << at << ": no error";
        } catch (const ir::IndexError& e) {
          ADD_FAILURE() << at << ": IndexError " << e.what();
        } catch (const std::out_of_range& e) {
          EXPECT_NE(std::string(e.what()).find(prefix + with_value(input.message, value)),
                    std::string::npos)
              << at << ": " << e.what();
        }
      };
      expect_error([&] { eager::run(g, inputs); }, "eager, " + where);
      for (size_t l = 0; l < compiled.size(); ++l) {
        expect_error([&] { compiled[l].run(inputs); },
                     std::string(runtime::simd_level_name(runtime::runnable_simd_levels()[l])) +
                         ", " + where);
      }
    }
  }
}

}  // namespace
}  // namespace stax
