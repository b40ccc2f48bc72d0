// The written-out attention (graph_passes/fuse_written_attention.h): which graphs the pass
// rewrites into softmax_attention and which it leaves (others read the probabilities, the
// cost model, head sizes that differ, no runtime attention), and the compiled rewritten
// program against the eager oracle of the graph as written, at 1, 2 and 3 threads: GPT-2's
// form (a broadcast additive mask), LLaMA's (float32 softmax between two conversions of
// bfloat16 scores), BERT's and ViT's (copies before the batch reshapes, no mask), T5's (no
// scale), a division by the scale, the [B, L, H, E] storage models produce, and a row every
// key is masked from, which gives NaN as the softmax does.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "driver/external_calls.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "expect_outputs_match.h"
#include "graph_passes/graph_passes.h"
#include "ir/graph.h"

namespace stax {
namespace {

struct Form {
  std::string dtype = "f32";
  std::string mask_dtype = "f32";
  std::string mask_sizes = "[2, 1, 1, 128]";  // empty: no mask
  std::string scale = "mul(s, 0.125)";        // of `s`; "s": none
  bool upcast = false;                        // softmax in float32 between conversions
  bool copies = false;                        // clones before the batch reshapes
  bool transposed_storage = false;            // q, k, v stored [B, L, H, E]
  bool probabilities_out = false;             // the probabilities are an output too
  int64_t b = 2, h = 12, lq = 128, lk = 128, e = 64, ev = 64;
  int64_t kv_heads = 0;  // LLaMA's repeat_kv from this many key/value heads (0: none)
};

std::string sizes(std::initializer_list<int64_t> s) {
  std::string out = "[";
  for (int64_t v : s) out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "]";
}

// The graph as ATen decomposes matmul -> scale -> mask -> softmax -> matmul.
std::string written_out(const Form& f) {
  const std::string t = f.dtype;
  const int64_t kv = f.kv_heads > 0 ? f.kv_heads : f.h;
  auto param = [&](const char* name, int64_t h, int64_t l, int64_t e) {
    if (!f.transposed_storage) return std::string(name) + ": " + t + sizes({f.b, h, l, e});
    return std::string(name) + ": " + t + sizes({f.b, h, l, e}) +
           " strides=" + sizes({l * h * e, e, h * e, 1});
  };
  const int64_t bh = f.b * f.h;
  std::string p = "def attn(" + param("q", f.h, f.lq, f.e) + ", " + param("k", kv, f.lk, f.e) +
                  ", " + param("v", kv, f.lk, f.ev) +
                  (f.mask_sizes.empty() ? "" : ", m: " + f.mask_dtype + f.mask_sizes) + "):\n";
  auto batch = [&](const std::string& name, const std::string& of, int64_t r, int64_t c) {
    std::string s = "    " + name + "e = expand(" + of + ", " + sizes({f.b, f.h, r, c}) + ")\n";
    std::string src = name + "e";
    if (f.copies) {
      s += "    " + name + "c = clone(" + src + ", memory_format=\"contiguous_format\")\n";
      src = name + "c";
    }
    return s + "    " + name + "3 = reshape(" + src + ", " + sizes({bh, r, c}) + ")\n";
  };
  std::string key = "k", value = "v";
  if (f.kv_heads > 0) {  // repeat_kv: each key/value head for h / kv_heads query heads
    for (const auto& [n, e] : {std::pair<std::string, int64_t>{"k", f.e}, {"v", f.ev}}) {
      p += "    " + n + "u = unsqueeze(" + n + ", 2)\n";
      p += "    " + n + "x = expand(" + n + "u, " + sizes({f.b, kv, f.h / kv, f.lk, e}) + ")\n";
      p += "    " + n + "5 = clone(" + n + "x, memory_format=\"contiguous_format\")\n";
      p += "    " + n + "g = reshape(" + n + "5, " + sizes({f.b, f.h, f.lk, e}) + ")\n";
    }
    key = "kg";
    value = "vg";
  }
  p += "    kt = transpose(" + key + ", 2, 3)\n";
  p += batch("q", "q", f.lq, f.e) + batch("k", "kt", f.e, f.lk);
  p += "    s3 = bmm(q3, k3)\n    s = reshape(s3, " + sizes({f.b, f.h, f.lq, f.lk}) + ")\n";
  p += "    y = " + (f.scale == "s" ? std::string("clone(s)") : f.scale) + "\n";
  p += std::string("    x = ") + (f.mask_sizes.empty() ? "clone(y)" : "add(y, m)") + "\n";
  std::string x = "x";
  if (f.upcast) {
    p += "    xf = _to_copy(x, dtype=\"f32\")\n";
    x = "xf";
  }
  p += "    mx = amax(" + x + ", [-1], True)\n    d = sub(" + x + ", mx)\n    ex = exp(d)\n";
  p += "    z = sum(ex, [-1], True)\n    pr = div(ex, z)\n";
  std::string pr = "pr";
  if (f.upcast) {
    p += "    pb = _to_copy(pr, dtype=\"" + t + "\")\n";
    pr = "pb";
  }
  p += "    pclone = clone(" + pr + ")\n";
  p += batch("p", "pclone", f.lq, f.lk) + batch("v", value, f.lk, f.ev);
  p += "    o3 = bmm(p3, v3)\n    o = reshape(o3, " + sizes({f.b, f.h, f.lq, f.ev}) + ")\n";
  p += std::string("    return o") + (f.probabilities_out ? ", pr" : "") + "\n";
  return p;
}

graph_passes::GraphPassResult passes(const ir::Graph& g, bool runtime = true) {
  graph_passes::GraphPassOptions o;
  if (runtime) o.attention_blocks = &driver::runtime_attention_blocks;
  return graph_passes::run_graph_passes(g, o);
}

int count_op(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : g.nodes()) n += node.op == op;
  return n;
}

void expect_rewritten(const Form& f) {
  const ir::Graph g = ir::parse_graph(written_out(f), "attn.stax");
  const graph_passes::GraphPassResult r = passes(g);
  ASSERT_EQ(r.log.size(), 1u) << written_out(f);
  EXPECT_NE(r.log[0].find("becomes softmax_attention"), std::string::npos) << r.log[0];
  EXPECT_EQ(count_op(r.graph, "softmax_attention"), 1);
  // Nothing of the written-out form is left: no product, no softmax, no copies.
  for (const char* op : {"bmm", "amax", "exp", "sum", "div", "clone", "expand", "reshape"}) {
    EXPECT_EQ(count_op(r.graph, op), 0) << op << " in\n" << ir::print_graph(r.graph);
  }
  EXPECT_EQ(r.graph.value(r.graph.outputs()[0]).type, g.value(g.outputs()[0]).type);
}

TEST(WrittenAttentionPass, RewritesTheFormsOfTheModels) {
  Form gpt2;
  expect_rewritten(gpt2);
  Form llama;
  llama.dtype = llama.mask_dtype = "bf16";
  llama.upcast = true;
  llama.mask_sizes = "[2, 1, 128, 128]";
  expect_rewritten(llama);
  Form bert;
  bert.mask_sizes = "";
  bert.copies = true;
  bert.transposed_storage = true;
  expect_rewritten(bert);
  Form t5;
  t5.scale = "s";
  t5.mask_sizes = "[2, 12, 128, 128]";
  expect_rewritten(t5);
  Form divided;
  divided.scale = "div(s, 8.0)";
  divided.mask_sizes = "[128, 128]";
  expect_rewritten(divided);
  Form bf16_f32_mask;
  bf16_f32_mask.dtype = "bf16";
  bf16_f32_mask.upcast = true;
  expect_rewritten(bf16_f32_mask);
}

TEST(WrittenAttentionPass, RepeatedKeyValueHeadsAreReadAsGroupedQueryAttention) {
  Form llama_gqa;
  llama_gqa.kv_heads = 4;
  llama_gqa.mask_sizes = "[2, 1, 128, 128]";
  expect_rewritten(llama_gqa);
  const ir::Graph r = passes(ir::parse_graph(written_out(llama_gqa))).graph;
  // The attention reads k and v themselves: no repeat, no copy, no transpose is left.
  for (const char* op : {"unsqueeze", "transpose"}) EXPECT_EQ(count_op(r, op), 0) << op;
  EXPECT_NE(ir::print_graph(r).find("softmax_attention(q, k, v"), std::string::npos)
      << ir::print_graph(r);
}

TEST(WrittenAttentionPass, TheScaleAndMaskCarryOver) {
  Form f;
  f.scale = "div(s, 8.0)";
  f.mask_sizes = "[128]";  // rank 2 after an unsqueeze
  const ir::Graph g = ir::parse_graph(written_out(f));
  const ir::Graph r = passes(g).graph;
  const std::string text = ir::print_graph(r);
  EXPECT_NE(text.find("scale=0.125"), std::string::npos) << text;
  EXPECT_NE(text.find("attn_mask="), std::string::npos) << text;
  EXPECT_NE(text.find("unsqueeze(m, 0)"), std::string::npos) << text;
}

TEST(WrittenAttentionPass, LeavesWhatItMustNot) {
  auto expect_left = [](const Form& f, const std::string& why, bool runtime = true) {
    const ir::Graph g = ir::parse_graph(written_out(f));
    const graph_passes::GraphPassResult r = passes(g, runtime);
    EXPECT_EQ(count_op(r.graph, "softmax_attention"), 0) << why;
    EXPECT_EQ(count_op(r.graph, "bmm"), 2) << why;
    std::string log;
    for (const auto& l : r.log) log += l + "\n";
    return log;
  };
  Form training;  // the backward reads the probabilities
  training.probabilities_out = true;
  EXPECT_EQ(expect_left(training, "probabilities read"), "");
  Form plain;
  EXPECT_EQ(expect_left(plain, "no runtime attention", /*runtime=*/false), "");
  Form small;  // blocks' fixed costs outweigh the scores' traffic
  small.b = 1;
  small.h = 2;
  small.lq = small.lk = 16;
  small.mask_sizes = "[1, 1, 1, 16]";
  EXPECT_NE(expect_left(small, "cost").find("stays written out: blocked moves"), std::string::npos);
  Form decode;  // one query row
  decode.lq = 1;
  decode.mask_sizes = "[2, 1, 1, 128]";
  EXPECT_NE(expect_left(decode, "cost").find("stays written out"), std::string::npos);
  Form wide;
  wide.ev = 32;
  EXPECT_NE(expect_left(wide, "head sizes").find("head size differs"), std::string::npos);
  Form f64;
  f64.dtype = f64.mask_dtype = "f64";
  EXPECT_EQ(expect_left(f64, "float64"), "");
}

std::vector<Tensor> inputs_of(const ir::Graph& g) {
  std::vector<Tensor> inputs;
  uint64_t seed = 11;
  for (ir::ValueRef in : g.inputs()) {
    const ir::TensorType& type = g.value(in).type;
    inputs.push_back(
        eager::random_tensor_strided(type.dtype, type.sizes, type.strides, seed++, -1.0, 1.0));
  }
  return inputs;
}

// Compiled (rewritten) against the oracle of the written-out graph; the threads agree.
void expect_compiled_matches(const Form& f, std::vector<Tensor> inputs = {}) {
  const ir::Graph g = ir::parse_graph(written_out(f), "attn.stax");
  if (inputs.empty()) inputs = inputs_of(g);
  const std::vector<Tensor> expected = eager::run(g, inputs);
  CompileOptions o;
  o.num_threads = 2;
  const CompiledGraph compiled = compile(g, o);
  const auto& externals = compiled.compilation().module.externals;
  ASSERT_EQ(externals.size(), 1u);
  EXPECT_EQ(externals[0].call->op, "softmax_attention");
  std::vector<Tensor> first;
  for (int threads : {1, 2, 3}) {
    RunOptions r;
    r.num_threads = threads;
    std::vector<Tensor> actual = compiled.run(inputs, r);
    expect_attention_outputs_match(g, actual, expected,
                                   written_out(f) + std::to_string(threads) + " threads");
    if (first.empty()) {
      first = std::move(actual);
      continue;
    }
    EXPECT_TRUE(eager::compare(actual[0], first[0], 0.0, 0.0).within_tolerance) << threads;
  }
}

TEST(CompiledWrittenAttention, MatchesTheWrittenOutGraph) {
  Form gpt2;
  expect_compiled_matches(gpt2);
  Form bert;
  bert.mask_sizes = "";
  bert.copies = true;
  bert.transposed_storage = true;
  bert.lq = bert.lk = 197;  // ViT's tokens: vector tails, two query blocks
  expect_compiled_matches(bert);
  Form t5;
  t5.scale = "s";
  t5.mask_sizes = "[2, 12, 128, 128]";
  expect_compiled_matches(t5);
}

TEST(CompiledWrittenAttention, GroupedQueryHeadsFromRepeatKv) {
  Form f;
  f.kv_heads = 3;
  f.transposed_storage = true;
  f.mask_sizes = "[2, 1, 128, 128]";
  expect_compiled_matches(f);
}

TEST(CompiledWrittenAttention, BFloat16) {
  Form llama;
  llama.dtype = llama.mask_dtype = "bf16";
  llama.upcast = true;
  llama.mask_sizes = "[2, 1, 128, 128]";
  expect_compiled_matches(llama);
  Form plain;
  plain.dtype = plain.mask_dtype = "bf16";
  plain.transposed_storage = true;
  expect_compiled_matches(plain);
}

TEST(CompiledWrittenAttention, ARowEveryKeyIsMaskedFromIsNaNAsSoftmaxGives) {
  Form f;
  f.mask_sizes = "[2, 1, 128, 128]";
  const ir::Graph g = ir::parse_graph(written_out(f));
  std::vector<Tensor> inputs = inputs_of(g);
  const Tensor& mask = inputs.back();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < 128; ++j) {
    mask.set({1, 0, 5, j}, -inf);
    if (j != 3) mask.set({0, 0, 7, j}, -inf);  // one key left: a finite row
  }
  expect_compiled_matches(f, inputs);
  CompileOptions o;
  o.num_threads = 2;
  const Tensor out = compile(g, o).run(inputs).at(0);
  EXPECT_TRUE(std::isnan(out.get({1, 4, 5, 0})));
  EXPECT_FALSE(std::isnan(out.get({0, 4, 7, 0})));
  EXPECT_FALSE(std::isnan(out.get({1, 4, 6, 0})));
}

}  // namespace
}  // namespace stax
