// Ahead-of-time packages (issue 34, point 1): a program written to a package and loaded back
// without compiling gives the compiled program's results bit for bit (static and symbolic,
// library calls of every kind, weights bound to inputs); its run-time half survives JSON
// unchanged; and every kind of bad package (truncated anywhere, a byte changed anywhere,
// another build, instructions this CPU lacks, a missing library, malformed JSON that passes
// the checksum) is refused with a PackageError naming what is wrong, never loaded.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "eager/interpreter.h"
#include "eager/tensor_io.h"
#include "ir/graph.h"
#include "package/package.h"
#include "package/package_file.h"
#include "package/program_json.h"
#include "package/safetensors.h"
#include "runtime/jit.h"
#include "runtime/sha256.h"

namespace stax {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using package::PackageError;

// Every kind of library call site: a product with an epilogue, a convolution, attention (with
// its further result), a scatter into zeros, a scan and a scan with indices.
const char* const kLibraryCalls =
    "def calls(a: f32[64, 96], w: f32[128, 96], bias: f32[128], x: f32[2, 3, 16, 16],\n"
    "          cw: f32[8, 3, 3, 3], q: f32[2, 4, 32, 16], k: f32[2, 4, 32, 16],\n"
    "          v: f32[2, 4, 32, 16], ids: i64[40], g: f32[40, 96], c: f32[64, 96]):\n"
    "    wt = transpose(w, 0, 1)\n"
    "    l = addmm(bias, a, wt)\n"
    "    r = tanh(l)\n"
    "    cv = convolution(x, cw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)\n"
    "    o, lse = _scaled_dot_product_flash_attention_for_cpu(q, k, v)\n"
    "    z = zeros([64, 96])\n"
    "    e = index_put(z, [ids], g, True)\n"
    "    cs = cumsum(c, dim=1)\n"
    "    cm, ci = cummax(c, dim=1)\n"
    "    return r, cv, o, lse, e, cs, cm, ci\n";

const char* const kRows =
    "def rows(x: f32[s0, 24], b: f32[24], w: f32[24, 24]) where s0: [1, 4096] hint=40:\n"
    "    y = add(x, b)\n"
    "    m = amax(y, dim=[1], keepdim=True)\n"
    "    d = sub(y, m)\n"
    "    e = exp(d)\n"
    "    s = sum(e, dim=[1], keepdim=True)\n"
    "    p = div(e, s)\n"
    "    c = sum(p, dim=[0])\n"
    "    return p, c\n";

std::string temp_path(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("stax-package-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<Tensor> inputs_of(const ir::Graph& graph, const std::map<std::string, int64_t>& sizes,
                              uint64_t seed) {
  std::vector<Tensor> inputs;
  for (ir::ValueRef ref : graph.inputs()) {
    const ir::Value& v = graph.value(ref);
    std::vector<int64_t> shape;
    for (size_t d = 0; d < v.type.sizes.size(); ++d) {
      shape.push_back(v.type.is_symbolic() ? index::evaluate(v.type.symbolic_sizes[d], sizes)
                                           : v.type.sizes[d]);
    }
    if (v.name == "ids") {  // rows of the 64 the scatter writes, some of them twice
      Tensor ids = Tensor::empty(DType::Int64, shape);
      for (int64_t i = 0; i < shape[0]; ++i) ids.set({i}, static_cast<double>((i * 7) % 64));
      inputs.push_back(ids);
      continue;
    }
    inputs.push_back(eager::random_tensor(v.type.dtype, shape, seed++));
  }
  return inputs;
}

void expect_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].dtype(), b[k].dtype()) << "output " << k;
    ASSERT_EQ(a[k].sizes(), b[k].sizes()) << "output " << k;
    const Tensor x = a[k].contiguous_copy();
    const Tensor y = b[k].contiguous_copy();
    const size_t bytes = static_cast<size_t>(x.numel()) * dtype_size(x.dtype());
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), bytes)) << "output " << k << " differs";
  }
}

// What loading `path` throws: its message, or "" when it loads.
std::string load_error(const std::string& path) {
  try {
    Package::load(path);
  } catch (const PackageError& e) {
    return e.what();
  }
  return "";
}

TEST(Package, LibraryCallsRunBitForBitAfterLoading) {
  const ir::Graph graph = ir::parse_graph(kLibraryCalls, "calls.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_GE(compiled.runtime_compilation().module.externals.size(), 6u);
  const std::string path = temp_path("calls.staxpkg");
  save_package(compiled, graph, path);
  const Package loaded = Package::load(path);
  EXPECT_EQ(loaded.input_names(), compiled.input_names());
  EXPECT_FALSE(loaded.program().analysis_kept());
  for (uint64_t seed : {1u, 50u}) {
    const std::vector<Tensor> inputs = inputs_of(graph, {}, seed);
    expect_identical(loaded.run(inputs), compiled.run(inputs));
    for (int threads : {1, 3}) {
      RunOptions options;
      options.num_threads = threads;
      expect_identical(loaded.run(inputs, options), compiled.run(inputs, options));
    }
  }
  // Wrong inputs are the program's InputErrors, as for the compiled graph.
  std::vector<Tensor> wrong = inputs_of(graph, {}, 3);
  wrong[0] = Tensor::empty(DType::Float32, {64, 95});
  EXPECT_THROW(loaded.run(wrong), InputError);
  EXPECT_THROW(loaded.run({}), InputError);
}

TEST(Package, RunTimeHalfSurvivesJsonUnchanged) {
  for (const char* text : {kLibraryCalls, kRows}) {
    const ir::Graph graph = ir::parse_graph(text, "g.stax");
    const CompiledGraph compiled = compile(graph);
    const json once = package::runtime_compilation_to_json(compiled.runtime_compilation());
    const json twice =
        package::runtime_compilation_to_json(*package::runtime_compilation_from_json(once));
    EXPECT_EQ(once, twice) << graph.name();
  }
}

TEST(Package, ExpressionsSurviveJson) {
  using index::Expr;
  const Expr s0 = Expr::var("s0");
  const Expr s1 = Expr::var("s1");
  const std::vector<Expr> cases = {Expr(0),
                                   Expr(-7),
                                   s0,
                                   3 * s0 * s1 + 5,
                                   index::floordiv(s0 - 3, 2) + 1,
                                   index::mod(4 * s1 + 1, 3) * s0,
                                   index::floordiv(s0 * s1, 2 * s1),
                                   -s0 + 64,
                                   Expr(std::numeric_limits<int64_t>::min())};
  for (const Expr& e : cases) {
    EXPECT_EQ(package::expr_from_json(package::expr_to_json(e)), e) << index::to_string(e);
  }
}

TEST(Package, SymbolicProgramRunsEverySizeItsFactsAllow) {
  const ir::Graph graph = ir::parse_graph(kRows, "rows.stax");
  const CompiledGraph compiled = compile(graph);
  ASSERT_TRUE(compiled.takes_every_size());
  const std::string path = temp_path("rows.staxpkg");
  save_package(compiled, graph, path);
  const Package loaded = Package::load(path);
  for (int64_t rows : {40, 1, 37, 3001}) {
    const std::vector<Tensor> inputs =
        inputs_of(graph, {{"s0", rows}}, static_cast<uint64_t>(rows));
    expect_identical(loaded.run(inputs), compiled.run(inputs));
  }
  // Sizes that break the facts are refused, naming the symbol.
  std::vector<Tensor> big = inputs_of(graph, {{"s0", 4097}}, 1);
  try {
    loaded.run(big);
    FAIL() << "4097 rows ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("s0"), std::string::npos) << e.what();
  }
}

TEST(Package, WeightsAreBoundAndReadInPlace) {
  const ir::Graph graph = ir::parse_graph(kLibraryCalls, "calls.stax");
  const CompiledGraph compiled = compile(graph);
  const std::vector<Tensor> inputs = inputs_of(graph, {}, 7);
  PackageSaveOptions options;
  const std::vector<std::string> weights = {"w", "bias", "cw"};
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const std::string& name = graph.value(graph.inputs()[i]).name;
    if (std::find(weights.begin(), weights.end(), name) != weights.end()) {
      options.weights.push_back({name, "model." + name + ".weight", inputs[i]});
    }
  }
  options.metadata["model"] = "calls";
  const std::string path = temp_path("weights.staxpkg");
  save_package(compiled, graph, path, options);
  const Package loaded = Package::load(path);
  EXPECT_EQ(loaded.metadata().at("model"), "calls");
  EXPECT_EQ(loaded.weight_inputs(), (std::vector<std::string>{"w", "bias", "cw"}));
  std::vector<Tensor> passed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = graph.value(graph.inputs()[i]).name;
    if (std::find(weights.begin(), weights.end(), name) == weights.end())
      passed.push_back(inputs[i]);
  }
  EXPECT_EQ(loaded.input_names().size(), passed.size());
  expect_identical(loaded.run(passed), compiled.run(inputs));
  // The weights section is safetensors that other tools read: the names map to the values.
  package::PackageFile file(path);
  const auto [data, bytes] = file.section("weights.safetensors");
  const auto entries = package::read_safetensors(std::string_view(data, bytes), "weights");
  ASSERT_EQ(entries.size(), 3u);
  const package::SafetensorsEntry& w = entries.at("model.w.weight");
  EXPECT_EQ(w.sizes, (std::vector<int64_t>{128, 96}));
  EXPECT_EQ(0, std::memcmp(data + w.offset, inputs[1].data(), w.bytes));
}

TEST(Package, WeightsThatDoNotMatchTheirInputAreRefused) {
  const ir::Graph graph = ir::parse_graph(kLibraryCalls, "calls.stax");
  const CompiledGraph compiled = compile(graph);
  PackageSaveOptions options;
  options.weights.push_back({"w", "w", Tensor::empty(DType::Float32, {96, 128})});
  EXPECT_THROW(save_package(compiled, graph, temp_path("bad.staxpkg"), options), PackageError);
  options.weights = {{"nope", "w", Tensor::empty(DType::Float32, {128, 96})}};
  EXPECT_THROW(save_package(compiled, graph, temp_path("bad.staxpkg"), options), PackageError);
}

class DamagedPackage : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = ir::parse_graph(kRows, "rows.stax");
    path_ = temp_path("good.staxpkg");
    save_package(compile(graph_), graph_, path_);
    bytes_ = read_bytes(path_);
    ASSERT_EQ(load_error(path_), "");
  }
  // The package's file with its manifest replaced (the checksums redone: what a writer of
  // another build or format would produce).
  std::string with_manifest(const std::function<void(json&)>& change) {
    package::PackageFile file(path_);
    json manifest = file.manifest();
    change(manifest);
    std::vector<std::pair<std::string, std::string_view>> sections;
    std::vector<std::string> names;
    for (const json& s : manifest["sections"]) names.push_back(s["name"]);
    for (const std::string& name : names) {
      const auto [data, size] = file.section(name);
      sections.emplace_back(name, std::string_view(data, size));
    }
    manifest.erase("sections");
    manifest.erase("file_bytes");
    const std::string out = temp_path("changed.staxpkg");
    package::write_package_file(out, manifest, sections);
    return out;
  }
  ir::Graph graph_;
  std::string path_;
  std::string bytes_;
};

TEST_F(DamagedPackage, TruncatedAnywhereIsRefused) {
  const std::string cut = temp_path("cut.staxpkg");
  // Inside the header, the manifest, the padding and the program, and one byte short.
  for (size_t keep :
       {size_t{0}, size_t{7}, size_t{40}, size_t{200}, bytes_.size() / 2, bytes_.size() - 1}) {
    write_bytes(cut, bytes_.substr(0, keep));
    const std::string error = load_error(cut);
    EXPECT_NE(error.find("truncated"), std::string::npos) << keep << ": " << error;
  }
}

TEST_F(DamagedPackage, AByteChangedAnywhereIsRefused) {
  const std::string changed = temp_path("flipped.staxpkg");
  package::PackageFile file(path_);
  const size_t so_bytes = file.section("program.so").second;
  const size_t so_offset = file.manifest()["sections"][0]["offset"].get<size_t>();
  for (size_t at : {size_t{3}, size_t{20}, size_t{100}, so_offset + 1, so_offset + so_bytes / 2,
                    so_offset + so_bytes - 1}) {
    std::string bytes = bytes_;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
    write_bytes(changed, bytes);
    const std::string error = load_error(changed);
    EXPECT_NE(error, "") << "a byte changed at " << at << " loaded";
    EXPECT_TRUE(error.find("damaged") != std::string::npos ||
                error.find("not a Stax package") != std::string::npos)
        << at << ": " << error;
  }
}

TEST_F(DamagedPackage, AnotherBuildIsRefusedNamingBoth) {
  const std::string other =
      with_manifest([](json& m) { m["stax"]["build"] = "0.0.9+0123456789abcdef"; });
  const std::string error = load_error(other);
  EXPECT_NE(error.find("0.0.9+0123456789abcdef"), std::string::npos) << error;
  EXPECT_NE(error.find(stax_build_identity()), std::string::npos) << error;
}

TEST_F(DamagedPackage, InstructionsThisCpuLacksAreRefused) {
  // An extension this build cannot check counts as one the CPU lacks.
  const std::string other =
      with_manifest([](json& m) { m["cpu"]["extensions"] = {"-mavx512fp16-and-more"}; });
  EXPECT_NE(load_error(other).find("instructions (-mavx512fp16-and-more)"), std::string::npos);
  const std::string unknown = with_manifest([](json& m) { m["cpu"]["simd"] = "sve2"; });
  EXPECT_NE(load_error(unknown).find("unknown SIMD level 'sve2'"), std::string::npos);
  // A level this CPU does not run, where there is one.
  for (runtime::SimdLevel level : {runtime::SimdLevel::Avx512, runtime::SimdLevel::Avx2}) {
    if (runtime::cpu_supports(level)) continue;
    const std::string wider = with_manifest(
        [&](json& m) { m["cpu"]["simd"] = std::string(runtime::simd_level_name(level)); });
    EXPECT_NE(load_error(wider).find("which this CPU does not support"), std::string::npos);
  }
}

TEST_F(DamagedPackage, MalformedManifestFieldsAreNamed) {
  const std::string no_sites = with_manifest([](json& m) { m["program"].erase("external_sites"); });
  EXPECT_NE(load_error(no_sites).find("missing field 'external_sites'"), std::string::npos);
  const std::string bad_dtype =
      with_manifest([](json& m) { m["program"]["inputs"][0]["dtype"] = "f33"; });
  EXPECT_NE(load_error(bad_dtype).find("unknown dtype 'f33'"), std::string::npos);
  const std::string bad_slot =
      with_manifest([](json& m) { m["program"]["output_bindings"][0]["index"] = 99; });
  EXPECT_NE(load_error(bad_slot).find("slot or input 99"), std::string::npos);
  const std::string bad_facts =
      with_manifest([](json& m) { m["program"]["symbols"]["s0"]["hi"] = -1; });
  EXPECT_NE(load_error(bad_facts).find("inconsistent facts"), std::string::npos);
  const std::string format = with_manifest([](json& m) { m["format"] = 2; });
  EXPECT_NE(load_error(format).find("manifest format 2"), std::string::npos);
}

TEST_F(DamagedPackage, AProgramThatDoesNotLoadIsRefusedNamingWhy) {
  // A shared object that needs a library the loader cannot find, built here with the JIT's
  // compiler.
  const std::string dir = temp_path("deps");
  fs::create_directories(dir);
  write_bytes(dir + "/dep.cpp", "extern \"C\" int stax_test_dependency() { return 1; }\n");
  write_bytes(dir + "/user.cpp",
              "extern \"C\" int stax_test_dependency();\n"
              "extern \"C\" int stax_test_user() { return stax_test_dependency(); }\n");
  const std::string compiler = runtime::resolve_compiler({}).front();
  ASSERT_EQ(0, std::system((compiler + " -shared -fPIC -o " + dir + "/libstaxmissingdep.so " + dir +
                            "/dep.cpp")
                               .c_str()));
  ASSERT_EQ(0, std::system((compiler + " -shared -fPIC -o " + dir + "/user.so " + dir +
                            "/user.cpp -L" + dir + " -lstaxmissingdep")
                               .c_str()));
  fs::remove(dir + "/libstaxmissingdep.so");
  const std::string user = read_bytes(dir + "/user.so");
  package::PackageFile file(path_);
  json manifest = file.manifest();
  manifest.erase("sections");
  manifest.erase("file_bytes");
  const std::string missing = temp_path("missing.staxpkg");
  package::write_package_file(missing, manifest, {{"program.so", user}});
  const std::string error = load_error(missing);
  EXPECT_NE(error.find("a library its kernels need is missing"), std::string::npos) << error;
  EXPECT_NE(error.find("libstaxmissingdep.so"), std::string::npos) << error;
  // Bytes that are no shared object at all.
  const std::string garbage = temp_path("garbage.staxpkg");
  package::write_package_file(garbage, manifest, {{"program.so", "not an ELF file"}});
  EXPECT_NE(load_error(garbage).find("cannot load package"), std::string::npos);
  // A package without its program.
  const std::string empty = temp_path("empty.staxpkg");
  package::write_package_file(empty, manifest, {});
  EXPECT_NE(load_error(empty).find("no section 'program.so'"), std::string::npos);
}

TEST(Package, NotAPackageIsRefused) {
  const std::string path = temp_path("text.staxpkg");
  write_bytes(path, std::string(kRows));
  EXPECT_NE(load_error(path).find("not a Stax package"), std::string::npos);
  EXPECT_NE(load_error(temp_path("absent.staxpkg")).find("cannot open"), std::string::npos);
}

TEST(Package, TwoPackagesLoadedInTurnRunTheirOwnPrograms) {
  // The loader finds a loaded object by its path first: two packages loaded and dropped in
  // turn must not share one (their anonymous files' descriptors may be numbered alike).
  const ir::Graph rows = ir::parse_graph(kRows, "rows.stax");
  const ir::Graph other = ir::parse_graph(
      "def rows(x: f32[s0, 24], b: f32[24], w: f32[24, 24]) where s0: [1, 4096] hint=40:\n"
      "    p = mul(x, b)\n"
      "    c = sum(p, dim=[0])\n"
      "    return p, c\n",
      "other.stax");
  save_package(compile(rows), rows, temp_path("a.staxpkg"));
  save_package(compile(other), other, temp_path("b.staxpkg"));
  const std::vector<Tensor> inputs = inputs_of(rows, {{"s0", 5}}, 11);
  std::vector<Tensor> a, b;
  {
    a = Package::load(temp_path("a.staxpkg")).run(inputs);
  }
  {
    b = Package::load(temp_path("b.staxpkg")).run(inputs);
  }
  expect_identical(a, compile(rows).run(inputs));
  expect_identical(b, compile(other).run(inputs));
}

// A bit-at-a-time CRC-32C (the definition), continuing from `crc` (not inverted).
uint32_t reference_crc(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return crc;
}

// The definition of one chunk's checksum (package_file.h), bit at a time.
uint32_t reference_chunk(const uint8_t* bytes, size_t n) {
  uint32_t lanes[4] = {~0u, ~0u, ~0u, ~0u};
  const size_t blocks = n / 32;
  for (size_t b = 0; b < blocks; ++b) {
    for (int j = 0; j < 4; ++j) lanes[j] = reference_crc(lanes[j], &bytes[32 * b + 8 * j], 8);
  }
  lanes[0] = reference_crc(lanes[0], bytes + 32 * blocks, n - 32 * blocks);
  uint8_t folded[16];
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < 4; ++k) folded[4 * j + k] = static_cast<uint8_t>(lanes[j] >> (8 * k));
  }
  return ~reference_crc(~0u, folded, 16);
}

TEST(PackageChecksum, LongSectionsAreTheChecksumOfTheirChunks) {
  const size_t chunk = package::kChecksumChunkBytes;
  for (size_t n : {chunk + 1, 2 * chunk + 12345}) {
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    std::vector<uint8_t> list;
    for (size_t start = 0; start < n; start += chunk) {
      const uint32_t c = reference_chunk(bytes.data() + start, std::min(chunk, n - start));
      for (int k = 0; k < 4; ++k) list.push_back(static_cast<uint8_t>(c >> (8 * k)));
    }
    EXPECT_EQ(package::section_checksum(bytes.data(), n),
              ~reference_crc(~0u, list.data(), list.size()))
        << n;
    // A byte changed in the last chunk changes it.
    bytes[n - 1] ^= 1;
    EXPECT_NE(package::section_checksum(bytes.data(), n),
              ~reference_crc(~0u, list.data(), list.size()));
  }
}

TEST(PackageChecksum, MatchesItsDefinitionAtEveryLength) {
  const std::string check = "123456789";
  EXPECT_EQ(package::crc32c(check.data(), check.size()), 0xE3069283u);  // the standard check
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{31}, size_t{32}, size_t{33},
                   size_t{100}, size_t{999}, size_t{1000}}) {
    uint32_t lanes[4] = {~0u, ~0u, ~0u, ~0u};
    const size_t blocks = n / 32;
    for (size_t b = 0; b < blocks; ++b) {
      for (int j = 0; j < 4; ++j) lanes[j] = reference_crc(lanes[j], &bytes[32 * b + 8 * j], 8);
    }
    lanes[0] = reference_crc(lanes[0], bytes.data() + 32 * blocks, n - 32 * blocks);
    uint8_t folded[16];
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 4; ++k) folded[4 * j + k] = static_cast<uint8_t>(lanes[j] >> (8 * k));
    }
    EXPECT_EQ(package::section_checksum(bytes.data(), n), ~reference_crc(~0u, folded, 16)) << n;
  }
}

TEST(Safetensors, RoundTripsEveryDtypeAndRefusesBadHeaders) {
  std::map<std::string, Tensor> tensors;
  uint64_t seed = 1;
  for (DType d : {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                  DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    tensors.emplace(std::string(dtype_name(d)), eager::random_tensor(d, {3, 5}, seed++));
  }
  tensors.emplace("empty", Tensor::empty(DType::Float32, {0, 4}));
  const std::string path = temp_path("t.safetensors");
  package::save_safetensors_file(path, tensors);
  const std::map<std::string, Tensor> back = package::load_safetensors_file(path);
  ASSERT_EQ(back.size(), tensors.size());
  for (const auto& [name, t] : tensors) expect_identical({back.at(name)}, {t});
  // Every tensor starts at a multiple of its element size from a 64-byte boundary.
  const std::string bytes = read_bytes(path);
  for (const auto& [name, e] : package::read_safetensors(bytes, path)) {
    EXPECT_EQ(e.offset % dtype_size(e.dtype), 0u) << name;
  }
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + header_bytes) % 64, 0u);
  EXPECT_THROW(package::read_safetensors(bytes.substr(0, 5), "cut"), PackageError);
  EXPECT_THROW(package::read_safetensors(bytes.substr(0, bytes.size() - 1), "short"), PackageError);
  std::string header = "{\"x\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 8]}}";
  std::string buffer(8, '\0');
  buffer[0] = static_cast<char>(header.size());
  buffer += header + std::string(16, '\0');
  EXPECT_THROW(package::read_safetensors(buffer, "shape"), PackageError);
}

}  // namespace
}  // namespace stax
