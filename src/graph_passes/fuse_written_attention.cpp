// fuse_written_attention (fuse_written_attention.h): the pattern, the cost model, the rewrite.
//
// The cost model counts the bytes each form moves beyond reading Q, K and V once:
// - written out, the scores pass through memory four times (the first product writes them,
//   the softmax reads them and writes the probabilities, the second product reads those),
//   counted in float32 as the softmax computes; and an operand whose [B * H, L, E] batch is
//   not a view of it is copied first (the graph says so with a clone before the reshape):
//   read and written once more;
// - blocked, each block of query rows against a block of keys packs its rows of Q, K and V
//   for the library's products and pays their fixed cost, which measures as about as much as
//   moving 128 KiB (2 threads, Zen 4: 1-2 us for a block's two products and its softmax at
//   64-wide heads, against 100-130 GB/s from L2).
// Measured on this machine (torch.compile with Stax, 2 threads), the blocked form is faster
// from 12 heads x 128 x 128 up (0.69-0.95 of the written-out time) and slower for small
// scores (1 x 12 x 16 x 16, 8 x 12 x 32 x 32, one query row against 128 keys: 1.15-1.7x),
// which is where the counts cross.
#include "graph_passes/fuse_written_attention.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "graph_passes/rebuild_graph.h"
#include "ir/op_schema.h"
#include "ir/text_format.h"

namespace stax::graph_passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::ValueRef;

constexpr int64_t kBlockFixedBytes = int64_t{128} << 10;

struct Uses {
  std::vector<std::vector<size_t>> consumers;  // per value: the nodes that read it
  std::vector<bool> is_output;
};

Uses uses_of(const Graph& g) {
  Uses u;
  u.consumers.resize(g.values().size());
  u.is_output.assign(g.values().size(), false);
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    for (ValueRef v : ir::tensor_operands(g.nodes()[k])) {
      auto& list = u.consumers[static_cast<size_t>(v.index)];
      if (list.empty() || list.back() != k) list.push_back(k);
    }
  }
  for (ValueRef out : g.outputs()) u.is_output[static_cast<size_t>(out.index)] = true;
  return u;
}

bool last_dim_only(const Node& n, size_t rank) {
  const auto dims = ir::int_list_arg(n, 1);
  return dims && dims->size() == 1 &&
         ((*dims)[0] == -1 || (*dims)[0] == static_cast<int64_t>(rank) - 1) && ir::bool_arg(n, 2);
}

struct Match {
  size_t root = 0;
  ValueRef query, key_t, value;  // [B, H, Lq, E], [B, H, E, Lk], [B, H, Lk, Ev]
  // The key as stored, [B, Hkv, Lk, E], when key_t transposes it (no transpose is added
  // then); with value, [B, Hkv, Lk, Ev], ungrouped when both repeat Hkv heads for H.
  std::optional<ValueRef> key;
  std::optional<ValueRef> mask;
  double scale = 1.0;
  std::set<size_t> chain;    // nodes that only the attention reads, the root among them
  std::set<size_t> peels;    // the operands' reshapes and copies: gone once nothing reads them
  int64_t copied_bytes = 0;  // operands the written-out form copies into its batch layout
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g) {}

  std::optional<Match> match(size_t root) {
    m_ = Match{};
    m_.root = root;
    const Node& r = g_.nodes()[root];
    if (r.op != "reshape" && r.op != "view") return std::nullopt;
    const auto& out_sizes = g_.value(r.output).type.sizes;
    if (out_sizes.size() != 4) return std::nullopt;
    const int64_t B = out_sizes[0], H = out_sizes[1];
    const Node* bmm2 = take(arg(r, 0), {"bmm"});
    if (bmm2 == nullptr) return std::nullopt;
    m_.chain.insert(root);
    const std::optional<ValueRef> p = unbatch(arg(*bmm2, 0), B, H, /*operand=*/false);
    const std::optional<ValueRef> v = unbatch(arg(*bmm2, 1), B, H, /*operand=*/true);
    if (!p || !v) return std::nullopt;
    m_.value = *v;
    if (!match_softmax(*p, B, H)) return std::nullopt;
    resolve_key_value();
    return m_;
  }

 private:
  static ValueRef arg(const Node& n, size_t k) { return std::get<ValueRef>(n.args.at(k)); }
  const ir::TensorType& type(ValueRef v) const { return g_.value(v).type; }

  // The producer of `v` when its op is one of `ops`; it joins the chain.
  const Node* take(ValueRef v, std::initializer_list<const char*> ops) {
    const Node* n = producer_of(v, ops);
    if (n != nullptr) m_.chain.insert(index_of(*n));
    return n;
  }

  // A [B * H, r, c] operand of a product back to the [B, H, r, c] value it reshapes, through
  // copies and expands that change nothing; an operand's steps are peels, not chain.
  std::optional<ValueRef> unbatch(ValueRef v3, int64_t B, int64_t H, bool operand) {
    const int p = g_.value(v3).producer;
    if (p < 0) return std::nullopt;
    const Node& reshape = g_.nodes()[static_cast<size_t>(p)];
    const auto& s3 = type(v3).sizes;
    if ((reshape.op != "reshape" && reshape.op != "view") || s3.size() != 3) return std::nullopt;
    ValueRef x = arg(reshape, 0);
    if (type(x).sizes != std::vector<int64_t>{B, H, s3[1], s3[2]}) return std::nullopt;
    (operand ? m_.peels : m_.chain).insert(static_cast<size_t>(p));
    for (;;) {
      const int q = g_.value(x).producer;
      if (q < 0) break;
      const Node& n = g_.nodes()[static_cast<size_t>(q)];
      const bool same_sizes = n.op == "expand" && type(arg(n, 0)).sizes == type(x).sizes;
      if (n.op != "clone" && !same_sizes) break;
      if (n.op == "clone" && operand)
        m_.copied_bytes += type(x).numel() * dtype_size(type(x).dtype);
      (operand ? m_.peels : m_.chain).insert(static_cast<size_t>(q));
      x = arg(n, 0);
    }
    return x;
  }

  const Node* producer_of(ValueRef v, std::initializer_list<const char*> ops) const {
    const int p = g_.value(v).producer;
    if (p < 0) return nullptr;
    const Node& n = g_.nodes()[static_cast<size_t>(p)];
    for (const char* op : ops) {
      if (n.op == op) return &n;
    }
    return nullptr;
  }
  size_t index_of(const Node& n) const { return static_cast<size_t>(g_.value(n.output).producer); }

  // The key as stored, read through key_t's transpose of its last two dims; then LLaMA's
  // repeat_kv (unsqueeze at 2, expand, a copy, reshape: each key/value head repeated for a
  // group of query heads) read as the grouped-query attention it is, for key and value alike.
  void resolve_key_value() {
    const Node* t = producer_of(m_.key_t, {"transpose"});
    if (t == nullptr) return;
    const int64_t d0 = ir::normalize_dim(ir::int_arg(*t, 1), 4, t->op);
    const int64_t d1 = ir::normalize_dim(ir::int_arg(*t, 2), 4, t->op);
    if (std::min(d0, d1) != 2 || std::max(d0, d1) != 3) return;
    m_.key = arg(*t, 0);
    m_.peels.insert(index_of(*t));
    std::set<size_t> peels;
    int64_t copied = 0;
    const std::optional<ValueRef> k = ungroup(*m_.key, peels, copied);
    const std::optional<ValueRef> v = ungroup(m_.value, peels, copied);
    if (!k || !v || type(*k).sizes[1] != type(*v).sizes[1]) return;
    m_.key = *k;
    m_.value = *v;
    m_.peels.insert(peels.begin(), peels.end());
    m_.copied_bytes += copied;
  }

  // x = reshape(copy(expand(unsqueeze(kv, 2), [B, Hkv, rep, L, E])), [B, Hkv * rep, L, E]):
  // kv; nullopt for anything else.
  std::optional<ValueRef> ungroup(ValueRef x, std::set<size_t>& peels, int64_t& copied) const {
    const auto& xs = type(x).sizes;
    const Node* reshape = producer_of(x, {"reshape", "view"});
    if (reshape == nullptr) return std::nullopt;
    ValueRef y = arg(*reshape, 0);
    const auto& ys = type(y).sizes;
    if (ys.size() != 5 || ys[0] != xs[0] || ys[1] * ys[2] != xs[1] || ys[3] != xs[2] ||
        ys[4] != xs[3]) {
      return std::nullopt;
    }
    std::set<size_t> found{index_of(*reshape)};
    int64_t bytes = 0;
    if (const Node* c = producer_of(y, {"clone"})) {
      found.insert(index_of(*c));
      bytes = type(y).numel() * static_cast<int64_t>(dtype_size(type(y).dtype));
      y = arg(*c, 0);
    }
    const Node* expand = producer_of(y, {"expand"});
    if (expand == nullptr) return std::nullopt;
    const ValueRef u = arg(*expand, 0);
    const Node* unsqueeze = producer_of(u, {"unsqueeze"});
    if (unsqueeze == nullptr || ir::normalize_dim(ir::int_arg(*unsqueeze, 1), 5, "unsqueeze") != 2)
      return std::nullopt;
    const ValueRef kv = arg(*unsqueeze, 0);
    const auto& ks = type(kv).sizes;
    if (ks != std::vector<int64_t>{ys[0], ys[1], ys[3], ys[4]}) return std::nullopt;
    found.insert(index_of(*expand));
    found.insert(index_of(*unsqueeze));
    peels.insert(found.begin(), found.end());
    copied += bytes;
    return kv;
  }

  // Steps that change no value's meaning here: copies, and conversions (checked by dtype).
  ValueRef through_copies(ValueRef v) {
    while (const Node* n = take(v, {"clone", "_to_copy", "convert_element_type"})) {
      v = arg(*n, 0);
    }
    return v;
  }

  bool match_softmax(ValueRef p, int64_t B, int64_t H) {
    const DType dtype = type(m_.value).dtype;
    if (dtype != DType::Float32 && dtype != DType::BFloat16) return false;
    const ValueRef probs = through_copies(p);
    const DType softmax_dtype = type(probs).dtype;
    if (softmax_dtype != dtype && softmax_dtype != DType::Float32) return false;
    const Node* div = take(probs, {"div"});
    if (div == nullptr || !ir::is_tensor_arg(*div, 1) || ir::string_arg(*div, 2)) return false;
    const Node* exp = take(arg(*div, 0), {"exp"});
    const Node* sum = take(arg(*div, 1), {"sum"});
    if (exp == nullptr || sum == nullptr || !(arg(*sum, 0) == arg(*div, 0))) return false;
    const Node* sub = take(arg(*exp, 0), {"sub"});
    if (sub == nullptr || !ir::is_tensor_arg(*sub, 1) || ir::scalar_arg(*sub, 2).as_double() != 1.0)
      return false;
    const ValueRef logits = arg(*sub, 0);
    const Node* amax = take(arg(*sub, 1), {"amax"});
    if (amax == nullptr || !(arg(*amax, 0) == logits)) return false;
    const auto& ls = type(logits).sizes;
    if (ls.size() != 4 || ls[0] != B || ls[1] != H) return false;
    if (!last_dim_only(*amax, 4) || !last_dim_only(*sum, 4)) return false;
    if (type(arg(*sum, 0)).dtype != type(sum->output).dtype) return false;
    const ValueRef x = through_copies(logits);
    if (type(x).sizes != ls) return false;
    return match_logits(x, ls, dtype);
  }

  // X = Y + mask or Y, Y = S * c, S / c or S.
  bool match_logits(ValueRef x, const std::vector<int64_t>& sizes, DType dtype) {
    if (const int p = g_.value(x).producer; p >= 0) {
      const Node& add = g_.nodes()[static_cast<size_t>(p)];
      if (add.op == "add" && ir::is_tensor_arg(add, 1) &&
          ir::scalar_arg(add, 2).as_double() == 1.0) {
        for (int side = 0; side < 2; ++side) {
          const ValueRef y = arg(add, static_cast<size_t>(side));
          const ValueRef mask = arg(add, static_cast<size_t>(1 - side));
          if (type(y).sizes != sizes || !mask_fits(mask, sizes, dtype)) continue;
          Match saved = m_;
          m_.chain.insert(static_cast<size_t>(p));
          if (match_scaled(y, sizes)) {
            m_.mask = mask;
            return true;
          }
          m_ = saved;
        }
      }
    }
    return match_scaled(x, sizes);
  }

  bool mask_fits(ValueRef mask, const std::vector<int64_t>& sizes, DType dtype) const {
    const ir::TensorType& t = type(mask);
    if (t.dtype != dtype && !(dtype == DType::BFloat16 && t.dtype == DType::Float32)) return false;
    if (t.sizes.size() > 4) return false;
    const size_t shift = 4 - t.sizes.size();
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      if (t.sizes[d] != 1 && t.sizes[d] != sizes[d + shift]) return false;
    }
    return true;
  }

  bool match_scaled(ValueRef y, const std::vector<int64_t>& sizes) {
    ValueRef s = through_copies(y);
    if (const int p = g_.value(s).producer; p >= 0) {
      const Node& n = g_.nodes()[static_cast<size_t>(p)];
      const bool by_scalar = (n.op == "mul" || n.op == "div") && !ir::is_tensor_arg(n, 1) &&
                             (n.op == "mul" || !ir::string_arg(n, 2));
      if (by_scalar) {
        const double c = ir::scalar_arg(n, 1).as_double();
        if (n.op == "div" && c == 0.0) return false;
        m_.scale = n.op == "mul" ? c : 1.0 / c;
        m_.chain.insert(static_cast<size_t>(p));
        s = through_copies(arg(n, 0));
      }
    }
    const Node* reshape = take(s, {"reshape", "view"});
    if (reshape == nullptr) return false;
    const Node* bmm1 = take(arg(*reshape, 0), {"bmm"});
    if (bmm1 == nullptr) return false;
    const int64_t B = sizes[0], H = sizes[1];
    const std::optional<ValueRef> q = unbatch(arg(*bmm1, 0), B, H, true);
    const std::optional<ValueRef> kt = unbatch(arg(*bmm1, 1), B, H, true);
    if (!q || !kt) return false;
    m_.query = *q;
    m_.key_t = *kt;
    return type(*q).dtype == type(m_.value).dtype && type(y).dtype == type(m_.value).dtype;
  }

  const Graph& g_;
  Match m_;
};

// Whether only the chain reads the chain's values (the root's excepted), and none of them is
// an output; then which peels nothing else reads either.
bool isolate(const Graph& g, const Uses& uses, Match& m) {
  for (size_t k : m.chain) {
    if (k == m.root) continue;
    const ValueRef out = g.nodes()[k].output;
    if (uses.is_output[static_cast<size_t>(out.index)]) return false;
    for (size_t c : uses.consumers[static_cast<size_t>(out.index)]) {
      if (!m.chain.count(c)) return false;
    }
  }
  std::set<size_t> gone;
  for (auto it = m.peels.rbegin(); it != m.peels.rend(); ++it) {
    const ValueRef out = g.nodes()[*it].output;
    bool unread = !uses.is_output[static_cast<size_t>(out.index)];
    for (size_t c : uses.consumers[static_cast<size_t>(out.index)]) {
      unread = unread && (m.chain.count(c) || gone.count(c));
    }
    if (unread) gone.insert(*it);
  }
  m.peels = std::move(gone);
  return true;
}

std::string megabytes(int64_t bytes) {
  std::ostringstream s;
  s.precision(2);
  s << std::fixed << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return s.str();
}

}  // namespace

ir::Graph fuse_written_attention(const ir::Graph& graph, const GraphPassOptions& options,
                                 std::vector<std::string>& log) {
  if (!options.attention_blocks) return graph;
  const Uses uses = uses_of(graph);
  std::vector<Match> chosen;
  std::set<size_t> taken;
  Matcher matcher(graph);
  for (size_t k = 0; k < graph.nodes().size(); ++k) {
    std::optional<Match> m = matcher.match(k);
    if (!m || !isolate(graph, uses, *m)) continue;
    const auto& qs = graph.value(m->query).type.sizes;
    const auto& kts = graph.value(m->key_t).type.sizes;
    const auto& vs = graph.value(m->value).type.sizes;
    const int64_t B = qs[0], H = qs[1], Lq = qs[2], E = qs[3], Lk = kts[3], Ev = vs[3];
    const DType dtype = graph.value(m->value).type.dtype;
    const std::string where = "written-out attention " + graph.value(graph.nodes()[k].output).name +
                              " " + ir::format_sizes({B, H, Lq, Lk});
    if (E != Ev || B * H * Lq * Lk == 0) {
      log.push_back(where + " stays written out: " +
                    (E != Ev ? "the value's head size differs from the query's" : "it is empty"));
      continue;
    }
    const std::optional<AttentionBlocking> blocks = options.attention_blocks(Lq, Lk, E, Ev, dtype);
    if (!blocks) continue;
    const int64_t element = static_cast<int64_t>(dtype_size(dtype));
    const int64_t rows = std::max<int64_t>(1, std::min(blocks->query_rows, Lq));
    const int64_t keys = std::max<int64_t>(1, std::min(blocks->keys, Lk));
    const int64_t items = B * H * ((Lq + rows - 1) / rows) * ((Lk + keys - 1) / keys);
    const int64_t blocked = items * (kBlockFixedBytes + (rows * E + keys * (E + Ev)) * element);
    const int64_t written = 4 * B * H * Lq * Lk * 4 + 2 * m->copied_bytes;
    const std::string costs = "blocked moves " + megabytes(blocked) + " (" + std::to_string(items) +
                              " blocks), written out " + megabytes(written);
    if (blocked >= written) {
      log.push_back(where + " stays written out: " + costs);
      continue;
    }
    log.push_back(where + " becomes softmax_attention: " + costs);
    taken.insert(m->chain.begin(), m->chain.end());
    taken.insert(m->peels.begin(), m->peels.end());
    chosen.push_back(std::move(*m));
  }
  if (chosen.empty()) return graph;

  GraphRebuild rebuild(graph);
  auto next_match = chosen.begin();
  for (size_t k = 0; k < graph.nodes().size(); ++k) {
    if (next_match != chosen.end() && k == next_match->root) {
      const Match& m = *next_match++;
      const std::string name = graph.value(graph.nodes()[k].output).name;
      const ValueRef key =
          m.key ? rebuild[*m.key]
                : rebuild.add("transpose", {rebuild[m.key_t], int64_t{-2}, int64_t{-1}}, {},
                              rebuild.fresh_name(name + "_key"));
      std::vector<std::pair<std::string, ir::Arg>> kwargs{{"scale", ir::Scalar(m.scale)}};
      if (m.mask) {
        ValueRef mask = rebuild[*m.mask];
        // The attention takes a mask of rank 2 or 4.
        for (size_t rank = graph.value(*m.mask).type.sizes.size(); rank != 2 && rank < 4; ++rank) {
          mask =
              rebuild.add("unsqueeze", {mask, int64_t{0}}, {}, rebuild.fresh_name(name + "_mask"));
        }
        kwargs.emplace_back("attn_mask", mask);
      }
      rebuild.map(graph.nodes()[k].output,
                  rebuild.add("softmax_attention", {rebuild[m.query], key, rebuild[m.value]},
                              std::move(kwargs), name));
      continue;
    }
    if (taken.count(k)) continue;
    k = rebuild.copy_node(k);
  }
  return rebuild.finish();
}

}  // namespace stax::graph_passes
