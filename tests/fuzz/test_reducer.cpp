// The reducer on synthetic failure predicates: it must shrink a 30-statement program to the
// few lines the predicate needs, keep the predicate true, and stay within its budget.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fuzz/reducer.h"
#include "ir/graph.h"
#include "ir/op_schema.h"

namespace stax::fuzz {
namespace {

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// "The program contains exp applied to a reduction" (it must parse).
bool exp_of_reduction(const std::string& text) {
  try {
    const ir::Graph g = ir::parse_graph(text);
    for (const ir::Node& n : g.nodes()) {
      if (n.op != "exp") continue;
      const int producer = ir::tensor_arg(g, n, 0).producer;
      if (producer < 0) continue;
      const std::string& op = g.nodes()[static_cast<size_t>(producer)].op;
      if (op == "sum" || op == "mean" || op == "amax" || op == "amin") return true;
    }
  } catch (const std::exception&) {
  }
  return false;
}

// 30 statements over two inputs; the exp of a reduction sits in the middle of the chain.
std::string thirty_line_program() {
  std::string text = "def g(x: f32[17, 33], y: f32[17, 33] strides=[1, 17]):\n";
  text += "    v0 = add(x, y)\n";
  const char* ops[] = {"neg", "tanh", "abs", "relu", "sigmoid"};
  for (int i = 1; i < 30; ++i) {
    const std::string prev = "v" + std::to_string(i - 1);
    const std::string name = "v" + std::to_string(i);
    if (i == 12) {
      text += "    " + name + " = sum(" + prev + ", dim=[1], keepdim=True)\n";
    } else if (i == 13) {
      text += "    " + name + " = exp(" + prev + ")\n";
    } else if (i == 14) {
      text += "    " + name + " = mul(x, " + prev + ")\n";
    } else if (i % 4 == 0) {
      text += "    " + name + " = maximum(" + prev + ", y)\n";
    } else {
      text += "    " + name + " = " + ops[i % 5] + "(" + prev + ")\n";
    }
  }
  text += "    return v29, v13\n";
  return text;
}

TEST(Reducer, ExpOfReductionShrinksToThreeLines) {
  const std::string program = thirty_line_program();
  ASSERT_TRUE(exp_of_reduction(program));
  ASSERT_GE(count_lines(program), 32);
  const ReduceResult r = reduce_program(program, exp_of_reduction);
  SCOPED_TRACE(r.text);
  EXPECT_TRUE(exp_of_reduction(r.text));
  // The def line, then at most: the reduction, the exp and the return.
  EXPECT_LE(count_lines(r.text) - 1, 3);
  // Sizes shrink to 1 and the unused input and its strides disappear.
  const ir::Graph g = ir::parse_graph(r.text);
  ASSERT_EQ(g.inputs().size(), 1u);
  for (int64_t s : g.value(g.inputs()[0]).type.sizes) EXPECT_EQ(s, 1);
  EXPECT_EQ(r.text.find("strides"), std::string::npos);
}

TEST(Reducer, GarbageIsCutToTheCharactersThatMatter) {
  // A failure that needs only "@@" somewhere: line and character passes must find it.
  const std::string program = thirty_line_program() + "    tail @@ garbage\n";
  auto has_marker = [](const std::string& t) { return t.find("@@") != std::string::npos; };
  const ReduceResult r = reduce_program(program, has_marker);
  EXPECT_EQ(r.text, "@@\n");
}

TEST(Reducer, StopsAtTheCheckBudget) {
  int calls = 0;
  ReduceOptions options;
  options.max_checks = 7;
  const ReduceResult r = reduce_program(
      thirty_line_program(),
      [&](const std::string&) {
        ++calls;
        return false;
      },
      options);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(r.checks, 7);
  EXPECT_EQ(r.text, thirty_line_program());  // nothing was accepted
}

// Issue 32, point 4: candidates that each take 10 s (on an injected clock) and a deadline at
// 50 s: five checks, then the reducer stops with the smallest failing text so far and says
// that it ran out of time. Each check is reported with the pass that proposed it.
TEST(Reducer, StopsAtTheTimeBudget) {
  double now = 0;
  int calls = 0;
  std::vector<std::string> passes;
  ReduceOptions options;
  options.clock = [&] { return now; };
  options.deadline = 50;
  options.on_check = [&](const ReduceProgress& p) {
    passes.push_back(p.pass);
    EXPECT_EQ(p.checks, static_cast<int>(passes.size()));
  };
  const ReduceResult r = reduce_program(
      thirty_line_program(),
      [&](const std::string& text) {
        ++calls;
        now += 10;
        return exp_of_reduction(text);
      },
      options);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(r.checks, 5);
  EXPECT_TRUE(r.out_of_time);
  EXPECT_TRUE(exp_of_reduction(r.text));
  ASSERT_EQ(passes.size(), 5u);
  EXPECT_EQ(passes[0], "remove line chunks");
}

TEST(Reducer, ANaturalEndIsNotOutOfTime) {
  double now = 0;
  ReduceOptions options;
  options.clock = [&] { return now; };
  options.deadline = 1e9;
  const ReduceResult r = reduce_program(thirty_line_program(), exp_of_reduction, options);
  EXPECT_FALSE(r.out_of_time);
  EXPECT_TRUE(exp_of_reduction(r.text));
}

}  // namespace
}  // namespace stax::fuzz
