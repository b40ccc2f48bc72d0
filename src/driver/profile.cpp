// Profiling counters (see profile.h). Atomics with relaxed order: runs on several threads add
// to them concurrently, and a reader only needs each total, not an order between them.
#include "driver/profile.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace stax::driver {

namespace {

// STAX_PROFILE is read once, at the first query: the hot path then reads only this flag.
std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag([] {
    const char* v = std::getenv("STAX_PROFILE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }());
  return flag;
}

std::atomic<int64_t> entry_ns{0}, entry_calls{0}, external_ns{0}, external_calls{0};

}  // namespace

bool profiling_enabled() {
  return enabled_flag().load(std::memory_order_relaxed);
}

void set_profiling_enabled(bool on) {
  enabled_flag().store(on, std::memory_order_relaxed);
}

ProfileCounters profile_counters() {
  ProfileCounters c;
  c.entry_ns = entry_ns.load(std::memory_order_relaxed);
  c.entry_calls = entry_calls.load(std::memory_order_relaxed);
  c.external_ns = external_ns.load(std::memory_order_relaxed);
  c.external_calls = external_calls.load(std::memory_order_relaxed);
  return c;
}

void reset_profile_counters() {
  for (auto* c : {&entry_ns, &entry_calls, &external_ns, &external_calls}) {
    c->store(0, std::memory_order_relaxed);
  }
}

void add_profile_sample(ProfileSite site, int64_t ns) {
  const bool entry = site == ProfileSite::Entry;
  (entry ? entry_ns : external_ns).fetch_add(ns, std::memory_order_relaxed);
  (entry ? entry_calls : external_calls).fetch_add(1, std::memory_order_relaxed);
}

namespace {
std::atomic<TraceHook> trace_hook_slot{nullptr};
}  // namespace

void set_trace_hook(TraceHook hook) {
  trace_hook_slot.store(hook, std::memory_order_relaxed);
}

TraceHook trace_hook() {
  return trace_hook_slot.load(std::memory_order_relaxed);
}

void trace_kernel(const char* name, int begin) {
  if (TraceHook hook = trace_hook()) hook(name, begin != 0);
}

}  // namespace stax::driver
