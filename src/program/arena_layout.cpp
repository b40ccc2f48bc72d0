// The tree of temporal and spatial splits (see arena_layout.h).
#include "program/arena_layout.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <stdexcept>

namespace stax::program {

namespace {

struct Temporal;

// A child of a temporal split: one buffer, or a spatial split of columns side by side.
struct Item {
  int request = -1;  // a buffer, or -1 for a spatial split
  std::vector<std::unique_ptr<Temporal>> columns;
  int first = 0;  // the hull of the lifetimes below it
  int last = 0;
};

// Items whose lifetimes are pairwise disjoint, all at the split's offset, each at most `size`.
struct Temporal {
  int64_t size = 0;
  std::vector<Item> items;
};

class Layout {
 public:
  Layout(const std::vector<ArenaRequest>& requests, int64_t alignment)
      : requests_(requests), alignment_(alignment) {}

  ArenaLayout run() {
    std::vector<int> by_size(requests_.size());
    std::iota(by_size.begin(), by_size.end(), 0);
    std::sort(by_size.begin(), by_size.end(), [&](int x, int y) {
      const ArenaRequest& a = requests_[static_cast<size_t>(x)];
      const ArenaRequest& b = requests_[static_cast<size_t>(y)];
      if (aligned(a) != aligned(b)) return aligned(a) > aligned(b);
      if (a.last - a.first != b.last - b.first) return a.last - a.first > b.last - b.first;
      return x < y;
    });
    for (int r : by_size) {
      bool placed = false;
      for (auto& column : root_) {
        if ((placed = insert(*column, r))) break;
      }
      if (!placed) root_.push_back(single(r));
    }
    ArenaLayout out;
    out.offsets.assign(requests_.size(), -1);
    int64_t offset = 0;
    for (const auto& column : root_) {
      assign(*column, offset, out.offsets);
      offset += column->size;
    }
    out.bytes = offset;
    return out;
  }

 private:
  int64_t aligned(const ArenaRequest& r) const {
    return (std::max<int64_t>(r.bytes, 1) + alignment_ - 1) / alignment_ * alignment_;
  }
  int64_t size_of(int r) const { return aligned(requests_[static_cast<size_t>(r)]); }

  Item leaf(int r) const {
    Item item;
    item.request = r;
    item.first = requests_[static_cast<size_t>(r)].first;
    item.last = requests_[static_cast<size_t>(r)].last;
    return item;
  }
  std::unique_ptr<Temporal> single(int r) const {
    auto t = std::make_unique<Temporal>();
    t->size = size_of(r);
    t->items.push_back(leaf(r));
    return t;
  }

  bool insert(Temporal& t, int r) {
    const ArenaRequest& req = requests_[static_cast<size_t>(r)];
    if (size_of(r) > t.size) return false;
    Item* overlapping = nullptr;
    for (Item& item : t.items) {
      if (item.last < req.first || req.last < item.first) continue;
      if (overlapping != nullptr) return false;  // two neighbours in time: no room here
      overlapping = &item;
    }
    if (overlapping == nullptr) {
      t.items.push_back(leaf(r));
      return true;
    }
    Item& item = *overlapping;
    if (item.request >= 0) {
      // A buffer alive at the same time: beside it, if the split is wide enough.
      if (size_of(item.request) + size_of(r) > t.size) return false;
      Item split;
      split.first = item.first;
      split.last = item.last;
      split.columns.push_back(single(item.request));
      item = std::move(split);
    } else {
      for (auto& column : item.columns) {
        if (insert(*column, r)) {
          item.first = std::min(item.first, req.first);
          item.last = std::max(item.last, req.last);
          return true;
        }
      }
    }
    int64_t used = 0;
    for (const auto& column : item.columns) used += column->size;
    if (used + size_of(r) > t.size) return false;
    item.columns.push_back(single(r));
    item.first = std::min(item.first, req.first);
    item.last = std::max(item.last, req.last);
    return true;
  }

  void assign(const Temporal& t, int64_t offset, std::vector<int64_t>& offsets) const {
    for (const Item& item : t.items) {
      if (item.request >= 0) {
        offsets[static_cast<size_t>(item.request)] = offset;
        continue;
      }
      int64_t column_offset = offset;
      for (const auto& column : item.columns) {
        assign(*column, column_offset, offsets);
        column_offset += column->size;
      }
    }
  }

  const std::vector<ArenaRequest>& requests_;
  int64_t alignment_;
  std::vector<std::unique_ptr<Temporal>> root_;  // the top spatial split
};

}  // namespace

ArenaLayout layout_arena(const std::vector<ArenaRequest>& requests, int64_t alignment) {
  if (alignment <= 0) throw std::invalid_argument("layout_arena: alignment must be positive");
  for (const ArenaRequest& r : requests) {
    if (r.bytes < 0 || r.first > r.last) {
      throw std::invalid_argument("layout_arena: a request needs bytes >= 0 and first <= last");
    }
  }
  return Layout(requests, alignment).run();
}

}  // namespace stax::program
