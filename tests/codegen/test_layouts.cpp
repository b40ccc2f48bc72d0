// Non-contiguous inputs, compiled vs the eager oracle: transposed and permuted layouts,
// expanded inputs (stride 0), overlapping windows, padded rows, arbitrary strides of size-1 dims,
// and inputs that start at a storage offset (a view into a larger tensor).
#include <gtest/gtest.h>

#include "codegen_test_util.h"

namespace stax::codegen_test {
namespace {

class Layouts : public CodegenTest {};

TEST_P(Layouts, TransposedExpandedPaddedInputs) {
  const char* text = R"(
def layouts(x: f32[7, 33], w: f32[33, 7] strides=[1, 33], e: f32[7, 33] strides=[0, 1], c: f32[7, 33] strides=[1, 0], p: f32[7, 33] strides=[40, 1], o: f32[1, 33], q: f32[4, 5, 6] strides=[1, 24, 4], win: f32[7, 33] strides=[1, 1]):
    wt = transpose(w, 0, 1)
    a = add(x, wt)
    sw0 = sum(w, dim=[0])
    sw1 = sum(w, dim=[1], keepdim=True)
    me = mul(e, x)
    se = sum(e, dim=[-1])
    mxe = amax(e, dim=[0])
    ce = sub(c, e)
    sc = sum(c, dim=[-1])
    pe = exp(p)
    sp = amin(p, dim=[-1])
    ox = add(o, x)
    so = sum(o, dim=[-1])
    qn = neg(q)
    sq = sum(q, dim=[1])
    mq = amax(q, dim=[2], keepdim=True)
    qq = permute(q, [2, 0, 1])
    cq = contiguous(qq)
    mo = amax(o, dim=[0])
    wa = add(win, x)
    ws = sum(win, dim=[-1])
    wm = amin(win, dim=[0])
    return a, sw0, sw1, me, se, mxe, ce, sc, pe, sp, ox, so, qn, sq, mq, cq, mo, wa, ws, wm
)";
  const std::vector<Tensor> inputs = {
      random_f32({7, 33}, 1), random_f32_strided({33, 7}, {1, 33}, 2),
      random_f32_strided({7, 33}, {0, 1}, 3),   // every row is the same storage
      random_f32_strided({7, 33}, {1, 0}, 4),   // every column is the same storage
      random_f32_strided({7, 33}, {40, 1}, 5),  // rows padded to 40 elements
      // The stride of a size-1 dim is never stepped along: any value is accepted.
      random_f32_strided({1, 33}, {1000, 1}, 6),
      random_f32_strided({4, 5, 6}, {1, 24, 4}, 7),  // a permuted [5, 6, 4] tensor
      random_f32_strided({7, 33}, {1, 1}, 8),        // overlapping windows: x[i][j] = s[i + j]
  };
  check(make_case("layouts", text, inputs));
}

TEST_P(Layouts, InputsAtStorageOffsets) {
  const char* text = R"(
def offsets(x: f32[5, 33], w: f32[33, 5] strides=[1, 40], v: f32[1000]):
    wt = transpose(w, 0, 1)
    a = add(x, wt)
    s = sum(x, dim=[-1])
    m = amax(w, dim=[0])
    e = exp(v)
    t = sum(v)
    return a, s, m, e, t
)";
  // Each input is a view starting inside a larger storage filled with other values.
  Tensor big = random_f32({1200}, 10);
  const Tensor x = big.as_strided({5, 33}, {33, 1}, 3);
  Tensor big2 = random_f32({1400}, 11);
  const Tensor w = big2.as_strided({33, 5}, {1, 40}, 17);
  Tensor big3 = random_f32({1100}, 12);
  const Tensor v = big3.as_strided({1000}, {1}, 99);
  ASSERT_NE(x.offset(), 0);
  check(make_case("offsets", text, {x, w, v}));
}

// Transposed reads larger than one cache tile (64) in both dims, with partial tiles and
// vector tails; a 3-D permute; reductions along and across the transposed layout.
TEST_P(Layouts, TransposedReadsAcrossTiles) {
  const char* text = R"(
def transposes(x: f32[70, 130], w: f32[130, 70], v: f32[3, 67, 65]):
    wt = transpose(w, 0, 1)
    a = add(x, wt)
    e = exp(wt)
    c = contiguous(wt)
    vp = permute(v, [0, 2, 1])
    b = mul(vp, 2.0)
    s = sum(wt, dim=[0])
    s1 = amax(wt, dim=[1])
    return a, e, c, b, s, s1
)";
  check(make_case(
      "transposes", text,
      {random_f32({70, 130}, 20), random_f32({130, 70}, 21), random_f32({3, 67, 65}, 22)}));
}

// Attention's heads merged back into a hidden dimension, as a matrix product's operand would
// read them: [batch, heads, tokens, dim] permuted to [batch, tokens, heads, dim] and flattened,
// so each output row walks its heads through // dim and % dim (split_inner_loops.h splits the
// loop). Dims of 64, 16 (one AVX-512 float vector) and 24 (a tail at every level), bf16 too.
TEST_P(Layouts, HeadsMergedIntoAFlattenedDimension) {
  const char* text = R"(
def heads(q: f32[2, 3, 5, 64], k: f32[2, 3, 7, 16], v: f32[3, 2, 5, 24], h: bf16[2, 4, 3, 32]):
    qp = permute(q, [0, 2, 1, 3])
    qv = reshape(qp, [10, 192])
    qe = exp(qv)
    kp = permute(k, [0, 2, 1, 3])
    kv = reshape(kp, [14, 48])
    kn = neg(kv)
    vp = permute(v, [1, 2, 0, 3])
    vv = reshape(vp, [10, 72])
    vm = mul(vv, 2.0)
    hp = permute(h, [0, 2, 1, 3])
    hv = reshape(hp, [6, 128])
    ha = add(hv, 1.0)
    return qe, kn, vm, ha
)";
  check(make_case(
      "heads", text,
      {random_f32({2, 3, 5, 64}, 30), random_f32({2, 3, 7, 16}, 31), random_f32({3, 2, 5, 24}, 32),
       eager::random_tensor(DType::BFloat16, {2, 4, 3, 32}, 33)}));
}

INSTANTIATE_TEST_SUITE_P(Levels, Layouts, all_params(), param_name);

}  // namespace
}  // namespace stax::codegen_test
