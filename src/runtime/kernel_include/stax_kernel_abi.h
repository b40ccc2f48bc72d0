/* C ABI between the Stax runtime and generated kernels: tensor arguments, the allocator
 * callback and error reporting into a caller buffer. Plain C so host code can include it
 * without the SIMD parts of stax_kernel.h (scratch memory: stax_kernel_scratch.h). */
#ifndef STAX_KERNEL_ABI_H_
#define STAX_KERNEL_ABI_H_

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor argument: element 0 of the view, rank, sizes and strides (in elements). */
typedef struct StaxTensorArg {
  const void* data;
  int64_t ndim;
  const int64_t* sizes;
  const int64_t* strides;
} StaxTensorArg;

/* Allocator supplied by the caller for kernel outputs: memory for output slot `slot` (each
 * slot is requested once per run), at least `nbytes` bytes, 64-byte aligned, or NULL on
 * failure. The slot index lets a caller hand out buffers it allocated before the run. */
typedef void* (*StaxAllocFn)(void* ctx, int64_t slot, int64_t nbytes);

/* The runtime's external calls (library routines such as matrix products, issue 14): runs
 * call site `site` of the loaded program, reading `operands` (element 0 of each operand, in
 * the order the site's description lists them) and writing `output`, on `num_threads` threads.
 * `symbols`: the values of the program's size symbols in name order (issue 33), NULL for a
 * static program. Returns 0, or nonzero after formatting the reason into err. */
typedef int (*StaxExternalFn)(void* ctx, int64_t site, const int64_t* symbols,
                              const void* const* operands, void* output, int num_threads, char* err,
                              int64_t err_capacity);

/* Called by the wrapper after the last statement that reads input `input` (issue 16, point 5):
 * the caller may free it now (the torch.compile bridge drops its reference, so a backward
 * graph frees the activations saved for it as it goes). NULL: nothing to release. */
typedef void (*StaxReleaseFn)(void* ctx, int64_t input);

/* Formats an error message into buf (capacity cap bytes, always NUL-terminated when
 * cap > 0); a NULL buffer or cap <= 0 is ignored. */
static inline void stax_set_error(char* buf, int64_t cap, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void stax_set_error(char* buf, int64_t cap, const char* fmt, ...) {
  if (buf == NULL || cap <= 0) return;
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, (size_t)cap, fmt, args);
  va_end(args);
}

/* Marks a kernel entry point: C linkage, visible from the shared object. */
#ifdef __cplusplus
#define STAX_KERNEL_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define STAX_KERNEL_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STAX_KERNEL_ABI_H_ */
