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
    out.offset_terms.assign(requests_.size(), {});
    int64_t offset = 0;
    std::vector<int> terms;
    for (const auto& column : root_) {
      assign(*column, offset, out.offsets);
      offset += column->size;
      const int node = tree_node(*column, terms, out);
      terms.push_back(node);
    }
    out.bytes = offset;
    out.bytes_terms = terms;
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

  // Adds the nodes of split `t`, whose offset is the sum of the sizes of `before`, to `out`;
  // returns the node of its size.
  int tree_node(const Temporal& t, const std::vector<int>& before, ArenaLayout& out) const {
    ArenaNode split{ArenaNode::Kind::Max, -1, {}};
    for (const Item& item : t.items) {
      if (item.request >= 0) {
        out.offset_terms[static_cast<size_t>(item.request)] = before;
        out.nodes.push_back({ArenaNode::Kind::Buffer, item.request, {}});
        split.children.push_back(static_cast<int>(out.nodes.size()) - 1);
        continue;
      }
      ArenaNode columns{ArenaNode::Kind::Sum, -1, {}};
      std::vector<int> terms = before;
      for (const auto& column : item.columns) {
        const int node = tree_node(*column, terms, out);
        terms.push_back(node);
        columns.children.push_back(node);
      }
      out.nodes.push_back(std::move(columns));
      split.children.push_back(static_cast<int>(out.nodes.size()) - 1);
    }
    out.nodes.push_back(std::move(split));
    return static_cast<int>(out.nodes.size()) - 1;
  }

  const std::vector<ArenaRequest>& requests_;
  int64_t alignment_;
  std::vector<std::unique_ptr<Temporal>> root_;  // the top spatial split
};

}  // namespace

ArenaLayout evaluate_arena(const ArenaLayout& layout, const std::vector<int64_t>& bytes,
                           int64_t alignment) {
  if (bytes.size() != layout.offset_terms.size()) {
    throw std::invalid_argument("evaluate_arena: one size per request");
  }
  std::vector<int64_t> size(layout.nodes.size(), 0);
  for (size_t n = 0; n < layout.nodes.size(); ++n) {
    const ArenaNode& node = layout.nodes[n];
    if (node.kind == ArenaNode::Kind::Buffer) {
      const int64_t b = std::max<int64_t>(bytes[static_cast<size_t>(node.request)], 1);
      size[n] = (b + alignment - 1) / alignment * alignment;
    }
    for (int c : node.children) {
      const int64_t s = size[static_cast<size_t>(c)];
      size[n] = node.kind == ArenaNode::Kind::Max ? std::max(size[n], s) : size[n] + s;
    }
  }
  auto sum = [&](const std::vector<int>& terms) {
    int64_t total = 0;
    for (int t : terms) total += size[static_cast<size_t>(t)];
    return total;
  };
  ArenaLayout out = layout;
  for (size_t r = 0; r < bytes.size(); ++r) out.offsets[r] = sum(layout.offset_terms[r]);
  out.bytes = sum(layout.bytes_terms);
  return out;
}

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
