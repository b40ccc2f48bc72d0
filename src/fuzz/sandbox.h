// Runs one fuzz check in a forked child so that a crash or a hang of the code under test is
// observed instead of taking the fuzzer down: the child runs the check and reports its
// outcome through a pipe and its exit code; the parent waits with a time bound, kills the
// child's process group (the child and any compiler it started) when the bound passes, and
// turns a death by signal into a Crash outcome naming the signal.
//
// The parent must not have started threads (OpenMP, JIT'd kernels) before forking: only the
// checks run code under test, and they run in the child.
#pragma once

#include <cstdint>
#include <functional>

#include "fuzz/case_check.h"

namespace stax::fuzz {

struct SandboxOptions {
  double timeout_seconds = 20.0;
  // Address-space limit of the child (RLIMIT_AS), so that a mutated size asking for terabytes
  // fails with bad_alloc instead of pushing a shared machine into swap; 0 = no limit.
  uint64_t memory_limit_bytes = uint64_t{4} << 30;
};

// Called by the checks when a stage starts; inside a sandbox child it tells the parent, so
// that a crash or a hang is attributed to its stage. Outside a sandbox it does nothing.
void note_stage(const char* stage);

Outcome run_isolated(const std::function<Outcome()>& check, const SandboxOptions& options = {});

}  // namespace stax::fuzz
