// Input validation of compiled graphs (stax::InputError naming the input, the dimension, the
// expected and the actual value), layouts code generation refuses, and the on-disk JIT cache.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <random>

#include "codegen/cpp_codegen.h"
#include "codegen_test_util.h"
#include "lowering/lowering.h"
#include "runtime/jit.h"
#include "scheduler/schedule.h"

namespace stax::codegen_test {
namespace {

const char* kGraph = R"(
def checked(x: f32[7, 33], w: f32[33, 7] strides=[1, 33]):
    t = transpose(w, 0, 1)
    y = add(x, t)
    s = sum(y, dim=[-1], keepdim=True)
    z = div(y, s)
    return z
)";

// Runs `compiled` on `inputs`, expecting an InputError whose message has every substring.
void expect_input_error(const CompiledGraph& compiled, const std::vector<Tensor>& inputs,
                        const std::vector<std::string>& substrings, const std::string& what) {
  SCOPED_TRACE(what);
  try {
    compiled.run(inputs);
    ADD_FAILURE() << "expected stax::InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    for (const auto& s : substrings) {
      EXPECT_NE(message.find(s), std::string::npos)
          << "message \"" << message << "\" lacks \"" << s << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected stax::InputError, got: " << e.what();
  }
}

class Validation : public CodegenTest {};

TEST_P(Validation, BadInputsThrowInputError) {
  const ir::Graph g = ir::parse_graph(kGraph);
  const CompiledGraph compiled = compile_one(g);
  const Tensor x = positive_f32({7, 33}, 1);
  const Tensor w = eager::random_tensor_strided(DType::Float32, {33, 7}, {1, 33}, 2);
  if (!runnable()) {
    EXPECT_THROW(compiled.run({x, w}), std::runtime_error);
    return;
  }
  expect_input_error(compiled, {x}, {"expected 2 inputs", "got 1"}, "too few inputs");
  expect_input_error(compiled, {x, w, x}, {"expected 2 inputs", "got 3"}, "too many inputs");
  expect_input_error(compiled, {Tensor(), w}, {"input 'x'", "undefined"}, "undefined input");
  expect_input_error(compiled, {eager::random_tensor(DType::Float64, {7, 33}, 3), w},
                     {"input 'x'", "expected dtype f32", "got f64"}, "wrong dtype");
  expect_input_error(compiled, {x, eager::random_tensor(DType::Int32, {33, 7}, 3)},
                     {"input 'w'", "expected dtype f32", "got i32"}, "wrong dtype of w");
  expect_input_error(compiled, {random_f32({7, 33, 1}, 4), w},
                     {"input 'x'", "expected 2 dimensions", "got 3"}, "wrong rank");
  expect_input_error(compiled, {random_f32({7, 32}, 5), w},
                     {"input 'x'", "dimension 1", "expected size 33", "got 32"}, "wrong size");
  expect_input_error(compiled, {x, random_f32_strided({34, 7}, {1, 34}, 6)},
                     {"input 'w'", "dimension 0", "expected size 33", "got 34"}, "wrong size of w");
  // w with the right sizes but contiguous: dimension 0 has stride 7, not 1.
  expect_input_error(compiled, {x, random_f32({33, 7}, 7)},
                     {"input 'w'", "dimension 0", "expected stride 1", "got 7"}, "wrong stride");
  expect_input_error(compiled, {random_f32_strided({7, 33}, {1, 7}, 8), w},
                     {"input 'x'", "dimension 0", "expected stride 33", "got 1"}, "transposed x");
  // The same compiled graph still runs correctly afterwards.
  expect_matches_oracle("checked", g, {x, w}, compiled.run({x, w}));
}

INSTANTIATE_TEST_SUITE_P(Levels, Validation, all_params(), param_name);

// The IR refuses layouts whose extent or bytes overflow int64 at parse time; code generation
// checks again, so that kernels computing offsets in int64 can never wrap whatever lowered
// graph they get. Here a valid graph's lowered form is altered after scheduling.
TEST(LayoutOverflow, CodeGenerationRefusesLayoutsThatOverflow) {
  const ir::Graph g = ir::parse_graph("def g(x: f32[4, 4]):\n    y = neg(x)\n    return y\n");
  lowering::LoweredGraph lowered = lowering::lower(g);
  const scheduler::Schedule schedule = scheduler::schedule(lowered);
  const codegen::CodegenOptions options;
  EXPECT_NO_THROW(codegen::generate_cpp(schedule, options));

  lowered.inputs.at(0).strides = {int64_t{1} << 62, 1};
  try {
    codegen::generate_cpp(schedule, options);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "code generation of graph 'g': input 'x' (f32): sizes [4, 4] strides "
              "[4611686018427387904, 1]: the strided extent overflows int64 (offset + the sum of "
              "(size - 1) * stride over the dims, the largest element offset reached, is more "
              "than 9223372036854775807)");
  }
  lowered.inputs.at(0).strides = {4, 1};
  lowering::ComputedBuffer& y = lowered.buffers.at(0);
  y.sizes = {int64_t{1} << 60, 4};
  y.strides = {4, 1};
  try {
    codegen::generate_cpp(schedule, options);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "code generation of graph 'g': buffer '" + y.name + "' (f32, for " + y.source +
                  "): sizes [1152921504606846976, 4] strides [4, 1]: the byte size "
                  "overflows int64 (4611686018427387904 elements of 4 bytes are more than "
                  "9223372036854775807 bytes)");
  }
}

// A fresh cache directory: the first compile runs the compiler, the second (in-process) and
// the third (after every handle to the library is gone: loaded from disk) are cache hits.
TEST(JitCache, SecondCompileHitsTheCache) {
  std::random_device rd;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("stax_codegen_cache_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  CompileOptions o;
  o.simd = SimdLevel::Scalar;
  o.num_threads = 1;
  o.cache_dir = dir.string();
  const ir::Graph g = ir::parse_graph(kGraph);
  const Tensor x = positive_f32({7, 33}, 1);
  const Tensor w = eager::random_tensor_strided(DType::Float32, {33, 7}, {1, 33}, 2);
  std::string path;
  {
    const int64_t before = runtime::compiler_invocations();
    const CompiledGraph first = compile(g, o);
    EXPECT_FALSE(first.cache_hit());
    EXPECT_GT(runtime::compiler_invocations(), before);
    EXPECT_TRUE(std::filesystem::exists(first.library_path()));
    path = first.library_path();

    const int64_t between = runtime::compiler_invocations();
    const CompiledGraph second = compile(g, o);
    EXPECT_TRUE(second.cache_hit());
    EXPECT_EQ(runtime::compiler_invocations(), between);
    EXPECT_EQ(second.library_path(), path);
    expect_matches_oracle("cached (in process)", g, {x, w}, second.run({x, w}));
  }
  const int64_t before_third = runtime::compiler_invocations();
  const CompiledGraph third = compile(g, o);
  EXPECT_TRUE(third.cache_hit());
  EXPECT_EQ(runtime::compiler_invocations(), before_third);
  EXPECT_EQ(third.library_path(), path);
  expect_matches_oracle("cached (from disk)", g, {x, w}, third.run({x, w}));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(Validation, CodegenErrorsNameTheOpAndItsLine) {
  // A refusal of code generation points at the statement whose buffer it could not emit: here
  // a body that masks its loads with a float (the kernel IR builder takes bool masks only).
  auto g = lowering::lower(ir::parse_graph("def f(x: f32[4]):\n    a = relu(x)\n    return a\n"));
  g.buffers.at(0).source = "relu 'a' at masks.stax:2";
  auto body = g.buffers.at(0).value;
  g.buffers.at(0).value = [body](lowering::OpsHandler& h, const std::vector<index::Expr>& idx,
                                 const std::vector<index::Expr>& r) {
    h.push_mask(h.constant(1, DType::Float32));
    const lowering::OpsValue v = body(h, idx, r);
    h.pop_mask();
    return v;
  };
  try {
    analyze_lowered(std::move(g));
    FAIL() << "a float mask must be refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("code generation of relu 'a' at masks.stax:2"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("masks are bool"), std::string::npos) << e.what();
  }
}

TEST(Validation, IntegerSumsCompile) {
  // Code generation used to refuse every dtype but float32 and bool.
  const auto g = ir::parse_graph(
      "def f(x: f32[4, 37]):\n    a = relu(x)\n    s = sum(a, dim=[1], "
      "dtype='i32')\n    return s\n",
      "ints.stax");
  Tensor x = random_f32({4, 37}, 3);
  for (int64_t p = 0; p < x.numel(); ++p) x.set_flat(p, std::floor(x.get_flat(p) * 10));
  expect_matches_oracle("i32 sum", g, {x}, compile(g).run({x}));
}

TEST(Validation, OutputThatCannotBeAllocatedIsAnAllocationErrorNotBadInput) {
  // 10^15 bytes: a valid program whose output no system grants. The wrapper reports it as
  // out of memory (naming the buffer and the bytes), not as a bad argument.
  const auto g = ir::parse_graph(
      "def f(x: f32[1]):\n    y = expand(x, [250000000000000])\n    z = neg(y)\n    return z\n");
  const CompiledGraph compiled = compile(g);
  try {
    compiled.run({eager::random_tensor(DType::Float32, {1}, 1)});
    FAIL() << "the output allocation must fail";
  } catch (const InputError& e) {
    FAIL() << "reported as bad input: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory allocating buf0 (1000000000000000 bytes)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stax::codegen_test
