// Pass: the inference pool of Section 7.5. Every intermediate (never an output: those go to
// the caller) gets a fixed offset in one arena (arena_layout.h), from its lifetime in the
// wrapper's calls; its allocation becomes a pointer into the arena and its release
// disappears. The program keeps the arena across calls, one per concurrent call
// (stax_kernel_scratch.h), so a model called in a loop allocates nothing for intermediates
// and faults in no pages after the first call.
#include <algorithm>
#include <map>
#include <string>

#include "program/arena_layout.h"
#include "program/pipeline.h"

namespace stax::program {

void plan_arena(HostProgram& program) {
  std::map<std::string, size_t> request_of;
  std::vector<ArenaRequest> requests;
  std::vector<std::string> names;
  for (const Statement& st : program.body) {
    if (const auto* a = std::get_if<Allocate>(&st); a != nullptr && a->in_place && !a->output) {
      // Written in place of a buffer it reads for the last time: that buffer's storage, which
      // lives on to this one's last use.
      request_of[a->buffer] = request_of.at(a->reuses);
    } else if (const auto* a = std::get_if<Allocate>(&st); a != nullptr && !a->output) {
      request_of[a->buffer] = requests.size();
      requests.push_back({a->bytes, a->unit, a->unit});
      program.arena_sizes.push_back(a->size);
      names.push_back(a->buffer);
    } else if (const auto* f = std::get_if<Free>(&st)) {
      ArenaRequest& r = requests.at(request_of.at(f->buffer));
      r.last = std::max(r.last, f->unit);
    }
  }
  if (requests.empty()) return;
  const ArenaLayout layout = layout_arena(requests);
  std::vector<Statement> body;
  for (Statement& st : program.body) {
    if (auto* a = std::get_if<Allocate>(&st); a != nullptr && !a->output) {
      a->arena_request = static_cast<int>(request_of.at(a->buffer));
      a->arena_offset = layout.offsets[static_cast<size_t>(a->arena_request)];
    } else if (std::holds_alternative<Free>(st)) {
      continue;  // the arena outlives the call
    }
    body.push_back(std::move(st));
  }
  program.body = std::move(body);
  program.num_intermediates = 0;
  program.arena_bytes = layout.bytes;
  program.arena = layout;

  // M* of the intermediates alone, the least any placement could use.
  int last_unit = 0;
  for (const ArenaRequest& r : requests) last_unit = std::max(last_unit, r.last);
  std::vector<int64_t> live(static_cast<size_t>(last_unit) + 1, 0);
  for (const ArenaRequest& r : requests) {
    for (int u = r.first; u <= r.last; ++u) live[static_cast<size_t>(u)] += r.bytes;
  }
  const int64_t lower_bound = *std::max_element(live.begin(), live.end());
  program.log.push_back("arena: " + std::to_string(requests.size()) + " intermediates at fixed " +
                        "offsets in " + std::to_string(layout.bytes) + " bytes, kept across " +
                        "calls (their M* is " + std::to_string(lower_bound) + " bytes)");
  for (size_t k = 0; k < requests.size(); ++k) {
    program.log.push_back("  " + names[k] + " at offset " + std::to_string(layout.offsets[k]) +
                          " (" + std::to_string(requests[k].bytes) + " bytes, live over calls " +
                          std::to_string(requests[k].first) + "-" +
                          std::to_string(requests[k].last) + ")");
  }
}

}  // namespace stax::program
