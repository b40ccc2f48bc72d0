// Tests of sizes known only at run time in the graph IR (issue 33, ir/symbolic_shapes.h): the
// text format of symbols and their facts, the symbolic shape rules against the static rules at
// every size (brute force over the symbols' values), refusals by name, binding, and reading a
// call's sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "graph_passes/bind_sizes.h"
#include "ir/symbolic_shapes.h"
#include "ir/text_format.h"
#include "test_util.h"

namespace stax::ir {
namespace {

using index::Expr;

const TensorType& type_of(const Graph& g, const std::string& name) {
  return g.value(*g.find_value(name)).type;
}

std::string parse_error(const std::string& text) {
  try {
    parse_graph(text, "t.stax");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "<no error>";
}

// The property the symbolic rules must have: at these values of the symbols, every value's
// symbolic sizes (and a non-empty value's strides) evaluate to what the static rules give for
// the bound graph, and a static value's type is the bound graph's.
void expect_rules_agree_at(const Graph& g, const std::map<std::string, int64_t>& values) {
  const Graph bound = graph_passes::bind_sizes(g, values);
  ASSERT_FALSE(bound.is_symbolic());
  ASSERT_EQ(bound.values().size(), g.values().size());
  std::string at;
  for (const auto& [name, value] : values) at += " " + name + "=" + std::to_string(value);
  for (size_t v = 0; v < g.values().size(); ++v) {
    const TensorType& symbolic = g.values()[v].type;
    const TensorType& concrete = bound.values()[v].type;
    if (!symbolic.is_symbolic()) {
      EXPECT_EQ(symbolic, concrete) << g.values()[v].name << " at" << at;
      continue;
    }
    std::vector<int64_t> sizes, strides;
    for (const Expr& e : symbolic.symbolic_sizes) sizes.push_back(index::evaluate(e, values));
    for (const Expr& e : symbolic.symbolic_strides) strides.push_back(index::evaluate(e, values));
    EXPECT_EQ(sizes, concrete.sizes) << g.values()[v].name << " at" << at;
    // An empty tensor's strides address nothing (PyTorch computes them with sizes raised to
    // at least 1, which no polynomial of the sizes does).
    const bool empty = std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
    if (!empty) {
      EXPECT_EQ(strides, concrete.strides) << g.values()[v].name << " at" << at;
    }
  }
}

// Every op family with a symbolic rule, on two symbols.
const char* const kProgram =
    "def f(x: f32[s0, 16], b: f32[16], y: f32[s1, s0, 16], w: f32[16, 8]) where s0: [2, 64] "
    "multiple_of=2 hint=6, s1: [1, 5]:\n"
    "    a = add(x, b)\n"
    "    e = exp(a)\n"
    "    s = sum(e, dim=[-1], keepdim=True)\n"
    "    d = div(e, s)\n"
    "    m = mean(y, dim=[0])\n"
    "    z = mul(m, d)\n"
    "    t = transpose(z, 0, 1)\n"
    "    u = unsqueeze(t, 0)\n"
    "    p = permute(y, [2, 0, 1])\n"
    "    g = mm(z, w)\n"
    "    h = addmm(b, t, x)\n"
    "    r = amax(y, dim=[1])\n"
    "    c = clone(p)\n"
    "    return d, u, c, g, h, r\n";

TEST(SymbolicShapes, TypesAreExpressionsOverTheSymbolsAndHoldAtTheHints) {
  const Graph g = parse_graph(kProgram, "t.stax");
  EXPECT_TRUE(g.is_symbolic());
  ASSERT_EQ(g.size_symbols().size(), 2u);
  EXPECT_EQ(g.size_symbols().at("s0"), (index::SizeSymbol{2, 64, 2, 6}));
  EXPECT_EQ(g.size_symbols().at("s1").hint, 5);  // the default hint 64, moved into [1, 5]
  const Expr s0 = Expr::var("s0"), s1 = Expr::var("s1");
  EXPECT_EQ(type_of(g, "a").symbolic_sizes, (std::vector<Expr>{s0, 16}));
  EXPECT_EQ(type_of(g, "a").sizes, (std::vector<int64_t>{6, 16}));
  EXPECT_EQ(type_of(g, "s").symbolic_sizes, (std::vector<Expr>{s0, 1}));
  EXPECT_EQ(type_of(g, "m").symbolic_sizes, (std::vector<Expr>{s0, 16}));
  EXPECT_EQ(type_of(g, "u").symbolic_sizes, (std::vector<Expr>{1, 16, s0}));
  EXPECT_EQ(type_of(g, "u").symbolic_strides, (std::vector<Expr>{16 * s0, s0, 1}));
  EXPECT_EQ(type_of(g, "p").symbolic_sizes, (std::vector<Expr>{16, s1, s0}));
  EXPECT_EQ(type_of(g, "y").symbolic_strides, (std::vector<Expr>{16 * s0, 16, 1}));
  EXPECT_EQ(type_of(g, "g").symbolic_sizes, (std::vector<Expr>{s0, 8}));
  EXPECT_EQ(type_of(g, "r").symbolic_sizes, (std::vector<Expr>{s1, 16}));
  // A product over the symbolic dim is static.
  EXPECT_FALSE(type_of(g, "h").is_symbolic());
  EXPECT_EQ(type_of(g, "h").sizes, (std::vector<int64_t>{16, 16}));
}

TEST(SymbolicShapes, PrintAndParseRoundTrip) {
  const Graph g = parse_graph(kProgram, "t.stax");
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("def f(x: f32[s0, 16], b: f32[16], y: f32[s1, s0, 16], w: f32[16, 8]) "
                      "where s0: [2, 64] multiple_of=2 hint=6, s1: [1, 5]:"),
            std::string::npos)
      << text;
  const Graph again = parse_graph(text, "printed.stax");
  EXPECT_TRUE(again == g) << text;
  // Strides as products of symbols; a symbol with every default fact is not declared.
  const Graph t = parse_graph(
      "def t(x: f32[s1, s0] strides=[1, s1], v: f32[4, s2] strides=[2*s2, 2]):\n"
      "    y = neg(x)\n    return y\n",
      "t.stax");
  EXPECT_EQ(type_of(t, "x").symbolic_strides, (std::vector<Expr>{1, Expr::var("s1")}));
  EXPECT_EQ(type_of(t, "v").symbolic_strides, (std::vector<Expr>{2 * Expr::var("s2"), 2}));
  EXPECT_EQ(t.size_symbols().at("s2"), default_size_symbol());
  EXPECT_TRUE(parse_graph(print_graph(t), "p.stax") == t) << print_graph(t);
  EXPECT_EQ(print_graph(t).find("where"), std::string::npos);
}

TEST(SymbolicShapes, SymbolicRulesAgreeWithTheStaticRulesAtEverySize) {
  const Graph g = parse_graph(kProgram, "t.stax");
  for (int64_t s0 = 2; s0 <= 64; s0 += 2) {
    for (int64_t s1 = 1; s1 <= 5; ++s1) expect_rules_agree_at(g, {{"s0", s0}, {"s1", s1}});
  }
}

// A transformer block's shapes: size arguments that are expressions over the symbols.
const char* const kBlock =
    "def blk(ids: i64[1, s0], wte: f32[100, 32], x: f32[1, s0, 32], w: f32[32, 96],\n"
    "        mask: f32[1, 1, 64, 64]) where s0: [2, 64] hint=9:\n"
    "    e = embedding(wte, ids)\n"
    "    h = add(e, x)\n"
    "    f = view(h, [s0, 32])\n"
    "    q = mm(f, w)\n"
    "    q3 = view(q, [1, s0, 3, 32])\n"
    "    p = permute(q3, [0, 2, 1, 3])\n"
    "    r = reshape(p, [3, -1, 32])\n"
    "    m = slice(mask, 2, 0, s0)\n"
    "    m2 = slice(m, 3, 0, s0)\n"
    "    sq = squeeze(m2, [0])\n"
    "    c = cat([h, x], 1)\n"
    "    g = view(c, [-1, 32])\n"
    "    sel = select(h, 1, -1)\n"
    "    ex = expand(sel, [s0, 32])\n"
    "    n = narrow(h, 1, 1, s0 - 1)\n"
    "    t = slice(h, 1, 1, -1, 2)\n"
    "    ids1 = view(ids, [s0])\n"
    "    i = index_select(wte, 0, ids1)\n"
    "    return r, sq, g, ex, n, t, i\n";

TEST(SymbolicShapes, SizeArgumentsAreExpressions) {
  const Graph g = parse_graph(kBlock, "t.stax");
  const Expr s0 = Expr::var("s0");
  EXPECT_EQ(type_of(g, "e").symbolic_sizes, (std::vector<Expr>{1, s0, 32}));
  EXPECT_EQ(type_of(g, "r").symbolic_sizes, (std::vector<Expr>{3, s0, 32}));
  EXPECT_EQ(type_of(g, "sq").symbolic_sizes, (std::vector<Expr>{1, s0, s0}));
  EXPECT_EQ(type_of(g, "g").symbolic_sizes, (std::vector<Expr>{2 * s0, 32}));
  EXPECT_EQ(type_of(g, "ex").symbolic_sizes, (std::vector<Expr>{s0, 32}));
  EXPECT_EQ(type_of(g, "n").symbolic_sizes, (std::vector<Expr>{1, s0 - 1, 32}));
  EXPECT_EQ(type_of(g, "sel").sizes, (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(type_of(g, "i").symbolic_sizes, (std::vector<Expr>{s0, 32}));
  EXPECT_FALSE(type_of(g, "sel").is_symbolic());
  EXPECT_TRUE(parse_graph(print_graph(g), "p.stax") == g) << print_graph(g);
  for (int64_t v = 2; v <= 64; ++v) expect_rules_agree_at(g, {{"s0", v}});
  // The strided slice of every other element from 1 to s0 - 1.
  const Graph at = graph_passes::bind_sizes(g, {{"s0", 10}});
  EXPECT_EQ(type_of(at, "t").sizes, (std::vector<int64_t>{1, 4, 32}));
}

TEST(SymbolicShapes, SizeArgumentsThatHoldOnlySometimesAreRefused) {
  using testing::infer_error;
  EXPECT_EQ(infer_error("x: f32[s0, 4]", "reshape(x, [128, 2])"),
            "reshape: sizes [128, 2] hold as many elements as [s0, 4] only for some values of the "
            "size symbols");
  EXPECT_EQ(infer_error("x: f32[s0, 64]", "slice(x, 0, 0, 64)"),
            "slice: of dim 0 (size s0) from 0 to 64 is in range only for some values of the size "
            "symbols");
  EXPECT_EQ(infer_error("x: f32[1, 4], y: f32[s0]", "expand(x, [s0, 4])"), "<no error>");
  EXPECT_EQ(infer_error("x: f32[s1, 4], y: f32[s0]", "expand(x, [s0, 4])"),
            "expand: dim 0 expands size s1 to s0, which holds only for some values of the size "
            "symbols");
  EXPECT_EQ(infer_error("x: f32[s0, 4]", "squeeze(x)"),
            "squeeze: dim 0 of size s0 may be 1 (squeezed) or not, depending on the size "
            "symbols");
  EXPECT_EQ(infer_error("x: f32[s0, s1], y: f32[s0, s0]", "cat([x, y], 0)"),
            "cat: dim 1 of its operands has sizes s1 and s0, which agree only for some values of "
            "the size symbols");
  // A value may not take a symbol's name, so that an argument names one or the other.
  EXPECT_EQ(parse_error("def f(x: f32[s0]):\n    s0 = neg(x)\n    return s0\n"),
            "t.stax:2:5: neg: value name 's0' is the name of a size symbol");
}

// Images of any height and width through convolutions and poolings (floor mode): the spatial
// sizes are floor divisions of the symbols, equal to the static rules' at every size.
TEST(SymbolicShapes, WindowsOverSymbolicImagesAgreeWithTheStaticRules) {
  const Graph g = parse_graph(
      "def net(x: f32[2, 3, s0, s1], w: f32[8, 3, 3, 3], w2: f32[4, 8, 1, 1]) where s0: [8, 40], "
      "s1: [8, 40]:\n"
      "    c = convolution(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)\n"
      "    r = relu(c)\n"
      "    p, i = max_pool2d_with_indices(r, [3, 3], [2, 2], [1, 1])\n"
      "    c2 = convolution(p, w2, None, [1], [0], [1], False, [0], 1)\n"
      "    a = avg_pool2d(c2, [2, 2])\n"
      "    q = _adaptive_avg_pool2d(c2, [1, 1])\n"
      "    return a, q, i\n",
      "t.stax");
  EXPECT_TRUE(type_of(g, "a").is_symbolic());
  EXPECT_FALSE(type_of(g, "q").is_symbolic());
  for (int64_t h = 8; h <= 40; h += 3) {
    for (int64_t w = 8; w <= 40; ++w) expect_rules_agree_at(g, {{"s0", h}, {"s1", w}});
  }
  // A window that fits only some images is refused by name.
  EXPECT_EQ(parse_error("def f(x: f32[1, 1, s0, 8]) where s0: [1, 40]:\n"
                        "    a = avg_pool2d(x, [4, 4])\n    return a\n"),
            "t.stax:2:5: avg_pool2d: a window of 4 over a dim of size s0 fits only for some values "
            "of the size symbols");
}

TEST(SymbolicShapes, BindingChecksTheFactsByName) {
  const Graph g = parse_graph(kProgram, "t.stax");
  auto bind_error = [&](std::map<std::string, int64_t> values) -> std::string {
    try {
      graph_passes::bind_sizes(g, values);
    } catch (const GraphError& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(bind_error({{"s0", 7}, {"s1", 2}}),
            "size symbol s0 = 7 breaks its facts (s0 in [2, 64] and a multiple of 2)");
  EXPECT_EQ(bind_error({{"s0", 66}, {"s1", 2}}),
            "size symbol s0 = 66 breaks its facts (s0 in [2, 64] and a multiple of 2)");
  EXPECT_EQ(bind_error({{"s0", 4}}), "no value for size symbol s1");
  EXPECT_EQ(bind_error({{"s0", 4}, {"s1", 1}, {"s2", 3}}),
            "'s2' is not a size symbol of graph 'f'");
  // Bound at the sizes it would have been written with, the graph is that static graph.
  const Graph bound = graph_passes::bind_sizes(g, {{"s0", 4}, {"s1", 3}});
  std::string text = kProgram;
  text = text.substr(text.find(":\n"));
  const Graph written = parse_graph(
      "def f(x: f32[4, 16], b: f32[16], y: f32[3, 4, 16], w: f32[16, 8])" + text, "t.stax");
  EXPECT_EQ(print_graph(bound), print_graph(written));
}

TEST(SymbolicShapes, CallSizesAreReadFromTheInputsAndCheckedByDimension) {
  const Graph g = parse_graph(kProgram, "t.stax");
  EXPECT_EQ(sizes_of_call(g, {{10, 16}, {16}, {3, 10, 16}, {16, 8}}),
            (std::map<std::string, int64_t>{{"s0", 10}, {"s1", 3}}));
  auto call_error = [&](std::vector<std::vector<int64_t>> sizes) -> std::string {
    try {
      sizes_of_call(g, sizes);
    } catch (const GraphError& e) {
      return e.what();
    }
    return "<no error>";
  };
  EXPECT_EQ(call_error({{10, 16}, {16}, {3, 12, 16}, {16, 8}}),
            "input 'y': dim 1 has size 12 but must be s0 = 10 (sizes [s1, s0, 16])");
  EXPECT_EQ(call_error({{10, 15}, {16}, {3, 10, 16}, {16, 8}}),
            "input 'x': dim 1 has size 15 but must be 16 (sizes [s0, 16])");
  EXPECT_EQ(call_error({{10, 16}, {16}, {3, 10}, {16, 8}}),
            "input 'y': expected 3 dims [s1, s0, 16], got [3, 10]");
  EXPECT_EQ(call_error({{9, 16}, {16}, {3, 9, 16}, {16, 8}}),
            "size symbol s0 = 9 breaks its facts (s0 in [2, 64] and a multiple of 2)");
  EXPECT_EQ(call_error({{10, 16}}), "graph 'f' takes 4 inputs, got 1");
}

// A backward graph's input holds a flattened [2, s0] batch: its rows are 2*s0.
TEST(SymbolicShapes, AnInputDimThatIsAMultipleOfASymbolGivesIt) {
  const Graph g = parse_graph(
      "def f(x: f32[2*s0, 4], y: f32[2, s0, 4]):\n    v = view(y, [2*s0, 4])\n"
      "    z = add(x, v)\n    return z\n",
      "t.stax");
  EXPECT_EQ(type_of(g, "z").symbolic_sizes, (std::vector<Expr>{2 * Expr::var("s0"), 4}));
  EXPECT_EQ(sizes_of_call(g, {{14, 4}, {2, 7, 4}}).at("s0"), 7);
  try {
    sizes_of_call(g, {{15, 4}, {2, 7, 4}});
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()),
              "input 'x': dim 0 has size 15 but must be 2*s0 = 14 (sizes [2*s0, 4])");
  }
}

TEST(SymbolicShapes, RulesThatWouldDependOnTheSymbolsValuesAreRefusedByName) {
  using testing::infer_error;
  EXPECT_EQ(infer_error("x: f32[s0], y: f32[s1]", "add(x, y)"),
            "add: dim 0 broadcasts sizes s0 and s1, which agree only for some values of the size "
            "symbols");
  EXPECT_EQ(infer_error("x: f32[s0], y: f32[64]", "add(x, y)"),
            "add: dim 0 broadcasts sizes s0 and 64, which agree only for some values of the size "
            "symbols");
  EXPECT_EQ(infer_error("x: f32[s0, s1], y: f32[s0, 4]", "mm(x, y)"),
            "mm: the shared dims s1 and s0 agree only for some values of the size symbols");
  // A view to constant sizes would hold only at the hint.
  EXPECT_EQ(infer_error("x: f32[s0, 4]", "view(x, [256])"),
            "view: sizes [256] hold as many elements as [s0, 4] only for some values of the size "
            "symbols");
  EXPECT_EQ(infer_error("x: f32[s0, 4]", "stack([x, x], 0)"),
            "stack: has no symbolic shape rule yet (an operand's sizes are symbolic)");
  // amax has no identity: its symbolic dim must be proved non-empty.
  EXPECT_EQ(infer_error("x: f32[s0, 4]", "amax(x, dim=[0])"),
            "amax: reduces dim 0 of size s0, which may be 0 (the reduction has no identity; "
            "declare its symbol at least 1)");
  const Graph nonempty = parse_graph(
      "def t(x: f32[s0, 4]) where s0: [1, 100]:\n    r = amax(x, dim=[0])\n    return r\n", "t");
  EXPECT_EQ(type_of(nonempty, "r").sizes, (std::vector<int64_t>{4}));
}

TEST(SymbolicShapes, BadSymbolsAndFactsAreParseErrors) {
  EXPECT_EQ(parse_error("def f(x: f32[batch, 4]):\n    return x\n"),
            "t.stax:1:14: expected an integer or a size symbol (s0, s1, ...), found 'batch'");
  EXPECT_EQ(parse_error("def f(x: f32[s0]) where s0: [8, 4]:\n    return x\n"),
            "t.stax:1:25: size symbol 's0': its range [8, 4] must be non-empty and non-negative, "
            "and its divisor at least 1");
  EXPECT_EQ(parse_error("def f(x: f32[s0]) where s0: [8, 16] hint=3:\n    return x\n"),
            "t.stax:1:25: size symbol 's0': its hint 3 is not a value it may take");
  EXPECT_EQ(parse_error("def f(x: f32[s0]) where s0: [8]:\n    return x\n"),
            "t.stax:1:29: expected a range [lo, hi], found '['");
  EXPECT_EQ(parse_error("def f(x: f32[s0]) where s0: [1, 8], s0: [1, 9]:\n    return x\n"),
            "t.stax:1:37: size symbol 's0' is declared twice");
  // Sizes whose tensors int64 cannot count are refused per call, by value (the symbols need no
  // declared range to be compiled).
  const Graph g =
      parse_graph("def f(x: f32[s0, s1, s2]):\n    y = unsqueeze(x, 0)\n    return y\n", "t.stax");
  EXPECT_EQ(sizes_of_call(g, {{1 << 20, 1 << 20, 1 << 10}}).at("s2"), 1 << 10);
  try {
    sizes_of_call(g, {{1 << 30, 1 << 30, 1 << 10}});
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 29), "'x' (f32, sizes [s0, s1, s2])") << e.what();
  }
}

}  // namespace
}  // namespace stax::ir
