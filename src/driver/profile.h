// Off-by-default profiling counters of compiled runs (bench/models splits Stax's time with
// them): nanoseconds and calls inside the generated entry (CompiledGraph::run / run_into) and
// inside external library calls (ExternalPlans::call, which the entry makes, so entry time
// includes it). Enabled when STAX_PROFILE=1 at the first query, or by set_profiling_enabled.
// When off, a run pays one relaxed atomic load per counter site and reads no clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace stax::driver {

struct ProfileCounters {
  int64_t entry_ns = 0;
  int64_t entry_calls = 0;
  int64_t external_ns = 0;
  int64_t external_calls = 0;
};

bool profiling_enabled();
void set_profiling_enabled(bool on);
ProfileCounters profile_counters();
void reset_profile_counters();

enum class ProfileSite { Entry, External };
void add_profile_sample(ProfileSite site, int64_t ns);

// Times its scope into `site` when profiling is on (decided at construction).
class ProfileScope {
 public:
  explicit ProfileScope(ProfileSite site) : site_(site), on_(profiling_enabled()) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  ~ProfileScope() {
    if (!on_) return;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
    add_profile_sample(site_, static_cast<int64_t>(ns));
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  ProfileSite site_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

// Issue 34, point 4: names each library call in a tracer's timeline (the Python bridge opens
// a torch.profiler range per call while it profiles a region's run), called with the call's
// name on entry (begin) and on exit, on the thread that makes the call. Null: none, which
// costs a call one relaxed atomic load.
using TraceHook = void (*)(const char* name, bool begin);
void set_trace_hook(TraceHook hook);
TraceHook trace_hook();
// What every loaded program calls around each kernel function it runs
// (stax_kernel_trace.h): forwards to the trace hook when one is set.
void trace_kernel(const char* name, int begin);

// Calls the trace hook around its scope when one is set (decided at construction).
class TraceScope {
 public:
  explicit TraceScope(const char* name) : name_(name), hook_(trace_hook()) {
    if (hook_ != nullptr) hook_(name_, true);
  }
  ~TraceScope() {
    if (hook_ != nullptr) hook_(name_, false);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  const char* name_;
  TraceHook hook_;
};

}  // namespace stax::driver
