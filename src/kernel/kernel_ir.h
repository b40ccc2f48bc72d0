// The loop-level kernel IR between the scheduler and the C++ text (issue 6, point 1).
//
// One `Kernel` holds the loops of one fused node (Section 8): a tree of statements — loops
// (serial, OpenMP-parallel, vectorized with N lanes, unrolled), definitions of typed scalar
// and vector values (`Let`), stores, reduction accumulators and their updates, local arrays,
// index checks that set the kernel's error code, calls to external functions. The builder
// (ir_builder.h) makes the scalar form of a fused node by running its node bodies; the passes
// of pipeline.cpp rewrite it (kernel form, parallel depth, split and column reductions,
// cascade blocking); the verifier checks it after every pass; the printer turns the final IR
// into C++ against the kernel-header API of /work/kernel_api.md without taking any decision.
// Which fields of a statement hold values, accumulators, indices and buffers is written down
// once, in kernel_ir_visitor.h (uses per statement, IRVisitor, IRMutator); passes ask it
// instead of listing the fields themselves.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "index/expr.h"
#include "ir/dtype.h"
#include "lowering/ops_handler.h"
#include "lowering/source_op.h"

namespace stax::kernel {

using lowering::PointwiseOp;
using lowering::ReductionType;

// A scalar (lanes == 1) or a vector of `lanes` elements (stax::Vec<T, lanes>).
struct ValueType {
  DType dtype = DType::Float32;
  int lanes = 1;
  bool is_vector() const { return lanes > 1; }
  friend bool operator==(const ValueType&, const ValueType&) = default;
};

// How a load or store reaches memory.
enum class AccessForm : uint8_t {
  Scalar,      // p[index]
  Contiguous,  // lanes at index, index + 1, ... (index is lane 0's)
  Strided,     // lanes at index + l * stride
  Gather,      // lanes at p[offsets[l]] (offsets: an int64 vector value)
};

struct Access {
  std::string buffer;
  index::Expr index;               // lane 0's element offset (Gather: unused, see offsets)
  DType storage = DType::Float32;  // the element type in memory (Half/BFloat16 hold floats)
  AccessForm form = AccessForm::Scalar;
  int64_t stride = 0;  // Strided
  int offsets = -1;    // Gather: value id of a Vec<int64_t, N>
  int mask = -1;       // value id of a bool mask: lanes (or the scalar) where it is false
                       // read zero and are not read
  // A masked tail: only lanes < count are read or written. A constant in [1, lanes], or, over
  // an extent known only at run time (issue 33), an expression in [0, lanes - 1].
  std::optional<index::Expr> count;
  // A store that bypasses the caches (non-temporal, streaming_stores.cpp): full contiguous
  // vectors at an address aligned to the vector register size.
  bool streaming = false;
};

enum class LetKind : uint8_t {
  Constant,           // `constant` as dtype
  Load,               // `access`
  Compute,            // op(args)
  Convert,            // args[0] to dtype (PyTorch semantics); `via` = a 16-bit dtype: rounded
                      // through it (float -> Half/BFloat16 -> float)
  IndexValue,         // the int64 value of `index` (vector: lane l is index + l * step); int32
                      // when the index-narrowing pass proved every lane fits
                      // (narrow_indices.cpp)
  Broadcast,          // a scalar args[0] in every lane
  Blend,              // lanes < count from args[1], the others from args[0] (Vec::set)
  AccumulatorResult,  // the reduced value of accumulator `accumulator` (after its loops)
  CombinePartials,    // split reductions: the thread partials of `accumulator`, in order
};

struct Let {
  int id = -1;
  ValueType type;
  LetKind kind = LetKind::Constant;
  // Constant: the value, of the kind of type.dtype (ir::convert_scalar to it), so int64
  // constants are exact.
  ir::Scalar constant;
  PointwiseOp op = PointwiseOp::Add;
  std::vector<int> args;
  Access access;
  index::Expr index;
  int64_t step = 0;
  index::Expr count = 0;     // Blend (as Access::count)
  std::optional<DType> via;  // Convert
  int accumulator = -1;      // AccumulatorResult, CombinePartials
  bool welford_m2 = false;   // AccumulatorResult of a Welford accumulator: m2, not mean
};

// A reduction accumulator: declared before its reduction loops, updated inside, reduced
// after them. Welford mean and m2 over one value share one accumulator.
struct Accumulator {
  int id = -1;
  ReductionType type = ReductionType::Sum;  // WelfordMean for a Welford triple
  DType dtype = DType::Float32;             // of the reduced values
  int lanes = 1;                            // vector accumulator lanes
  // Independent accumulators per reduction (Section 8.1, Proposition 8.1(2): W of them break
  // the dependent chain of updates; independent_accumulators.cpp chooses W). Part j of W is
  // updated by the Reduce statements with part == j; wherever the accumulator is read (its
  // result, its thread partial, a cascade fold) the parts are combined first, pairwise in
  // part order ((p0 op p1) op (p2 op p3)), so the result does not depend on the machine.
  int independent = 1;
  bool cascade = false;          // a blocked float sum (kernel/cascade_blocking.h)
  bool per_lane_result = false;  // column reduction: each lane is its own output
  bool split = false;            // one partial per thread (a split reduction)
  std::string name() const { return "acc" + std::to_string(id); }
};

enum class CheckKind : uint8_t {
  DivisionByZero,   // some lane of an integer divisor is 0
  IndexOutOfRange,  // some lane outside [lo, hi)
};

// An external function (e.g. a BLAS routine) called with buffer pointers, values and
// constants.
struct CallArg {
  enum class Kind : uint8_t { Buffer, Value, Integer } kind = Kind::Integer;
  std::string buffer;
  int value = -1;
  int64_t integer = 0;
};

// A rows x cols block read along its rows and written along its columns (Section 8.2, printed
// as stax::transpose_tile): destination[c * destination.stride + r] =
// source[r * source.stride + c]. The indices name element (0, 0); both accesses have the
// storage type of the source (the destination is a LocalArray of that type).
struct BlockTranspose {
  Access source;
  Access destination;
  int rows = 0;
  int cols = 0;
};

enum class StmtKind : uint8_t {
  Let,
  Store,  // access = value
  Loop,
  Block,        // a scope
  Single,       // #pragma omp single [nowait]
  Barrier,      // #pragma omp barrier
  LocalArray,   // a per-iteration array: buffer name, storage dtype, elements
  DefineIndex,  // an index variable: `name` = index (an Expr) or = the int64 value `value`
  AccumulatorInit,
  Reduce,        // accumulator <- value (Welford: count lanes in a masked tail)
  FoldBlock,     // cascade: add the block accumulator into the outer one and reset it
  StorePartial,  // split reduction: this thread's partial of the accumulator
  Check,
  Call,
  Comment,
  TransposeBlock,  // transpose: a register transpose of one block into a local tile
  // GPU (kernel/cuda/map_threads.cpp): the accumulator combined across the threads of a row
  // (Loop::threads_per_row of the enclosing GpuRows loop), every thread ending with the
  // result, in a fixed order (a warp-shuffle tree, then shared memory across warps).
  ThreadCombine,
};

// Where a loop sits in its fused node; the passes use it to find their loops.
enum class LoopRole : uint8_t { Outer, Pointwise, Reduction, Other };

struct Stmt;
using Block = std::vector<Stmt>;

// Who runs a loop's iterations (design review §8 item 3, after Halide's ForType). Whether an
// iteration is one element or a vector is Loop::vector_width, not a kind: the vectorized loop
// is itself work-shared when it is the only loop of a nest (KernelDecisions::
// parallel_vector_loop), so the two are independent properties of one loop.
enum class ForKind : uint8_t {
  Serial,    // the thread that reaches the loop runs every iteration, in order
  Parallel,  // the iterations of this loop and of the collapse - 1 loops perfectly nested in
             // it are shared among the threads of the kernel's parallel region
  // GPU (issue 35, kernel/cuda/): this loop and the collapse - 1 loops nested in it, flattened
  // row-major, are rows dealt to groups of threads_per_row threads, rows_per_block groups per
  // block, the grid striding over them; every thread of a group runs its row.
  GpuRows,
  // GPU: this loop and the collapse - 1 loops nested in it, flattened, are strided over the
  // threads_per_row threads of the enclosing GpuRows loop's group (thread t takes t, t + T,
  // ...).
  GpuLanes,
};

// How a parallel loop deals its iterations to the threads.
enum class SchedulePolicy : uint8_t {
  // Contiguous chunks of equal size, chunk t to thread t: which thread runs which iterations
  // depends only on the team size and the trip count. A split reduction combines its
  // partials in thread order and hands the masked tail to the thread of the last iteration
  // (split_reduction.cpp), so its result is deterministic only under this policy (the
  // verifier checks it).
  Static,
};

struct Loop {
  std::string var;
  index::Expr begin = index::Expr(0);
  index::Expr end = index::Expr(0);
  std::optional<int64_t> limit;  // also stop at limit: var < min(end, limit)
  int64_t step = 1;
  int vector_width = 1;  // > 1: the body is vectorized with this many lanes per step
  int unroll = 1;        // > 1: #pragma GCC unroll
  ForKind kind = ForKind::Serial;
  // Parallel: how many perfectly nested loops share their iterations, this one included
  // (OpenMP collapse), how they are dealt, and whether the threads skip the barrier after it.
  int collapse = 1;
  SchedulePolicy schedule = SchedulePolicy::Static;
  bool nowait = false;
  LoopRole role = LoopRole::Other;
  int nest = -1;  // the nest of the fused node it belongs to (-1: shared outer loops)
  // The C++ type of the loop variable: Int32 when the index-narrowing pass proved it and every
  // index it takes part in fit (issue 6 point 8, narrow_indices.cpp).
  DType index_type = DType::Int64;
  // GpuRows (and its GpuLanes loops): threads per row and rows per block.
  int threads_per_row = 1;
  int rows_per_block = 1;
};

struct Stmt {
  StmtKind kind = StmtKind::Comment;
  Let let;                       // Let
  Access access;                 // Store
  int value = -1;                // Store, Reduce, StorePartial, Check, DefineIndex (value form)
  int index_value = -1;          // Reduce of ArgMax/ArgMin: the int64 index of `value`
  std::shared_ptr<Loop> loop;    // Loop
  Block body;                    // Loop, Block, Single
  bool nowait = false;           // Single
  std::string name;              // LocalArray (buffer), DefineIndex (var), Call (function), Comment
  DType dtype = DType::Float32;  // LocalArray
  int64_t elements = 0;          // LocalArray
  std::optional<index::Expr> index;  // DefineIndex (expression form)
  int accumulator = -1;              // AccumulatorInit, Reduce, FoldBlock, StorePartial
  std::optional<index::Expr> count;  // Reduce (Welford tails; as Access::count)
  int part = 0;                      // Reduce: which independent part it updates
  CheckKind check = CheckKind::DivisionByZero;
  int64_t lo = 0, hi = 0;          // IndexOutOfRange
  int error_code = 0;              // Check
  std::vector<CallArg> call_args;  // Call
  std::string text;                // Comment
  int nest = -1;                   // Block: the body of nest `nest` of the fused node
  bool vector_tail = false;        // Block: the masked tail of a vectorized loop
  // DefineIndex: the variable's C++ type (as Loop::index_type).
  DType index_type = DType::Int64;
  BlockTranspose transpose;  // TransposeBlock
  // GPU: a store after the GpuLanes loops of its row, whose value every thread of the row
  // holds: written by the row's first thread only.
  bool first_thread_of_row = false;
};

// A check's error: its code in the kernel's error variable and the wrapper's message.
struct ErrorSite {
  int code = 0;
  CheckKind kind = CheckKind::DivisionByZero;
  // "ZeroDivisionError", or the ir::IndexRule's message ("{}" where the value goes).
  std::string message;
  bool index_error = false;  // PyTorch raises IndexError (ir::IndexRule::index_error)
};

enum class KernelForm : uint8_t { Scalar, Vectorized, Tiled, ColumnReduction };

// The form the kernel-form pass chose for one nest, with its reason.
struct NestDecision {
  KernelForm form = KernelForm::Scalar;
  std::string reason;
  std::string vector_var;  // the vectorized loop variable
  int vector_width = 1;
  std::string vector_width_reason;  // why vector_width lanes (kernel/vector_width.h)
  std::string tile_outer_var;       // Tiled: the next-outer loop, tiled with the vector loop
  int64_t tile = 0;
  std::vector<std::pair<std::string, index::Expr>> tiled_loads;  // read through L1 tiles
  // Per tiled load: the edge of the register transposes its tile is copied with (a divisor
  // of `tile`), or 0 for element-wise copies (no register transpose of its type, or a
  // non-constant stride).
  std::vector<int> transpose_blocks;
};

// The decisions the passes took, for explain and the summaries.
// Issue 35: the GPU form of a kernel and its launch shape (kernel/cuda/gpu_form.cpp).
struct GpuDecision {
  bool on = false;
  std::string form;  // "pointwise", "row reduction (a warp per row)", ...
  std::string reason;
  int threads_per_row = 1;
  int rows_per_block = 1;
  int block = 1;  // threads per block: threads_per_row * rows_per_block
  // Rows (pointwise: elements) the grid covers, over the size symbols: the host divides it by
  // rows_per_block, capped at max_blocks, at each call.
  index::Expr rows = index::Expr(0);
  int64_t max_blocks = 0;
  std::string launch_reason;
};

struct KernelDecisions {
  GpuDecision gpu;
  std::vector<NestDecision> nests;
  int parallel_depth = 0;
  std::vector<int64_t> parallel_ranges;  // the loops Algorithm 8.1 looked at
  std::string parallel_reason;
  bool split_reduction = false;
  bool parallel_vector_loop = false;  // the vectorized loop itself is work-shared
  // The innermost shared outer loop is the vectorized one, one output per lane for every
  // nest under it (kernel_form.cpp, outer_column_form).
  bool column_over_outer = false;
  std::string index_width_reason;  // which variables are int32, and why the others are not
  std::string hoisting_reason;     // the loop-invariant values moved out of their loops
};

struct Kernel {
  std::string name;         // the fused node's name (op0, op0_op1, ...)
  std::string description;  // its iteration group
  // The graph ops its loops compute, in graph order (issue 7 point 6: the comment naming
  // them precedes the kernel's function in the generated C++).
  std::vector<lowering::SourceOp> source_ops;
  Block body;
  std::vector<Accumulator> accumulators;  // indexed by id
  std::vector<ErrorSite> errors;
  // Every loop and index variable with its extent, and the size symbols the extents are
  // expressions over, with their facts (simplification, index widths, C++ index printing).
  index::Domain ranges;
  std::map<std::string, bool> buffer_is_input;  // buffers the kernel's pointers name
  KernelDecisions decisions;
  int next_value = 0;

  int new_value_id() { return next_value++; }
  Accumulator& accumulator(int id) { return accumulators.at(static_cast<size_t>(id)); }
  const Accumulator& accumulator(int id) const { return accumulators.at(static_cast<size_t>(id)); }
};

// Statement constructors.
Stmt make_let(Let let);
Stmt make_store(Access access, int value);
Stmt make_loop(Loop loop, Block body);
Stmt make_block(Block body);
Stmt make_comment(std::string text);

// Visits every statement (pre-order), nested blocks included. What a statement uses is
// enumerated by kernel_ir_visitor.h.
template <class F>
void for_each_stmt(Block& block, F&& f) {
  for (Stmt& s : block) {
    f(s);
    for_each_stmt(s.body, f);
  }
}
template <class F>
void for_each_stmt(const Block& block, F&& f) {
  for (const Stmt& s : block) {
    f(s);
    for_each_stmt(s.body, f);
  }
}

// A deep copy (loops are shared_ptrs).
Block clone_block(const Block& block);

std::string_view kernel_form_name(KernelForm form);

// The identity of a reduction over `dtype` (what accumulators start from and masked tail
// lanes contribute), of the dtype's kind: an integer type's extremes for max and min, exactly.
ir::Scalar reduction_identity(ReductionType type, DType dtype);

}  // namespace stax::kernel
