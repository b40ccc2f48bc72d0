// The JIT: in-process and cross-process cache hits, compile errors, option resolution
// ($STAX_CACHE_DIR, $XDG_CACHE_HOME, $HOME, $CXX), concurrency, library loading, and
// unloading kernels that used OpenMP.
#include "runtime/jit.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "jit_probe.h"
#include "test_util.h"

namespace stax::runtime {
namespace {

namespace fs = std::filesystem;
using testing::expect_concurrent_probes_agree;
using testing::read_text;
using testing::run_probe;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_text;

const char* const kAnswerSource = "extern \"C\" int stax_probe_answer() { return 42; }\n";

JitOptions scalar_options(const std::string& cache_dir) {
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  options.cache_dir = cache_dir;
  return options;
}

TEST(Jit, SecondCompileIsACacheHitWithoutCompiler) {
  TempDir dir;
  const int64_t before = compiler_invocations();
  const JitResult first = compile_and_load(kAnswerSource, scalar_options(dir.path()));
  EXPECT_FALSE(first.cache_hit);
  EXPECT_EQ(compiler_invocations(), before + 1);
  EXPECT_EQ(first.library->function<int (*)()>("stax_probe_answer")(), 42);
  EXPECT_TRUE(fs::exists(first.library_path));
  EXPECT_EQ(read_text(first.source_path), kAnswerSource);
  EXPECT_EQ(fs::path(first.library_path).parent_path(), fs::path(dir.path()));

  const JitResult second = compile_and_load(kAnswerSource, scalar_options(dir.path()));
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(compiler_invocations(), before + 1);
  EXPECT_EQ(second.library_path, first.library_path);
  EXPECT_EQ(second.library, first.library);  // the loaded library is shared
}

TEST(Jit, ReleasedLibraryIsReloadedFromDisk) {
  TempDir dir;
  std::string path;
  {
    const JitResult first = compile_and_load(kAnswerSource, scalar_options(dir.path()));
    path = first.library_path;
  }
  const int64_t before = compiler_invocations();
  const JitResult again = compile_and_load(kAnswerSource, scalar_options(dir.path()));
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.library_path, path);
  EXPECT_EQ(compiler_invocations(), before);
  EXPECT_EQ(again.library->function<int (*)()>("stax_probe_answer")(), 42);
}

TEST(Jit, CacheHitAcrossProcesses) {
  TempDir dir;
  const std::string source_file = dir.path() + "/probe_source.cpp";
  write_text(source_file, kAnswerSource);
  const std::string cache = dir.path() + "/cache";
  EXPECT_EQ(run_probe(source_file, cache), std::make_pair(std::string("miss 1"), 0));
  EXPECT_EQ(run_probe(source_file, cache), std::make_pair(std::string("hit 0"), 0));
  EXPECT_EQ(run_probe(source_file, cache), std::make_pair(std::string("hit 0"), 0));

  // This process finds the entry the probes created.
  const int64_t before = compiler_invocations();
  const JitResult here = compile_and_load(kAnswerSource, scalar_options(cache));
  EXPECT_TRUE(here.cache_hit);
  EXPECT_EQ(compiler_invocations(), before);
}

TEST(Jit, ConcurrentProcessesAgree) {
  TempDir dir;
  const std::string source_file = dir.path() + "/probe_source.cpp";
  write_text(source_file, std::string(kAnswerSource) + "// concurrent\n");
  const std::string cache = dir.path() + "/cache";
  expect_concurrent_probes_agree(source_file, cache, 4);
}

TEST(Jit, ConcurrentThreadsCompileOnce) {
  TempDir dir;
  const std::string source = std::string(kAnswerSource) + "// threads\n";
  const int64_t before = compiler_invocations();
  std::vector<JitResult> results(6);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&result, &source, &dir] {
      result = compile_and_load(source, scalar_options(dir.path()));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiler_invocations(), before + 1);
  int misses = 0;
  for (const auto& result : results) {
    misses += result.cache_hit ? 0 : 1;
    EXPECT_EQ(result.library, results[0].library);
  }
  EXPECT_EQ(misses, 1);
}

TEST(Jit, CompileErrorReportsSourceAndCompilerMessage) {
  TempDir dir;
  const std::string bad = "int stax_broken( { return undeclared_identifier_xyz; }\n";
  const int64_t before = compiler_invocations();
  try {
    compile_and_load(bad, scalar_options(dir.path()));
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_FALSE(e.source_path().empty());
    EXPECT_NE(message.find(e.source_path()), std::string::npos) << message;
    EXPECT_NE(message.find("error"), std::string::npos) << message;
    EXPECT_NE(e.compiler_output().find("error"), std::string::npos);
    EXPECT_NE(message.find(e.compiler_output()), std::string::npos);
    // The source is kept for inspection; no library was produced.
    EXPECT_EQ(read_text(e.source_path()), bad);
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      EXPECT_NE(entry.path().extension(), ".so") << entry.path();
    }
  }
  EXPECT_EQ(compiler_invocations(), before + 1);
  // Failures are not cached: trying again runs the compiler again.
  EXPECT_THROW(compile_and_load(bad, scalar_options(dir.path())), CompileError);
  EXPECT_EQ(compiler_invocations(), before + 2);
}

TEST(Jit, MissingCompilerIsACompileError) {
  TempDir dir;
  JitOptions options = scalar_options(dir.path());
  options.compiler = "/nonexistent/stax-cc";
  try {
    compile_and_load(kAnswerSource, options);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("stax-cc"), std::string::npos) << e.what();
  }
}

TEST(Jit, KeyDependsOnSourceAndLevel) {
  TempDir dir;
  JitOptions scalar = scalar_options(dir.path());
  JitOptions avx2 = scalar;
  avx2.simd = SimdLevel::Avx2;
  const JitResult a = compile_and_load(kAnswerSource, scalar);
  const JitResult b = compile_and_load(kAnswerSource, avx2);
  const JitResult c = compile_and_load(std::string(kAnswerSource) + "\n", scalar);
  EXPECT_NE(a.library_path, b.library_path);
  EXPECT_NE(a.library_path, c.library_path);
  EXPECT_NE(b.library_path, c.library_path);
  EXPECT_NE(a.source_path, c.source_path);
}

TEST(Jit, CacheDirResolution) {
  JitOptions explicit_dir;
  explicit_dir.cache_dir = "/tmp/stax-explicit";
  EXPECT_EQ(resolve_cache_dir(explicit_dir), "/tmp/stax-explicit");
  {
    ScopedEnv cache("STAX_CACHE_DIR", "/tmp/stax-env-cache");
    EXPECT_EQ(resolve_cache_dir(JitOptions{}), "/tmp/stax-env-cache");
    EXPECT_EQ(resolve_cache_dir(explicit_dir), "/tmp/stax-explicit");
  }
  {
    ScopedEnv cache("STAX_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(resolve_cache_dir(JitOptions{}), "/tmp/xdg/stax");
  }
  {
    ScopedEnv cache("STAX_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/tmp/somehome");
    EXPECT_EQ(resolve_cache_dir(JitOptions{}), "/tmp/somehome/.cache/stax");
  }
  {
    ScopedEnv cache("STAX_CACHE_DIR", "relative/cache");
    EXPECT_TRUE(fs::path(resolve_cache_dir(JitOptions{})).is_absolute());
  }
}

TEST(Jit, EnvCacheDirIsUsed) {
  TempDir dir;
  ScopedEnv cache("STAX_CACHE_DIR", dir.path().c_str());
  JitOptions options;
  options.simd = SimdLevel::Scalar;
  const JitResult r = compile_and_load(kAnswerSource, options);
  EXPECT_EQ(fs::path(r.library_path).parent_path(), fs::path(dir.path()));
}

TEST(Jit, CompilerResolution) {
  JitOptions options;
  options.compiler = "ccache  g++";
  EXPECT_EQ(resolve_compiler(options), (std::vector<std::string>{"ccache", "g++"}));
  {
    ScopedEnv cxx("CXX", "clang++ -Qunused-arguments");
    EXPECT_EQ(resolve_compiler(JitOptions{}),
              (std::vector<std::string>{"clang++", "-Qunused-arguments"}));
    EXPECT_EQ(resolve_compiler(options), (std::vector<std::string>{"ccache", "g++"}));
  }
  {
    ScopedEnv cxx("CXX", nullptr);
    EXPECT_EQ(resolve_compiler(JitOptions{}), (std::vector<std::string>{"c++"}));
  }
}

TEST(Jit, CompileFlags) {
  const std::vector<std::string> flags = kernel_compile_flags(SimdLevel::Avx2);
  auto has = [&](const std::string& flag) {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  };
  for (const char* flag : {"-O2", "-fPIC", "-fopenmp", "-ffp-contract=off", "-fno-math-errno",
                           "-mavx2", "-mfma", "-DSTAX_SIMD_AVX2"}) {
    EXPECT_TRUE(has(flag)) << flag;
  }
  EXPECT_FALSE(has("-ffast-math"));
  EXPECT_TRUE(has("-I" + kernel_include_dir()));
  EXPECT_TRUE(fs::path(kernel_include_dir()).is_absolute());
  EXPECT_TRUE(fs::exists(fs::path(kernel_include_dir()) / "stax_kernel.h"));
  const std::vector<std::string> link = kernel_link_flags();
  EXPECT_NE(std::find(link.begin(), link.end(), "-lsleef"), link.end());
}

TEST(Jit, SharedLibrarySymbols) {
  TempDir dir;
  const JitResult r = compile_and_load(kAnswerSource, scalar_options(dir.path()));
  EXPECT_TRUE(r.library->has_symbol("stax_probe_answer"));
  EXPECT_FALSE(r.library->has_symbol("stax_no_such_symbol"));
  EXPECT_THROW(r.library->symbol("stax_no_such_symbol"), std::runtime_error);
  EXPECT_EQ(r.library->path(), r.library_path);
  EXPECT_THROW(SharedLibrary(dir.path() + "/missing.so"), std::runtime_error);
}

TEST(Jit, CorruptCacheEntryIsRebuilt) {
  TempDir dir;
  const std::string source = std::string(kAnswerSource) + "// corrupt\n";
  std::string path;
  {
    const JitResult r = compile_and_load(source, scalar_options(dir.path()));
    path = r.library_path;
  }
  write_text(path, "not an ELF file");
  const int64_t before = compiler_invocations();
  const JitResult again = compile_and_load(source, scalar_options(dir.path()));
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(compiler_invocations(), before + 1);
  EXPECT_EQ(again.library->function<int (*)()>("stax_probe_answer")(), 42);
}

// Kernels start OpenMP worker threads; closing the last kernel library must not unmap the
// OpenMP runtime under them (the test binary does not link OpenMP itself).
TEST(Jit, UnloadingOpenMpKernelsIsSafe) {
  TempDir dir;
  for (int round = 0; round < 3; ++round) {
    const std::string source =
        "#include <cstdint>\n"
        "extern \"C\" double stax_omp_sum(int64_t n) {\n"
        "  double total = 0;\n"
        "#pragma omp parallel for reduction(+ : total) num_threads(4)\n"
        "  for (int64_t i = 0; i < n; ++i) total += static_cast<double>(i);\n"
        "  return total + " +
        std::to_string(round) + ";\n}\n";
    {
      const JitResult r = compile_and_load(source, scalar_options(dir.path()));
      const double got = r.library->function<double (*)(int64_t)>("stax_omp_sum")(1000);
      EXPECT_EQ(got, 499500.0 + round);
    }  // the library is closed here, with the OpenMP workers idle
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  SUCCEED();
}

// --- Relocatable kernel headers (kernel_include_dir) ------------------------------------

TEST(Jit, KernelIncludeDirFromEnvironmentIsWhatKernelsInclude) {
  TempDir dir;
  // A stand-in for stax_kernel.h that the real header does not define, so the kernel below
  // compiles only when the JIT passes this directory to the compiler.
  write_text(dir.path() + "/stax_kernel.h", "inline int stax_relocated_marker() { return 7; }\n");
  TempDir cache;
  ScopedEnv env("STAX_KERNEL_INCLUDE_DIR", dir.path().c_str());
  EXPECT_EQ(kernel_include_dir(), dir.path());
  const std::vector<std::string> flags = kernel_compile_flags(SimdLevel::Scalar);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-I" + dir.path()), flags.end());
  JitOptions options = scalar_options(cache.path());
  options.use_precompiled_header = false;
  const JitResult r = compile_and_load(
      "#include \"stax_kernel.h\"\n"
      "extern \"C\" int stax_probe_marker() { return stax_relocated_marker(); }\n",
      options);
  EXPECT_EQ(r.library->function<int (*)()>("stax_probe_marker")(), 7);
}

TEST(Jit, KernelIncludeDirFromEnvironmentWithoutHeaderIsAnError) {
  TempDir dir;
  ScopedEnv env("STAX_KERNEL_INCLUDE_DIR", dir.path().c_str());
  try {
    kernel_include_dir();
    FAIL() << "expected an error for a directory without stax_kernel.h";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("STAX_KERNEL_INCLUDE_DIR"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.path()), std::string::npos) << message;
    EXPECT_NE(message.find("stax_kernel.h"), std::string::npos) << message;
  }
}

TEST(Jit, KernelIncludeDirBesideTheModule) {
  ScopedEnv env("STAX_KERNEL_INCLUDE_DIR", nullptr);
  const std::string built_in = kernel_include_dir();
  EXPECT_TRUE(fs::exists(fs::path(built_in) / "stax_kernel.h"));

  TempDir package;
  const std::string module = package.path() + "/_C.so";
  // No kernel_include/ beside the module: the build-time directory.
  EXPECT_EQ(locate_kernel_include_dir("", module), built_in);
  fs::create_directory(package.path() + "/kernel_include");
  EXPECT_EQ(locate_kernel_include_dir("", module), built_in) << "an empty directory is no match";
  write_text(package.path() + "/kernel_include/stax_kernel.h", "// installed copy\n");
  EXPECT_EQ(locate_kernel_include_dir("", module), package.path() + "/kernel_include");
  // An installed library, lib/libstax.so: share/stax/kernel_include.
  TempDir prefix;
  fs::create_directories(prefix.path() + "/lib");
  fs::create_directories(prefix.path() + "/share/stax/kernel_include");
  const std::string library = prefix.path() + "/lib/libstax.so";
  EXPECT_EQ(locate_kernel_include_dir("", library), built_in) << "no header there yet";
  write_text(prefix.path() + "/share/stax/kernel_include/stax_kernel.h", "// installed\n");
  EXPECT_EQ(locate_kernel_include_dir("", library),
            fs::path(prefix.path() + "/share/stax/kernel_include").lexically_normal().string());
  // The environment wins over the module's directory.
  TempDir other;
  write_text(other.path() + "/stax_kernel.h", "// override\n");
  EXPECT_EQ(locate_kernel_include_dir(other.path(), module), other.path());
}

TEST(Jit, RuntimeModuleFileIsTheBinaryLinkingTheRuntime) {
  // test_runtime links stax_runtime statically, so the module is this executable.
  const std::string file = runtime_module_file();
  ASSERT_FALSE(file.empty());
  EXPECT_TRUE(fs::equivalent(file, "/proc/self/exe")) << file;
}

}  // namespace
}  // namespace stax::runtime
