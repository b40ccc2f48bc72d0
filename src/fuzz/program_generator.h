// Random valid Stax programs (text format) for the fuzzer and the random-graph property test:
// DAGs over the float32 ops (and bool from comparisons), plus steps that apply any registered
// op of the catalogue to any dtype it accepts (catalog_step.h), with
// random shapes (sizes 1, tails that are not multiples of 8 or 16, broadcasting), views,
// reductions and non-contiguous input strides, plus the compile options to run them with.
//
// Every program is well-conditioned by construction so that a mismatch beyond the comparison
// tolerance is a compiler bug, not rounding: each value carries a bound on its magnitude that
// stays small (denominators >= 1, exp only of bounded values, sums only while the bound
// allows), and comparisons only see values computed exactly (inputs, views, neg/abs/relu,
// maximum/minimum, amax/amin, where) so that no rounding difference can flip them.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/simd.h"

namespace stax::fuzz {

// How to compile and feed a program; part of every saved failure so that it reproduces.
struct CaseOptions {
  runtime::SimdLevel simd = runtime::SimdLevel::Scalar;
  int num_threads = 1;
  bool fuse = true;
  bool localize = true;
  // Section 7.5's placement (driver/compiler.h): not drawn by the generator; the property
  // tests run each program with every placement.
  bool memory_arena = true;
  bool reuse_buffers = true;
  bool in_place_reuse = true;
  uint64_t input_seed = 1;
  // Issue 33: the program is also made symbolic and run as one program at other sizes
  // (symbolic_check.h).
  bool symbolic = false;
};

struct GeneratorOptions {
  int min_statements = 3;
  int max_statements = 14;
  int min_rank = 1;  // of the inputs' base shape
  int max_rank = 4;
  int max_inputs = 3;
  int64_t max_elements = 4096;  // per value; keeps the eager oracle fast
  // One case in `large_one_in` (0: none) draws sizes up to 257 and allows this many elements
  // per value: enough for full 64-wide tiles, thread-split reductions and buffers large
  // enough to be localized (scheduler::BufferPlan, over 32 KiB).
  int large_one_in = 8;
  // One case in `symbolic_one_in` (0: none) is also checked as a symbolic program
  // (CaseOptions::symbolic).
  int symbolic_one_in = 0;
  int64_t large_max_elements = 40000;
  bool views = true;            // permute/transpose/reshape/view/expand/squeeze/unsqueeze
  bool strided_inputs = true;   // permuted, padded and zero strides
  bool zero_dim_values = true;  // dim=None and all-dims reductions, squeezes to rank 0
  // One step in three applies an op of the catalogue (op_catalog.h: every registered op of
  // issue 6, on every dtype it accepts; catalog_step.h), and inputs of other dtypes appear.
  // Off here (the float32 property test of tests/random); fuzzing sessions turn it on.
  bool catalog_ops = false;
  // "case dtype" pairs (known_failures.h) the catalogue steps leave out: the known failures,
  // when a run should look for new ones only.
  std::set<std::string> excluded_cases;
};

struct GeneratedCase {
  std::string text;
  CaseOptions options;
};

// Deterministic in `seed`: the same seed gives the same program and options everywhere.
GeneratedCase generate_case(uint64_t seed, const GeneratorOptions& options = {});

using runtime::runnable_simd_levels;

}  // namespace stax::fuzz
