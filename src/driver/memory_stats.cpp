// The registry of loaded programs that memory_stats() asks what they hold.
#include "driver/memory_stats.h"

#include <algorithm>
#include <mutex>

#include "external/dnnl_common.h"

namespace stax::driver {
namespace {

struct Entry {
  std::weak_ptr<void> library;
  const void* key;  // the library object, for programs compiled twice
  std::string library_path;
  int64_t arena_bytes;
  MemoryHeldFn memory_held;
};

std::mutex g_mutex;
std::vector<Entry> g_programs;

}  // namespace

void register_program(const std::shared_ptr<void>& library, const std::string& library_path,
                      int64_t arena_bytes, MemoryHeldFn memory_held) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::erase_if(g_programs, [](const Entry& e) { return e.library.expired(); });
  const bool known = std::any_of(g_programs.begin(), g_programs.end(),
                                 [&](const Entry& e) { return e.key == library.get(); });
  if (!known)
    g_programs.push_back({library, library.get(), library_path, arena_bytes, memory_held});
}

MemoryStats memory_stats() {
  MemoryStats stats;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const Entry& e : g_programs) {
      const std::shared_ptr<void> alive = e.library.lock();  // held while it is asked
      if (!alive) continue;
      ProgramMemory p;
      p.library_path = e.library_path;
      p.arena_bytes = e.arena_bytes;
      e.memory_held(&p.arena_held_bytes, &p.scratch_bytes);
      stats.arena_held_bytes += p.arena_held_bytes;
      stats.scratch_bytes += p.scratch_bytes;
      stats.programs.push_back(std::move(p));
    }
  }
  stats.library_workspace_bytes = external::detail::BufferPool::in_use_bytes();
  return stats;
}

}  // namespace stax::driver
