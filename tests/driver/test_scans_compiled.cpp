// Compiled scans (issue 16, point 7: cumsum, cumprod, logcumsumexp, cummax, cummin, external
// nodes that Stax's runtime runs, external/scan.h) against the eager oracle, which walks every
// line sequentially as eager's CPU loop does:
//  - every kind over every dtype it takes, along every dim, with inputs transposed, sliced and
//    broadcast, run with 1, 2 and 4 threads: lines that are not split are computed element for
//    element as the oracle computes them, so results are equal bit for bit;
//  - sizes that reach each parallel path (lines in parallel, columns in chunks, the carried dim
//    split by associativity), checked with scan_partition: integers and extrema stay exact
//    (wrapping sums and products, and the tie and NaN rules, are associative); float sums,
//    products and logsumexp are re-associated in the accumulation type only, which bounds the
//    difference (see expect_within_reassociation);
//  - cummax's indices kept alone, and its values alone.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "external/scan.h"
#include "ir/graph.h"
#include "ir/text_format.h"

namespace stax {
namespace {

void expect_equal(const Tensor& actual, const Tensor& expected, const std::string& where) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << where;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << where;
  for (int64_t p = 0; p < expected.numel(); ++p) {
    const double a = actual.get_flat(p), e = expected.get_flat(p);
    if (std::isnan(a) && std::isnan(e)) continue;
    // Bit for bit: -0.0 and 0.0 differ in what they mean to a later division.
    ASSERT_TRUE(a == e && std::signbit(a) == std::signbit(e))
        << where << ": element " << p << " is " << a << ", eager " << e;
  }
}

std::vector<Tensor> run_compiled(const ir::Graph& g, const std::vector<Tensor>& inputs,
                                 int threads) {
  CompileOptions o;
  o.num_threads = threads;
  const CompiledGraph compiled = compile(g, o);
  RunOptions r;
  r.num_threads = threads;
  return compiled.run(inputs, r);
}

struct ScanOp {
  std::string op;
  bool floating_only = false;
  bool takes_bool = false;
  bool indices = false;
};

const std::vector<ScanOp>& scan_ops() {
  static const std::vector<ScanOp> ops = {{"cumsum", false, false, false},
                                          {"cumprod", false, false, false},
                                          {"logcumsumexp", true, false, false},
                                          {"cummax", false, true, true},
                                          {"cummin", false, true, true}};
  return ops;
}

// `y = OP(input, dim=D)`, or `y, yi = ...` for cummax and cummin (y and yi with `suffix`).
std::string statement(const ScanOp& s, const std::string& input, int64_t dim,
                      const std::string& suffix = "") {
  const std::string call = s.op + "(" + input + ", dim=" + std::to_string(dim) + ")";
  const std::string results = "y" + suffix + (s.indices ? ", yi" + suffix : "");
  return "    " + results + " = " + call + "\n";
}

// One program per dtype: every scan that takes it along each dim of a [9, 13, 11] input, read
// as declared (contiguous, transposed, a slice with gaps) or through a broadcast.
TEST(CompiledScan, EveryKindDtypeDimAndLayoutBitForBit) {
  const std::vector<DType> dtypes = {DType::Float32,  DType::Float64, DType::Float16,
                                     DType::BFloat16, DType::Int64,   DType::Int32,
                                     DType::Int8,     DType::UInt8,   DType::Bool};
  struct Layout {
    std::string name;
    std::vector<int64_t> strides;  // of the declared [9, 13, 11] input; empty: contiguous
    bool broadcast = false;        // the scan reads expand(x[9, 1, 11])
  };
  const std::vector<Layout> layouts = {{"contiguous", {}, false},
                                       {"transposed", {1, 99, 9}, false},
                                       {"gapped", {13 * 11 * 2, 11 * 2, 2}, false},
                                       {"broadcast", {}, true}};
  int scans = 0;
  CompileOptions o;
  o.num_threads = 4;
  for (DType dtype : dtypes) {
    std::string params, body, outputs;
    std::vector<Tensor> inputs;
    std::vector<std::string> names;
    for (size_t l = 0; l < layouts.size(); ++l) {
      const Layout& layout = layouts[l];
      const std::vector<int64_t> declared =
          layout.broadcast ? std::vector<int64_t>{9, 1, 11} : std::vector<int64_t>{9, 13, 11};
      const std::string x = "x" + std::to_string(l);
      params += (params.empty() ? "" : ", ") + x + ": " + std::string(dtype_name(dtype)) +
                ir::format_sizes(declared) +
                (layout.strides.empty() ? "" : " strides=" + ir::format_sizes(layout.strides));
      std::string input = x;
      if (layout.broadcast) {
        body += "    b = expand(" + x + ", [9, 13, 11])\n";
        input = "b";
      }
      // Values that keep products finite in 16-bit floats and make ties for the extrema.
      inputs.push_back(layout.strides.empty() ? eager::random_tensor(dtype, declared, 7, -1.5, 1.5)
                                              : eager::random_tensor_strided(
                                                    dtype, declared, layout.strides, 7, -1.5, 1.5));
      for (const ScanOp& s : scan_ops()) {
        if (s.floating_only && !is_floating(dtype)) continue;
        if (dtype == DType::Bool && !s.takes_bool) continue;
        for (int64_t dim : {0, 1, -1}) {
          const std::string suffix = "_" + std::to_string(scans++);
          body += statement(s, input, dim, suffix);
          outputs += (outputs.empty() ? "" : ", ") + ("y" + suffix);
          names.push_back(s.op + " along " + std::to_string(dim) + " of " + layout.name);
          if (s.indices) {
            outputs += ", yi" + suffix;
            names.push_back(names.back() + " (indices)");
          }
        }
      }
    }
    const std::string program = "def f(" + params + "):\n" + body + "    return " + outputs + "\n";
    SCOPED_TRACE(program);
    const ir::Graph g = ir::parse_graph(program, "scan.stax");
    const std::vector<Tensor> expected = eager::run(g, inputs);
    const CompiledGraph compiled = compile(g, o);
    for (int threads : {1, 2, 4}) {
      RunOptions r;
      r.num_threads = threads;
      const std::vector<Tensor> actual = compiled.run(inputs, r);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t k = 0; k < actual.size(); ++k) {
        expect_equal(actual[k], expected[k],
                     std::string(dtype_name(dtype)) + " " + names[k] + ", " +
                         std::to_string(threads) + " threads");
      }
    }
  }
  // cumsum, cumprod (no bool), logcumsumexp (floats), cummax and cummin; 3 dims, 4 layouts.
  EXPECT_EQ(scans, 4 * 3 * (8 + 8 + 4 + 9 + 9));
}

// The difference a re-associated scan may show: the running value is carried in `acc` (float
// or double); splitting a line into blocks changes only the order in which the accumulation
// type combines partial results, each combination off by at most half an ulp of the
// accumulation type of the magnitudes it combines, so the difference is at most
// 2 * k * eps(acc) * scale_k (scale_k: the sum of |x| up to k for a sum, |y_k| for a product
// and, plus one, for logsumexp) before rounding to the dtype, which adds one ulp of the dtype.
void expect_within_reassociation(const ir::Graph& g, const Tensor& x, const Tensor& actual,
                                 const Tensor& expected, const std::string& op, int64_t dim,
                                 const std::string& where) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  const DType dtype = expected.dtype();
  const bool narrow = dtype == DType::Float16 || dtype == DType::BFloat16;
  const double acc_eps = narrow || dtype == DType::Float32
                             ? (narrow ? std::numeric_limits<float>::epsilon()
                                       : std::numeric_limits<double>::epsilon())
                             : std::numeric_limits<double>::epsilon();
  const double dtype_eps = dtype == DType::Float16    ? std::ldexp(1.0, -10)
                           : dtype == DType::BFloat16 ? std::ldexp(1.0, -7)
                           : dtype == DType::Float32  ? std::ldexp(1.0, -23)
                                                      : std::ldexp(1.0, -52);
  const std::vector<int64_t>& sizes = expected.sizes();
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  const int64_t length = sizes[static_cast<size_t>(dim)];
  (void)g;
  std::vector<double> abs_sum(static_cast<size_t>(expected.numel()));
  for (int64_t p = 0; p < expected.numel(); ++p) {
    const int64_t k = (p / inner) % length;
    const double prev = k > 0 ? abs_sum[static_cast<size_t>(p - inner)] : 0.0;
    abs_sum[static_cast<size_t>(p)] = prev + std::abs(x.get_flat(p));
  }
  for (int64_t p = 0; p < expected.numel(); ++p) {
    const double a = actual.get_flat(p), e = expected.get_flat(p);
    if (std::isnan(a) && std::isnan(e)) continue;
    const int64_t k = (p / inner) % length + 1;
    const double scale = op == "cumsum"    ? abs_sum[static_cast<size_t>(p)]
                         : op == "cumprod" ? std::abs(e)
                                           : std::abs(e) + 1.0;
    const double bound = 2.0 * static_cast<double>(k) * acc_eps * scale + dtype_eps * std::abs(e);
    ASSERT_LE(std::abs(a - e), bound) << where << ": element " << p << " (position " << k - 1
                                      << " of its line) is " << a << ", eager " << e;
  }
}

// Sizes that reach each way the runtime splits a scan over threads.
TEST(CompiledScan, ParallelPathsMatchTheSequentialOracle) {
  struct Case {
    std::vector<int64_t> sizes;
    int64_t dim;
    int threads;
    std::string path;
  };
  const std::vector<Case> cases = {
      {{64, 3000}, 1, 2, "lines"},             // 64 lines, each on one thread
      {{1, 200000}, 1, 2, "blocks"},           // one long line split by associativity
      {{3, 60000}, 1, 4, "blocks"},            // fewer lines than threads
      {{50000, 8}, 0, 2, "blocks"},            // an outer-dim scan: one group of 8 columns
      {{2, 100, 700}, 1, 4, "column chunks"},  // rows read whole, columns in chunks
      {{2, 3000, 130}, 1, 4, "column chunks"},
  };
  for (const Case& c : cases) {
    external::ScanSpec spec;
    spec.sizes = c.sizes;
    spec.input_strides = ir::contiguous_strides(c.sizes);
    spec.dim = c.dim;
    const external::ScanPartition p = external::scan_partition(spec, c.threads);
    if (c.path == "blocks") {
      EXPECT_GT(p.blocks, 1);
    } else if (c.path == "lines") {
      EXPECT_EQ(p.blocks, 1);
    } else {
      EXPECT_LT(p.column_chunk, p.inner);
    }
    EXPECT_EQ(p.threads, c.threads);
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int32}) {
      // One program per dtype with every scan that takes it; products read values near 1,
      // which stay finite over 200000 factors.
      std::string body, outputs;
      std::vector<const ScanOp*> ops;
      for (const ScanOp& s : scan_ops()) {
        if (s.floating_only && !is_floating(dtype)) continue;
        const std::string suffix = "_" + std::to_string(ops.size());
        const std::string input = s.op == "cumprod" ? "near_one" : "x";
        body += statement(s, input, c.dim, suffix);
        outputs +=
            (outputs.empty() ? "" : ", ") + ("y" + suffix) + (s.indices ? ", yi" + suffix : "");
        ops.push_back(&s);
      }
      const std::string type = std::string(dtype_name(dtype)) + ir::format_sizes(c.sizes);
      const std::string program = "def f(x: " + type + ", near_one: " + type + "):\n" + body +
                                  "    return " + outputs + "\n";
      const std::string where = std::string(dtype_name(dtype)) + " " + ir::format_sizes(c.sizes) +
                                " dim " + std::to_string(c.dim) + " (" + c.path + ")";
      SCOPED_TRACE(where);
      const ir::Graph g = ir::parse_graph(program, "scan.stax");
      const std::vector<Tensor> inputs = {eager::random_tensor(dtype, c.sizes, 11, -2.0, 2.0),
                                          eager::random_tensor(dtype, c.sizes, 12, 0.999, 1.001)};
      const std::vector<Tensor> expected = eager::run(g, inputs);
      const std::vector<Tensor> actual = run_compiled(g, inputs, c.threads);
      size_t k = 0;
      for (const ScanOp* s : ops) {
        const bool exact = s->indices || !is_floating(dtype) || p.blocks == 1;
        const Tensor& in = inputs[s->op == "cumprod" ? 1 : 0];
        if (exact) {
          expect_equal(actual[k], expected[k], s->op + " " + where);
          if (s->indices) expect_equal(actual[k + 1], expected[k + 1], s->op + " indices " + where);
        } else {
          expect_within_reassociation(g, in, actual[k], expected[k], s->op, c.dim,
                                      s->op + " " + where);
        }
        k += s->indices ? 2 : 1;
      }
    }
  }
}

// cummax's call writes its indices only where the program keeps them; either result alone is
// what eager gives.
TEST(CompiledScan, EitherResultOfCummaxAlone) {
  const Tensor x = eager::random_tensor(DType::Float32, {40, 500}, 3);
  for (const std::string ret : {"v", "i", "v, i"}) {
    const std::string program =
        "def f(x: f32[40, 500]):\n    v, i = cummax(x, dim=1)\n"
        "    return " +
        ret + "\n";
    const ir::Graph g = ir::parse_graph(program, "cummax.stax");
    const std::vector<Tensor> expected = eager::run(g, {x});
    const std::vector<Tensor> actual = run_compiled(g, {x}, 2);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < actual.size(); ++k) expect_equal(actual[k], expected[k], ret);
  }
}

// cumsum's dtype= converts the input first, in the program's own loop, as eager does; an
// integer input sums into int64.
TEST(CompiledScan, ConversionBeforeTheScan) {
  const Tensor x = eager::random_tensor(DType::Float32, {30, 257}, 5, -100.0, 100.0);
  const Tensor i = eager::random_tensor(DType::Int8, {30, 257}, 6);
  const ir::Graph g = ir::parse_graph(
      "def f(x: f32[30, 257], i: i8[30, 257]):\n"
      "    a = cumsum(x, dim=1, dtype='i32')\n"
      "    b = cumsum(i, dim=0)\n"
      "    c = cumprod(i, dim=1, dtype='i8')\n"
      "    d = cumsum(x, dim=0, dtype='f16')\n"
      "    return a, b, c, d\n",
      "convert.stax");
  EXPECT_EQ(g.value(g.outputs()[1]).type.dtype, DType::Int64);
  const std::vector<Tensor> expected = eager::run(g, {x, i});
  const std::vector<Tensor> actual = run_compiled(g, {x, i}, 2);
  for (size_t k = 0; k < actual.size(); ++k) {
    expect_equal(actual[k], expected[k], "output " + std::to_string(k));
  }
}

}  // namespace
}  // namespace stax
