// Pass: Section 7.5's free pool, for programs whose intermediates are allocated one by one
// (no arena). The allocation and release statements are scanned in order: a released
// intermediate (never an output, which belongs to the caller) enters the pool; an allocation
// takes a pooled buffer of the same dtype and storage size instead of fresh memory when
// holding that buffer from its release to this allocation keeps the occupancy at every call
// within the program's current peak, so reuse never raises the peak. The storage is
// reinterpreted with the new buffer's layout, without copying ("buf5 = buf2  # reuse").
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "program/pipeline.h"

namespace stax::program {

void reuse_buffers(HostProgram& program) {
  const lowering::LoweredGraph& graph = *program.schedule->graph;
  std::map<std::string, int> freed_at;
  int units = 0;
  for (const Statement& st : program.body) {
    if (const auto* a = std::get_if<Allocate>(&st)) units = std::max(units, a->unit + 1);
    if (const auto* f = std::get_if<Free>(&st)) {
      units = std::max(units, f->unit + 1);
      freed_at[f->buffer] = f->unit;
    }
  }
  // Occupancy at each call without reuse: every block of storage from its allocation to its
  // release (an output's to the end). A buffer written in place of another (Section 7.5's
  // in-place reuse) adds no storage: it continues the block of the buffer it takes, which gets
  // no release of its own and is released with it. An input written in place is the caller's
  // memory, none of the program's.
  std::vector<int64_t> occupancy(static_cast<size_t>(units), 0);
  std::map<std::string, Allocate> allocation;
  std::map<std::string, std::string> block_of;  // buffer -> the buffer whose allocation it is in
  std::map<std::string, int> block_start;       // block -> its allocation's call
  auto hold = [&](int64_t bytes, int first, int last) {
    for (int u = first; u <= last; ++u) occupancy[static_cast<size_t>(u)] += bytes;
  };
  for (const Statement& st : program.body) {
    const auto* a = std::get_if<Allocate>(&st);
    if (a == nullptr) continue;
    allocation[a->buffer] = *a;
    if (a->in_place) {
      block_of[a->buffer] = block_of.at(a->reuses);
      continue;
    }
    block_of[a->buffer] = a->buffer;
    if (a->input >= 0) continue;
    if (a->output) {
      hold(a->bytes, a->unit, units - 1);
    } else {
      block_start[a->buffer] = a->unit;
    }
  }
  for (const auto& [buffer, unit] : freed_at) {
    const std::string& block = block_of.at(buffer);
    hold(allocation.at(block).bytes, block_start.at(block), unit);
    block_start.erase(block);
  }
  // A block the program never releases (none should be) is held to the end.
  for (const auto& [block, unit] : block_start) hold(allocation.at(block).bytes, unit, units - 1);
  const int64_t peak =
      occupancy.empty() ? 0 : *std::max_element(occupancy.begin(), occupancy.end());

  struct Pooled {
    std::string buffer;
    int freed = 0;  // the call it was released after
  };
  std::vector<Pooled> pool;
  std::map<std::string, std::string> reuse_of;  // new buffer -> the buffer whose storage it takes
  std::set<std::string> taken;
  auto dtype_of = [&](const std::string& b) { return graph.find_buffer(b)->dtype; };
  for (const Statement& st : program.body) {
    if (const auto* f = std::get_if<Free>(&st)) {
      pool.push_back({f->buffer, f->unit});
      continue;
    }
    const auto* a = std::get_if<Allocate>(&st);
    if (a == nullptr || a->output || a->in_place) continue;
    // The most recently released candidate first: the shortest hold, the warmest cache.
    for (auto it = pool.rbegin(); it != pool.rend(); ++it) {
      const Allocate& old = allocation.at(it->buffer);
      if (old.size != a->size || dtype_of(old.buffer) != dtype_of(a->buffer)) continue;
      bool within_peak = true;
      for (int u = it->freed + 1; u < a->unit; ++u) {
        within_peak = within_peak && occupancy[static_cast<size_t>(u)] + a->bytes <= peak;
      }
      if (!within_peak) continue;
      for (int u = it->freed + 1; u < a->unit; ++u) occupancy[static_cast<size_t>(u)] += a->bytes;
      reuse_of[a->buffer] = it->buffer;
      taken.insert(it->buffer);
      program.log.push_back(a->buffer + " = " + it->buffer + "  # reuse (" +
                            std::to_string(a->bytes) + " bytes, released after call " +
                            std::to_string(it->freed) + ", taken before call " +
                            std::to_string(a->unit) + ")");
      pool.erase(std::next(it).base());
      break;
    }
  }
  std::vector<Statement> body;
  for (Statement& st : program.body) {
    if (const auto* f = std::get_if<Free>(&st); f != nullptr && taken.count(f->buffer)) continue;
    if (auto* a = std::get_if<Allocate>(&st)) {
      if (const auto r = reuse_of.find(a->buffer); r != reuse_of.end()) {
        a->reuses = r->second;
        a->reuse_slot = allocation.at(r->second).slot;
      }
    }
    body.push_back(std::move(st));
  }
  program.body = std::move(body);
}

}  // namespace stax::program
