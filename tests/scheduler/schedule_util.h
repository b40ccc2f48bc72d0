// Helpers for scheduler tests: parse, lower and schedule a program in the text format.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"
#include "lowering/lowering.h"
#include "scheduler/schedule.h"

namespace stax::testing {

struct Scheduled {
  lowering::LoweredGraph lowered;
  scheduler::Schedule schedule;
};

// `with_library`: contractions become external calls of a stand-in library that accepts every
// call (machine-independent); otherwise they are loop nests.
inline std::unique_ptr<Scheduled> schedule_text(const std::string& text,
                                                bool with_library = false) {
  auto s = std::make_unique<Scheduled>();
  lowering::LoweringOptions options;
  if (with_library) {
    options.library_for = [](const lowering::ExternalCall&, std::string*) {
      return std::optional<std::string>("a test library");
    };
  }
  s->lowered = lowering::lower(ir::parse_graph(text), options);
  s->schedule = scheduler::schedule(s->lowered);
  return s;
}

inline std::unique_ptr<Scheduled> schedule_file(const std::string& path) {
  auto s = std::make_unique<Scheduled>();
  s->lowered = lowering::lower(ir::parse_graph_file(path));
  s->schedule = scheduler::schedule(s->lowered);
  return s;
}

inline std::string example(const std::string& name) {
  return std::string(STAX_EXAMPLES_DIR) + "/" + name;
}

}  // namespace stax::testing
