// Per-kernel ranges in a tracer's timeline (issue 34, point 4): the wrapper opens a
// StaxTraceScope around each kernel-function call, named after the function and the fused
// nodes it runs (program/group_kernel_functions.cpp decides the name). Off unless the runtime
// hands the program a callback (stax_set_trace), which it does for every program it loads,
// forwarding to driver::trace_hook(); with no tracer a call costs one relaxed load and a
// branch, and the scope runs on the wrapper's thread, outside the kernel's parallel region.
// Included by stax_kernel.h; not meant to be included directly.
#pragma once

#include "stax_kernel_abi.h"  // STAX_KERNEL_EXPORT

typedef void (*StaxTraceFn)(const char* name, int begin);

// One per program (each program is one shared object): set by the loader, read by every call.
static StaxTraceFn stax_trace_callback = nullptr;

STAX_KERNEL_EXPORT void stax_set_trace(StaxTraceFn fn) {
  __atomic_store_n(&stax_trace_callback, fn, __ATOMIC_RELAXED);
}

struct StaxTraceScope {
  explicit StaxTraceScope(const char* name)
      : name_(name), fn_(__atomic_load_n(&stax_trace_callback, __ATOMIC_RELAXED)) {
    if (fn_ != nullptr) fn_(name_, 1);
  }
  ~StaxTraceScope() {
    if (fn_ != nullptr) fn_(name_, 0);
  }
  StaxTraceScope(const StaxTraceScope&) = delete;
  StaxTraceScope& operator=(const StaxTraceScope&) = delete;

  const char* name_;
  StaxTraceFn fn_;
};
