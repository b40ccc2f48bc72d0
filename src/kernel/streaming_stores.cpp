// Streaming (non-temporal) stores for large outputs written once (issue 6 point 5). A store
// that misses the cache first reads the line it writes (read for ownership) and then evicts
// something to hold it; when a kernel writes more than the last-level cache holds, the
// written lines are evicted before anyone reads them again, so both costs buy nothing. A
// streaming store writes whole lines straight to memory. The pass marks the full contiguous
// vector stores of such a buffer as streaming when the kernel does not read the buffer itself
// and the address is provably aligned to the vector register (what store_stream requires,
// docs/kernel_header_api.md); masked tails keep ordinary stores. Streaming stores are weakly
// ordered: each thread runs stax::stream_fence() after its share of the work-shared loop or
// single block that holds them and before the barrier after which other threads (the next
// kernel of the parallel region, the caller) may read what they wrote.
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "index/shape_exprs.h"
#include "ir/checked_arith.h"
#include "kernel/kernel_ir_visitor.h"
#include "kernel/passes.h"

namespace stax::kernel {

namespace {

// A kernel streams its output stores when the bytes it moves (every load and store it runs,
// outputs and inputs together) exceed this: the last level holds the most recently touched
// lines, so an output written early in such a kernel is evicted by the kernel's own traffic
// before anything reads it again, and an ordinary store only adds the read-for-ownership of
// each line. Measured here (z = x + y over 64M floats, 2 threads, output already mapped):
// streaming stores take 40 ms where ordinary ones take 49 ms.
int64_t streaming_threshold_bytes(const runtime::CacheSizes& caches) {
  return caches.llc_bytes;
}

// How often a loop body runs per execution of the loop (an upper bound for a loop with a
// limit), or nullopt when its bounds are not constant.
std::optional<int64_t> trips(const Loop& l, const index::Domain& ranges) {
  const auto b = l.begin.constant_value();
  const auto e = l.end.constant_value();
  if (b && e) return std::max<int64_t>(0, (*e - *b + l.step - 1) / l.step);
  const auto span = (l.end - l.begin).constant_value();
  if (span) return (*span + l.step - 1) / l.step;
  // A heuristic: at the hints where the extent is symbolic (issue 33).
  auto it = ranges.extents.find(l.var);
  if (it != ranges.extents.end()) {
    return (index::value_at_hints(it->second, ranges.symbols) + l.step - 1) / l.step;
  }
  return std::nullopt;
}

// Byte counts saturate: a count past int64 is past any cache.
int64_t saturating_add(int64_t a, int64_t b) {
  return checked_add(a, b).value_or(std::numeric_limits<int64_t>::max());
}
int64_t saturating_mul(int64_t a, int64_t b) {
  return checked_mul(a, b).value_or(std::numeric_limits<int64_t>::max());
}

struct StoreSite {
  Stmt* store;
  std::vector<const Loop*> loops;  // enclosing, outer to inner
  int64_t bytes;                   // written by this store over the whole kernel
};

class StreamingPlanner {
 public:
  StreamingPlanner(Kernel& k, const TargetOptions& target)
      : k_(k), target_(target), align_(vector_register_bytes(target.simd)) {
    for_each_stmt(k_.body, [&](const Stmt& d) {
      if (d.kind == StmtKind::Let) lanes_[d.let.id] = d.let.type.lanes;
    });
  }

  void run() {
    if (align_ == 0) return;  // no streaming store at this level (kernel_header_api.md)
    if (!target_.outputs_in_mapped_memory) return;  // TargetOptions: a loss on fresh pages
    collect(k_.body);
    int64_t traffic = loaded_bytes_;
    for (const StoreSite& s : sites_) traffic = saturating_add(traffic, s.bytes);
    if (traffic <= streaming_threshold_bytes(target_.caches)) return;
    bool any = false;
    for (StoreSite& s : sites_) {
      const Access& a = s.store->access;
      if (read_.count(a.buffer)) continue;
      if (!streamable(s)) continue;
      s.store->access.streaming = true;
      any = true;
    }
    if (any && place_fences(k_.body)) k_.body.push_back(fence());
  }

 private:
  static Stmt fence() {
    Stmt f;
    f.kind = StmtKind::Call;
    f.name = "stax::stream_fence";
    return f;
  }

  // Each thread fences its streaming stores where its share of the work ends, before the
  // barrier that lets other threads read them: after a work-shared loop (made nowait, the
  // barrier it had follows the fence) or at the end of a single block. Returns whether
  // streaming stores outside both remain (fenced at the end of the kernel then).
  bool place_fences(Block& b) {
    bool unfenced = false;
    for (size_t i = 0; i < b.size(); ++i) {
      Stmt& s = b[i];
      const bool streams = s.kind == StmtKind::Store ? s.access.streaming : place_fences(s.body);
      if (!streams) continue;
      if (s.kind == StmtKind::Single) {
        s.body.push_back(fence());
        continue;
      }
      if (s.kind == StmtKind::Loop && s.loop->kind == ForKind::Parallel) {
        const bool had_barrier = !s.loop->nowait;
        s.loop->nowait = true;
        auto at = b.begin() + static_cast<std::ptrdiff_t>(i) + 1;
        if (had_barrier) {
          Stmt barrier;
          barrier.kind = StmtKind::Barrier;
          at = b.insert(at, std::move(barrier));
        }
        b.insert(at, fence());
        i += had_barrier ? 2 : 1;
        continue;
      }
      unfenced = true;
    }
    return unfenced;
  }

  // Bytes one execution of an access moves over the whole kernel: its lanes times the trips
  // of its loops (unknown trip counts count nothing: no streaming on a guess).
  int64_t access_bytes(const Access& a, int lanes) const {
    int64_t n = a.form == AccessForm::Scalar ? 1 : lanes;
    n *= static_cast<int64_t>(dtype_size(a.storage));
    for (const Loop* l : loops_) {
      const auto t = trips(*l, k_.ranges);
      n = t ? saturating_mul(n, *t) : 0;
    }
    return n;
  }

  void collect(Block& b) {
    for (Stmt& s : b) {
      // Loads read their buffer, and so may an external call; a block transpose reads its
      // source.
      for_each_buffer_use(s, [&](const std::string& buffer, BufferRole role) {
        if (role != BufferRole::Write) read_.insert(buffer);
      });
      if (s.kind == StmtKind::Let && s.let.kind == LetKind::Load) {
        if (!is_local_array(s.let.access.buffer)) {
          loaded_bytes_ =
              saturating_add(loaded_bytes_, access_bytes(s.let.access, s.let.type.lanes));
        }
      }
      if (s.kind == StmtKind::LocalArray) {
        read_.insert(s.name);  // a local array: not memory
        local_arrays_.insert(s.name);
      }
      if (s.kind == StmtKind::Store)
        sites_.push_back({&s, loops_, access_bytes(s.access, lanes_of(s))});
      if (s.kind == StmtKind::Loop) loops_.push_back(s.loop.get());
      collect(s.body);
      if (s.kind == StmtKind::Loop) loops_.pop_back();
    }
  }

  int lanes_of(const Stmt& s) const {
    auto it = lanes_.find(s.value);
    return it == lanes_.end() ? 1 : it->second;
  }

  // A full contiguous vector of whole registers, stored as its own element type (no 16-bit
  // rounding), at an element offset that is a multiple of the register's elements for every
  // value of the enclosing loop variables. Buffers themselves are 64-byte aligned: outputs
  // come from the StaxAllocFn (stax_kernel_abi.h), intermediates from stax_alloc.
  bool streamable(const StoreSite& s) const {
    const Access& a = s.store->access;
    if (a.form != AccessForm::Contiguous || a.count || a.mask >= 0) return false;
    if (k_.buffer_is_input.count(a.buffer) && k_.buffer_is_input.at(a.buffer)) return false;
    const int lanes = lanes_of(*s.store);
    const int64_t elem = static_cast<int64_t>(dtype_size(a.storage));
    if (a.storage == DType::Bool || (lanes * elem) % align_ != 0) return false;
    const int64_t unit = align_ / elem;  // elements per register
    std::map<std::string, int64_t> at;
    for (const Loop* l : s.loops) {
      const auto b = l->begin.constant_value();
      if (!b) return false;  // a block-relative start: not tracked
      at[l->var] = *b;
    }
    for (const std::string& v : index::free_vars(a.index)) {
      if (!at.count(v)) return false;
    }
    // Affine in the loop variables: the offset at the loops' starts and each variable's
    // stride times its step must be multiples of the register's elements.
    if (index::evaluate(a.index, at) % unit != 0) return false;
    for (const Loop* l : s.loops) {
      if (!index::depends_on(a.index, l->var)) continue;
      const auto stride = index::stride(a.index, l->var, k_.ranges);
      if (!stride || (*stride * l->step) % unit != 0) return false;
    }
    return true;
  }

  Kernel& k_;
  const TargetOptions& target_;
  int64_t align_;
  std::map<int, int> lanes_;  // of every value
  std::set<std::string> read_;
  std::set<std::string> local_arrays_;
  int64_t loaded_bytes_ = 0;

  bool is_local_array(const std::string& name) const { return local_arrays_.count(name) > 0; }
  std::vector<const Loop*> loops_;
  std::vector<StoreSite> sites_;
};

}  // namespace

void mark_streaming_stores(Kernel& kernel, const TargetOptions& target) {
  StreamingPlanner(kernel, target).run();
}

}  // namespace stax::kernel
