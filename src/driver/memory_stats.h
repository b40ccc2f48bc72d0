// What Stax's runtime holds besides the outputs it returns (issue 32, point 4.3): the arenas
// of the loaded programs and their scratch blocks, and the workspaces of library calls. All of
// them take their large blocks from the process's pool (runtime/block_pool.h) while a call
// runs and give them back after it; stax.memory_stats() reports these with the pool's
// counters, which hold what is kept between calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stax::driver {

// One loaded program (a kernel library; programs compiled twice share it).
struct ProgramMemory {
  std::string library_path;
  int64_t arena_bytes = 0;       // its planned arena, one block per concurrent call
  int64_t arena_held_bytes = 0;  // its arena blocks now: those of its running calls (and kept
                                 // ones, for a program loaded without the process's pool)
  int64_t scratch_bytes = 0;     // its scratch blocks (stax_alloc): live (and small cached)
};

struct MemoryStats {
  std::vector<ProgramMemory> programs;
  int64_t arena_held_bytes = 0;         // over the programs
  int64_t scratch_bytes = 0;            // over the programs
  int64_t library_workspace_bytes = 0;  // library calls' workspaces held by running calls
};

// Records a loaded program: `library` keeps it loaded (the entry goes when the last owner
// drops it), `memory_held` is its stax_memory_held.
using MemoryHeldFn = void (*)(int64_t* arena_bytes, int64_t* scratch_bytes);
void register_program(const std::shared_ptr<void>& library, const std::string& library_path,
                      int64_t arena_bytes, MemoryHeldFn memory_held);

MemoryStats memory_stats();

}  // namespace stax::driver
