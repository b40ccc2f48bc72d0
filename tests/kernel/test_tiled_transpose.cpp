// The 2-D tiled form with register transposes (Section 8.2, issue 6 point 5): the tile copy of
// a transposed operand is one stax::transpose_tile per full register block (16 x 16 floats at
// AVX-512, 8 x 8 at AVX2, other blocks for other element sizes) with element-wise copies of
// the rows and columns past the last full block; the tile edge T follows from the cache
// sizes; compiled transposed adds of every tested dtype and of extents that are not
// multiples of the block or the tile equal the eager ones exactly at every SIMD level.
#include <fstream>
#include <sstream>

#include "driver/compiler.h"
#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "kernel/verifier.h"
#include "kernel_test_util.h"

namespace stax::kernel_test {
namespace {

using kernel::StmtKind;
using runtime::CacheSizes;
using runtime::SimdLevel;

std::string transpose_add_program() {
  std::ifstream in(std::string(STAX_BENCH_DIR) + "/transpose_add.stax");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The dtypes of x and y in z = x + transpose(y). A 16-bit float y is added to an f32 x: a
// 16-bit float result is rounded through its type, which has no vector form, so only the
// mixed add takes the tiled form with a 16-bit tile.
std::pair<std::string, std::string> operand_dtypes(const std::string& y_dtype) {
  const bool half = y_dtype == "bf16" || y_dtype == "f16";
  return {half ? "f32" : y_dtype, y_dtype};
}

// z = x + transpose(y) with x of `rows` x `cols`.
std::string transposed_add(const std::string& y_dtype, int64_t rows, int64_t cols) {
  const std::string r = std::to_string(rows);
  const std::string c = std::to_string(cols);
  const auto [xd, yd] = operand_dtypes(y_dtype);
  return "def f(x: " + xd + "[" + r + ", " + c + "], y: " + yd + "[" + c + ", " + r +
         "]):\n    t = transpose(y, 0, 1)\n    z = add(x, t)\n    return z\n";
}

kernel::Kernel lower_one(const std::string& text, SimdLevel simd, CacheSizes caches,
                         int threads = 1) {
  auto s = schedule_text(text);
  auto kernels = lower_all(*s, {simd, threads, caches});
  EXPECT_EQ(kernels.size(), 1u) << text;
  return kernels.at(0);
}

CacheSizes caches(int64_t l1d_bytes, int64_t line_bytes = 64) {
  CacheSizes c;
  c.l1d_bytes = l1d_bytes;
  c.line_bytes = line_bytes;
  return c;
}

std::vector<kernel::BlockTranspose> transposes(const kernel::Kernel& k) {
  std::vector<kernel::BlockTranspose> out;
  kernel::for_each_stmt(k.body, [&](const kernel::Stmt& s) {
    if (s.kind == StmtKind::TransposeBlock) out.push_back(s.transpose);
  });
  return out;
}

// Element-wise stores into the tile (the copies of rows and columns past the full blocks).
int element_copies(const kernel::Kernel& k, const std::string& tile = "tile0") {
  return count_stmts(k, [&](const kernel::Stmt& s) {
    return s.kind == StmtKind::Store && s.access.buffer == tile;
  });
}

TEST(TiledTranspose, TransposeAddCopiesItsTileBy16x16RegisterTransposesAtAvx512) {
  const auto k = lower_one(transpose_add_program(), SimdLevel::Avx512, caches(32 * 1024), 4);
  EXPECT_EQ(kernel::nest_form_names(k),
            (std::vector<std::string>{"tiled(T=48) vectorized(W=16) over x1"}));
  const auto t = transposes(k);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rows, 16);
  EXPECT_EQ(t[0].cols, 16);
  EXPECT_EQ(t[0].source.buffer, "y");
  EXPECT_EQ(t[0].source.stride, 2048);
  EXPECT_EQ(t[0].destination.buffer, "tile0");
  EXPECT_EQ(t[0].destination.stride, 48);
  // 2048 is a multiple of the block: no element-wise copy is left.
  EXPECT_EQ(element_copies(k), 0);
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text,
                       "stax::transpose_tile<float, 16, 16>(in_y + x0 + 2048*x1, 2048, tile0 + "
                       "48*x0 - 48*x0_tile + x1 - x1_tile, 48);"))
      << text;
  EXPECT_TRUE(contains(text, "alignas(64) float tile0[2304];")) << text;
  const std::string& reason = k.decisions.nests[0].reason;
  EXPECT_TRUE(contains(reason, "48x48 tiles through L1")) << reason;
  EXPECT_TRUE(contains(reason, "12 bytes per tile element fit 52x52 in the 32768-byte L1"))
      << reason;
  EXPECT_TRUE(contains(reason, "y by 16x16 register transposes")) << reason;
}

TEST(TiledTranspose, TransposeAddCopiesItsTileBy8x8RegisterTransposesAtAvx2) {
  const auto k = lower_one(transpose_add_program(), SimdLevel::Avx2, caches(48 * 1024), 4);
  EXPECT_EQ(kernel::nest_form_names(k),
            (std::vector<std::string>{"tiled(T=64) vectorized(W=8) over x1"}));
  const auto t = transposes(k);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].rows, 8);
  EXPECT_EQ(t[0].cols, 8);
  EXPECT_EQ(element_copies(k), 0);
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(contains(text,
                       "stax::transpose_tile<float, 8, 8>(in_y + x0 + 2048*x1, 2048, tile0 + "
                       "64*x0 - 64*x0_tile + x1 - x1_tile, 64);"))
      << text;
}

TEST(TiledTranspose, TileEdgeFollowsTheCacheSizes) {
  // x + y^T in f32 touches 12 bytes per tile element (y's tile, x's and z's rows): T is the
  // largest multiple of the block (the register block and the vector width: 16 at AVX-512,
  // 8 at AVX2) with 12 T^2 <= L1, but at least line / 4 bytes.
  struct Case {
    SimdLevel simd;
    int64_t l1d, line, tile;
  };
  const Case cases[] = {
      {SimdLevel::Avx512, 32 * 1024, 64, 48},  // 52^2 * 12 <= 32768 < 53^2 * 12
      {SimdLevel::Avx512, 48 * 1024, 64, 64},  // 64^2 * 12 = 49152
      {SimdLevel::Avx2, 32 * 1024, 64, 48},   {SimdLevel::Avx2, 48 * 1024, 64, 64},
      {SimdLevel::Avx2, 8 * 1024, 64, 24},     // 26 -> a multiple of 8
      {SimdLevel::Avx512, 8 * 1024, 64, 16},   // 26 -> a multiple of 16
      {SimdLevel::Avx512, 8 * 1024, 128, 32},  // 16 is below the 128-byte line of floats
      {SimdLevel::Avx512, 2 * 1024, 64, 16},   // 13: no multiple of 16 fits; the line bound
  };
  const std::string text = transposed_add("f32", 300, 200);
  for (const Case& c : cases) {
    const auto k = lower_one(text, c.simd, caches(c.l1d, c.line));
    const auto& d = k.decisions.nests.at(0);
    ASSERT_EQ(d.form, kernel::KernelForm::Tiled);
    EXPECT_EQ(d.tile, c.tile) << runtime::simd_level_name(c.simd) << " L1 " << c.l1d << ": "
                              << d.reason;
    EXPECT_GE(d.tile, c.line / 4);
    EXPECT_TRUE(contains(d.reason, std::to_string(c.tile) + "x" + std::to_string(c.tile) +
                                       " tiles through L1 (12 bytes per tile element"))
        << d.reason;
  }
}

TEST(TiledTranspose, TileEdgeAndRegisterBlockFollowTheElementSize) {
  struct Case {
    std::string dtype;
    SimdLevel simd;
    int64_t tile;
    int block;
    std::string call;
  };
  const Case cases[] = {
      // 24 bytes per element: 36 fit, a multiple of the 8 lanes of doubles and the 8 x 8
      // block is 32.
      {"f64", SimdLevel::Avx512, 32, 8, "stax::transpose_tile<double, 8, 8>("},
      // 36 is a multiple of the 4 lanes of doubles and the 4 x 4 block.
      {"f64", SimdLevel::Avx2, 36, 4, "stax::transpose_tile<double, 4, 4>("},
      // 10 bytes (the bf16 tile, f32 rows of x and z): 57 fit, a multiple of the 16 x 16
      // block, and at least the 64-byte line of 2-byte elements.
      {"bf16", SimdLevel::Avx2, 48, 16, "stax::transpose_tile<stax::BFloat16, 16, 16>("},
      {"f16", SimdLevel::Avx512, 48, 16, "stax::transpose_tile<stax::Half, 16, 16>("},
      // 3 bytes: 104 fit, 64 a multiple of the 64 lanes of int8 (and of the 16 x 16 block)
      // and at least the 64-byte line of bytes.
      {"i8", SimdLevel::Avx512, 64, 16, "stax::transpose_tile<int8_t, 16, 16>("},
      {"i64", SimdLevel::Avx512, 32, 8, "stax::transpose_tile<int64_t, 8, 8>("},
      {"i16", SimdLevel::Avx2, 64, 16, "stax::transpose_tile<int16_t, 16, 16>("},
  };
  for (const Case& c : cases) {
    const auto k = lower_one(transposed_add(c.dtype, 300, 200), c.simd, caches(32 * 1024));
    EXPECT_EQ(k.decisions.nests.at(0).tile, c.tile)
        << c.dtype << ": " << k.decisions.nests.at(0).reason;
    const auto t = transposes(k);
    ASSERT_EQ(t.size(), 1u) << c.dtype;
    EXPECT_EQ(t[0].rows, c.block) << c.dtype;
    const std::string text = kernel::print_kernel(k);
    EXPECT_TRUE(contains(text, c.call)) << text;
  }
}

TEST(TiledTranspose, PartialBlocksAtTheEdgesAreCopiedElementByElement) {
  // bf16 at AVX2 (8 lanes, 16 x 16 blocks, T = 48): 37 rows are two full blocks and 5 rows;
  // 25 columns are 24 in full vectors (the 25th in the masked tail), one full block and 8.
  const auto k = lower_one(transposed_add("bf16", 37, 25), SimdLevel::Avx2, caches(32 * 1024));
  ASSERT_EQ(k.decisions.nests.at(0).tile, 48);
  EXPECT_EQ(transposes(k).size(), 1u);
  EXPECT_EQ(element_copies(k), 2);  // the rows past row 32, the columns past column 16
  const std::string text = kernel::print_kernel(k);
  EXPECT_TRUE(
      contains(text, "for (int32_t x0 = 32, x0_end = x0_tile + 48 < 37 ? x0_tile + 48 : 37"))
      << text;
  EXPECT_TRUE(
      contains(text, "for (int32_t x1 = 16, x1_end = x1_tile + 48 < 24 ? x1_tile + 48 : 24"))
      << text;
  // The tile keeps bf16 and is read widened like the operand.
  EXPECT_TRUE(contains(text, "alignas(64) stax::BFloat16 tile0[2304];")) << text;
  EXPECT_TRUE(contains(text, "stax::Vec<float, 8>::load(tile0 + ")) << text;

  // Fewer rows than one block: element-wise copies only.
  const auto narrow = lower_one(transposed_add("f32", 9, 40), SimdLevel::Avx512, caches(32 * 1024));
  ASSERT_EQ(narrow.decisions.nests.at(0).form, kernel::KernelForm::Tiled);
  EXPECT_EQ(transposes(narrow).size(), 0u);
  EXPECT_EQ(element_copies(narrow), 1);
}

// The verifier checks block transposes: into a local array in scope, of the array's element
// type, with destination rows that hold a block column each.
TEST(TiledTranspose, VerifierRejectsMalformedBlockTransposes) {
  const auto good = lower_one(transpose_add_program(), SimdLevel::Avx512, caches(32 * 1024));
  EXPECT_NO_THROW(kernel::verify(good, "test"));
  auto broken = [&](const std::function<void(kernel::BlockTranspose&)>& change) {
    kernel::Kernel k = good;
    k.body = kernel::clone_block(good.body);
    kernel::for_each_stmt(k.body, [&](kernel::Stmt& s) {
      if (s.kind == StmtKind::TransposeBlock) change(s.transpose);
    });
    try {
      kernel::verify(k, "test");
    } catch (const std::logic_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_TRUE(contains(broken([](auto& t) { t.destination.buffer = "buf0"; }),
                       "the destination is not a local array in scope"));
  EXPECT_TRUE(contains(broken([](auto& t) { t.source.storage = DType::Float64; }),
                       "element types f64, f32 and the array's f32 differ"));
  EXPECT_TRUE(contains(broken([](auto& t) { t.destination.stride = 8; }),
                       "destination rows of 8 elements overlap the block's 16 rows"));
  EXPECT_TRUE(contains(broken([](auto& t) { t.cols = 0; }), "a 16x0 block"));
  EXPECT_TRUE(contains(broken([](auto& t) { t.destination.stride = 200; }),
                       "the block does not fit the 2304-element array"));
}

TEST(TiledTranspose, CacheSizesThatAreNotPositiveAreRejected) {
  auto s = schedule_text(transposed_add("f32", 300, 200));
  try {
    lower_all(*s, {SimdLevel::Avx512, 1, caches(0)});
    ADD_FAILURE() << "no error for a 0-byte L1";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(),
                         "the L1 data cache (0 bytes) and its line (64 bytes) must be "
                         "positive"))
        << e.what();
  }
}

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> out;
  for (auto l : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    if (runtime::cpu_supports(l)) out.push_back(l);
  }
  return out;
}

// (rows, cols) of x in x + y^T: not multiples of the blocks or the tile, exactly one block,
// one row or one column, several tiles with partial ones.
const std::pair<int64_t, int64_t> kShapes[] = {{37, 53}, {100, 17}, {16, 16}, {1, 40},
                                               {40, 1},  {67, 130}, {37, 25}};

std::string transposed_adds(const std::string& y_dtype) {
  const auto [xd, yd] = operand_dtypes(y_dtype);
  std::string params, body, results;
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    const std::string n = std::to_string(i);
    const std::string r = std::to_string(kShapes[i].first);
    const std::string c = std::to_string(kShapes[i].second);
    params += std::string(i ? ", " : "") + "x" + n + ": " + xd + "[" + r + ", " + c + "], y" + n +
              ": " + yd + "[" + c + ", " + r + "]";
    body += "    t" + n + " = transpose(y" + n + ", 0, 1)\n    z" + n + " = add(x" + n + ", t" + n +
            ")\n";
    results += std::string(i ? ", " : "") + "z" + n;
  }
  return "def f(" + params + "):\n" + body + "    return " + results + "\n";
}

TEST(TiledTranspose, CompiledTransposedAddsEqualEagerInEveryDtype) {
  const std::pair<std::string, std::string> dtypes[] = {
      {"f32", "float"}, {"f64", "double"}, {"bf16", "stax::BFloat16"}, {"i8", "int8_t"}};
  for (const auto& [dtype, cpp] : dtypes) {
    const std::string text = transposed_adds(dtype);
    const ir::Graph g = ir::parse_graph(text);
    std::vector<Tensor> inputs;
    uint64_t seed = 11;
    for (ir::ValueRef in : g.inputs()) {
      inputs.push_back(
          eager::random_tensor(g.value(in).type.dtype, g.value(in).type.sizes, seed++));
    }
    const auto expected = eager::run(g, inputs);
    for (SimdLevel simd : levels()) {
      for (int threads : {1, 3}) {
        // The machine's L1, and one so small that T is the least the cache line and the
        // blocks allow (16 floats): many tiles, most of them partial at an edge.
        for (int64_t l1d : {int64_t{0}, int64_t{1024}}) {
          CompileOptions o;
          o.simd = simd;
          o.num_threads = threads;
          if (l1d > 0) o.caches = caches(l1d);
          const CompiledGraph c = compile(g, o);
          if (simd != SimdLevel::Scalar) {
            // The register path is the one under test.
            EXPECT_TRUE(contains(c.compilation().module.source, "stax::transpose_tile<" + cpp))
                << dtype << " at " << runtime::simd_level_name(simd);
          }
          const auto actual = c.run(inputs);
          ASSERT_EQ(actual.size(), expected.size());
          for (size_t k = 0; k < actual.size(); ++k) {
            // Exact: one correctly rounded add per element in both (bf16: widened exactly to
            // f32), whatever copied the operand; a misplaced element shows.
            const auto d = eager::compare(actual[k], expected[k], 0, 0);
            EXPECT_TRUE(d.within_tolerance)
                << dtype << " " << kShapes[k].first << "x" << kShapes[k].second << " at "
                << runtime::simd_level_name(simd) << ", " << threads << " threads, L1 " << l1d
                << ": max abs " << d.max_abs;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace stax::kernel_test
