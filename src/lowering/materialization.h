// The materialization rule of lowering (the seed's Section 6.6): whether an unrealized value
// is computed once into a buffer or recomputed inside each consumer. The answer comes from a
// per-device cost model: on the CPU a transcendental op is expensive next to a memory round
// trip, so a value with several reads is materialized (Example 7.2); on the GPU it is cheap
// and inlined. Independently of the device, inlining is bounded: a value whose inlined body
// or composed index arithmetic grows past a size is stored, so that neither lowering, the
// scheduler, code generation nor the C++ compiler ever sees an expression that grows with
// the length of a chain (each stored value is a load for its users, and fusion puts it back
// into their loop).
#pragma once

#include <cstdint>
#include <string>

#include "lowering/loop_ir.h"

namespace stax::lowering {

enum class Device { Cpu, Gpu };

// What a loader computes per element when inlined into a user, written out as a tree: an
// operand read twice counts twice, because each read runs its loader. Counts saturate.
struct BodyStats {
  int64_t loads = 0;
  int64_t cheap_ops = 0;
  int64_t moderate_ops = 0;
  int64_t transcendental_ops = 0;
  // floordiv/mod operations of the most expensive load index (views composed without a
  // strided layout: reshapes of permuted data).
  int64_t index_divisions = 0;

  int64_t total_ops() const { return cheap_ops + moderate_ops + transcendental_ops; }
  BodyStats& operator+=(const BodyStats& other);
};
// One load of stored data.
BodyStats load_stats();
// One op, its operands not included.
BodyStats op_stats(PointwiseOp op);
// The floordiv/mod count of the most expensive index `loader` loads from, found by running it
// on symbolic indices (bounded: it stops counting past the materialization limit).
int64_t measure_index_divisions(const Loader& loader, size_t rank);

struct MaterializationDecision {
  bool materialize = false;
  std::string reason;
};
// `reads`: how many times users run the value's loader per element of the value (an op
// reading it twice counts twice; a read that broadcasts it k-fold counts k).
MaterializationDecision decide_materialization(Device device, const BodyStats& stats,
                                               int64_t reads);

}  // namespace stax::lowering
