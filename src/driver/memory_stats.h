// What Stax's runtime holds besides the outputs it returns (issue 32, point 4.3): the arenas
// of the loaded programs and their scratch blocks, and the workspaces that library calls keep
// between calls. stax.memory_stats() reports these with the output pool's counters.
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
  int64_t arena_held_bytes = 0;  // its arena blocks now: kept for the next calls and in use
  int64_t scratch_bytes = 0;     // its scratch blocks (stax_alloc): cached and live
};

struct MemoryStats {
  std::vector<ProgramMemory> programs;
  int64_t arena_held_bytes = 0;         // over the programs
  int64_t scratch_bytes = 0;            // over the programs
  int64_t library_workspace_bytes = 0;  // library calls' workspaces kept between calls
};

// Records a loaded program: `library` keeps it loaded (the entry goes when the last owner
// drops it), `memory_held` is its stax_memory_held.
using MemoryHeldFn = void (*)(int64_t* arena_bytes, int64_t* scratch_bytes);
void register_program(const std::shared_ptr<void>& library, const std::string& library_path,
                      int64_t arena_bytes, MemoryHeldFn memory_held);

MemoryStats memory_stats();

}  // namespace stax::driver
