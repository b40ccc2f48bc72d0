// MatmulPlan on oneDNN 2.6's matmul primitive (matmul.h).
//
// What eager computes (torch 2.13.0 on this CPU, probed with inputs whose products and sums
// are exact, so that only the epilogue's rounding differs) and which oneDNN form gives it:
// - float32: c = fma(beta, bias, float(alpha * acc)) -- BLAS's c = alpha*AB + beta*C with C
//   holding the bias. oneDNN's output scale alpha and sum post-op of scale beta over a c that
//   already holds the bias compute exactly that: the same bits on every element. The
//   library's bias argument is added *before* the output scale (alpha * (acc + bias)), so it
//   is used only when alpha == beta == 1, where both forms are round(acc + bias).
// - bfloat16: the products accumulate in float32, the epilogue is float32's, and its result
//   is rounded to bfloat16: c = bf16(fma(beta, bias, float(alpha * acc))) (on 512x512
//   exact-product inputs every element; alpha*acc + beta*bias rounded once differs on 0.1%,
//   separate roundings of both terms on 0.2%). oneDNN's bf16 kernels accumulate in float32
//   and round after the epilogue: the same forms give the same bits where the float32
//   accumulation does (tests/external: bit for bit on exact inputs, within one bfloat16
//   rounding plus the float32 accumulation error otherwise).
// - beta == 0 ignores the bias (NaN included); K == 0 gives beta * bias (host_loops.h);
//   alpha == 0 skips the product only where MatmulSpec::alpha_zero_skips_product says so;
//   where it does not, the product goes to the library without the zero scale and Stax's
//   epilogue scales it (matmul_through_float32.h says why).
// - bfloat16 where oneDNN has no bfloat16 matmul on this CPU: through a float32 plan of the
//   same layouts (arithmetic.h, matmul_through_float32.h).
// - post-ops (float32 only) follow, as oneDNN post-ops after the output scale, bias and sum
//   (post_ops.cpp: which kinds, and how each keeps eager's bits).
// oneDNN's bias argument needs a bias broadcast over the rows (its optimized kernels take a
// row only; a full or column bias falls to its reference kernel), so any other bias is first
// copied into c -- as eager's addmm copies it into its output before calling BLAS.
//
// How close on random inputs (bench/gemm/plan_vs_eager.py, 2 threads): bfloat16 addmm,
// bmm and baddbmm 99.99-100% bit-equal; float32 bmm and baddbmm 100% (eager's batched
// products are oneDNN's too), float32 addmm 7-9% (eager's is another library's sgemm,
// summing in another order) with the same accuracy: max error 1.8-3.8 against eager's
// 1.1-3.1, in units of 2^-24 * sum |a||b| against a float64 reference.
//
// Threads: oneDNN fixes a primitive's thread count when it is created (from
// omp_get_max_threads(); measured: a primitive built for 1 thread runs on 1 OS thread with
// omp max-threads 2, one built for 2 runs on 1 with max-threads 1, its work split for 2), so
// the plan keeps one primitive per thread count asked for.
// Scratchpads are the plan's ("user" mode), taken from a pool per call so that concurrent
// run() calls of one plan never share one and steady-state calls allocate nothing. Measured
// (2 threads x 200 concurrent run()s of 128x768x768 float32 on 1 thread each, on the shared
// 2-core machine): 477 ms with the pool, 478 ms with one mutex around run() -- no difference
// measurable there, and the pool never serializes callers. run() costs about 1 us more than
// a bare primitive execute (memory objects, pool, OpenMP setting): 2.8 against 1.7 us at
// 16x64x64, within noise at 128x768x768.
#include "external/matmul.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "external/dnnl_common.h"
#include "external/host_loops.h"
#include "external/matmul_blas.h"
#include "external/matmul_through_float32.h"
#include "external/matmul_weights_form.h"
#include "external/post_ops.h"
#include "external/spec_check.h"

namespace stax::external {

namespace {

using dnnl::memory;

using detail::Buffer;
using detail::cpu_engine;
using detail::library_dtype;
using detail::OmpThreads;
using detail::thread_stream;

// How a plan computes its spec.
enum class Form {
  NoOutput,        // c has no elements: nothing to do
  NoProduct,       // K == 0 (or alpha == 0 where eager skips): c = beta * bias or zeros
  Plain,           // library: c = alpha * (a @ b), no bias or beta == 0
  BiasInLibrary,   // library: c = a @ b + bias (a row bias; alpha == beta == 1)
  BiasThenSum,     // c = bias (host loop), then library: c = alpha * (a @ b) + beta * c
  ThroughFloat32,  // a float32 plan of the same layouts (matmul_through_float32.h)
};

std::string form_note(Form form, const MatmulSpec& spec) {
  std::string note = spec.alpha != 1.0 ? ", alpha as the output scale" : "";
  switch (form) {
    case Form::NoOutput:
      return "no library call: the output is empty";
    case Form::NoProduct:
      return spec.a.sizes[2] == 0
                 ? "no library call: K == 0, c = beta * bias or zeros"
                 : "no library call: alpha == 0 skips the product as eager's addmm does";
    case Form::Plain:
      return note;
    case Form::BiasInLibrary:
      return note + ", the bias row added by the library";
    case Form::BiasThenSum:
      return note + ", the bias copied into c, then beta * c added by the library's sum post-op";
    case Form::ThroughFloat32:
      return "";  // the float32 plan's note (create())
  }
  return note;
}

// oneDNN batches when c has several matrices and a or b differs between them. When a and b
// are both the same matrix for every batch (both broadcast), oneDNN cannot express c's
// batch (its output's batch comes from its inputs'): the plan calls a 2-D primitive once per
// batch, moving only c and the bias.
bool per_batch_calls(const MatmulSpec& spec) {
  return spec.c.sizes[0] > 1 && detail::broadcasts(spec.a, 0, spec.c.sizes[0]) &&
         detail::broadcasts(spec.b, 0, spec.c.sizes[0]);
}
bool library_batched(const MatmulSpec& spec) {
  return spec.c.sizes[0] != 1 && !per_batch_calls(spec);
}

// oneDNN memory descriptor of one operand, in place (its strides, no copy). A batch of 1
// everywhere gives 2-D descriptors (the kernels the benchmark measured). Dimensions that
// broadcast over c's become size 1 (oneDNN broadcasts those); `collapse_matrix_dims` allows
// it for rows and columns too (the bias). A size-1 dimension gets the stride of a dense
// layout, which oneDNN's checks for plain formats expect. Without library batching
// (library_batched) the descriptors are 2-D, the batch dimension dropped.
memory::desc operand_desc(const MatrixLayout& l, memory::data_type dt, const MatmulSpec& spec,
                          bool collapse_matrix_dims) {
  std::array<int64_t, 3> sizes = l.sizes, strides = l.strides;
  for (int d = 0; d < 3; ++d) {
    if ((d == 0 || collapse_matrix_dims) && detail::broadcasts(l, d, spec.c.sizes[d])) sizes[d] = 1;
  }
  if (sizes[2] == 1) strides[2] = 1;
  if (sizes[1] == 1) strides[1] = strides[2] == 1 ? sizes[2] : 1;
  if (sizes[0] == 1)
    strides[0] = std::max({sizes[1] * strides[1], sizes[2] * strides[2], int64_t{1}});
  if (!library_batched(spec)) {
    return memory::desc({sizes[1], sizes[2]}, dt, {strides[1], strides[2]});
  }
  return memory::desc({sizes[0], sizes[1], sizes[2]}, dt, {strides[0], strides[1], strides[2]});
}

bool bias_is_row(const MatmulSpec& spec) {
  return spec.bias && (spec.bias->sizes[1] == 1 || spec.bias->strides[1] == 0);
}

// The primitive descriptor of a library form; `binary_arguments` (if not null) gets the
// operands of the spec's binary post-ops (post_ops.h).
// With `packed_weights`, B's format is the library's choice (format_tag::any): run() reorders
// B into it (matmul_weights_form.h).
dnnl::matmul::primitive_desc make_primitive_desc(
    const MatmulSpec& spec, Form form,
    std::vector<detail::BinaryArgument>* binary_arguments = nullptr, bool packed_weights = false) {
  const memory::data_type dt = *library_dtype(spec.dtype);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (spec.alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(spec.alpha)});
  dnnl::post_ops post_ops;
  if (form == Form::BiasThenSum) post_ops.append_sum(static_cast<float>(spec.beta));
  auto arguments = detail::append_post_ops(spec, library_batched(spec), post_ops);
  if (binary_arguments != nullptr) *binary_arguments = std::move(arguments);
  if (post_ops.len() > 0) attr.set_post_ops(post_ops);
  const memory::desc a = operand_desc(spec.a, dt, spec, false);
  memory::desc b = operand_desc(spec.b, dt, spec, false);
  if (packed_weights) b = memory::desc(b.dims(), dt, memory::format_tag::any);
  const memory::desc c = operand_desc(spec.c, dt, spec, false);
  if (form == Form::BiasInLibrary) {
    const memory::desc bias = operand_desc(*spec.bias, dt, spec, true);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, c), attr, cpu_engine());
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, cpu_engine());
}

bool is_reference(const dnnl::matmul::primitive_desc& pd) {
  return detail::is_reference(pd.impl_info_str());
}

// Whether oneDNN multiplies this dtype at all on this CPU: a 2x2 product, asked once.
std::string dtype_refusal(DType dtype) {
  static detail::ProbeAnswers<DType> answers;
  return answers.get(dtype, [dtype]() -> std::string {
    if (!library_dtype(dtype)) {
      return std::string("oneDNN has no ") + std::string(dtype_name(dtype)) +
             " matmul (a Stax loop nest computes it)";
    }
    MatmulSpec probe;
    probe.dtype = dtype;
    probe.a = probe.b = probe.c = MatrixLayout::contiguous(1, 2, 2);
    try {
      make_primitive_desc(probe, Form::Plain);
    } catch (const dnnl::error& e) {
      return "oneDNN " + std::to_string(dnnl::version()->major) + "." +
             std::to_string(dnnl::version()->minor) + " has no " + std::string(dtype_name(dtype)) +
             " matmul on this CPU (" + e.what() + ")";
    }
    return "";
  });
}

// The form a spec gets, its primitive descriptor (library forms) for the current OpenMP
// thread count, or why there is no plan.
struct Analysis {
  Form form = Form::NoOutput;
  std::optional<dnnl::matmul::primitive_desc> pd;
  std::string refusal;  // empty when there is a plan
  // ThroughFloat32: the float32 plan's spec, whether it is the product alone (alpha == 0), and
  // why (for implementation()).
  std::optional<MatmulSpec> spec32;
  bool product_only = false;
  std::string through_float32;
};

// Whether oneDNN multiplies `dtype` on this CPU, natively or only through float32.
std::optional<Arithmetic> dtype_arithmetic(DType dtype, std::string* why) {
  return arithmetic_for(dtype, dtype_refusal, why);
}

Analysis analyze(const MatmulSpec& spec) {
  Analysis result;
  std::string error = detail::spec_error(spec);
  if (error.empty()) error = detail::post_ops_error(spec);
  if (!error.empty()) {
    result.refusal = "malformed matmul " + spec.describe() + ": " + error;
    return result;
  }
  // Before any question to oneDNN, which may divide by zero on these sizes.
  if (std::string refusal = detail::library_size_refusal(spec); !refusal.empty()) {
    result.refusal = refusal;
    return result;
  }
  if (std::string refusal = detail::post_ops_refusal(spec); !refusal.empty()) {
    result.refusal = refusal;
    return result;
  }
  std::string native_refusal;
  const std::optional<Arithmetic> arithmetic = dtype_arithmetic(spec.dtype, &native_refusal);
  if (!arithmetic) {
    result.refusal = native_refusal;
    return result;
  }
  const int64_t k = spec.a.sizes[2];
  if (spec.c.sizes[0] == 0 || spec.c.sizes[1] == 0 || spec.c.sizes[2] == 0) return result;
  if (k == 0 || (spec.alpha == 0.0 && spec.alpha_zero_skips_product)) {
    result.form = Form::NoProduct;
    if (!spec.post_ops.empty()) {
      result.refusal =
          "post-ops on a matmul without a product (K == 0 or alpha == 0): there is no "
          "library call to apply them in";
      return result;
    }
    if (spec.dtype != DType::Float32 && spec.dtype != DType::BFloat16) {
      result.refusal =
          "Stax's host loop for a matmul without a product handles float32 and "
          "bfloat16 only";
    }
    return result;
  }
  result.product_only = spec.alpha == 0.0;  // and eager computes the product (above)
  if (result.product_only && !spec.post_ops.empty()) {
    result.refusal =
        "post-ops on a matmul of alpha == 0: Stax scales the product after the library call, "
        "too late for them";
    return result;
  }
  if (result.product_only || arithmetic == Arithmetic::ThroughFloat32) {
    result.spec32 = detail::float32_spec(spec, result.product_only);
    Analysis analysis32 = analyze(*result.spec32);
    if (!analysis32.refusal.empty()) {
      result.refusal = "through a float32 plan of the same layouts: " + analysis32.refusal;
      return result;
    }
    result.form = Form::ThroughFloat32;
    result.through_float32 =
        arithmetic == Arithmetic::ThroughFloat32
            ? "bf16 through float32 (" + native_refusal +
                  "): a, b and the bias converted to float32 exactly, the result rounded to bf16 "
                  "once"
            : "";
    if (result.product_only) {
      result.through_float32 +=
          std::string(result.through_float32.empty() ? "" : "; ") +
          "alpha == 0 where eager computes the product: the library computes a @ b without the "
          "zero scale (a GEMM-based kernel would skip it), Stax's epilogue gives "
          "fma(beta, bias, 0 * (a @ b))";
    }
    return result;
  }
  const bool with_bias = spec.bias && spec.beta != 0.0;
  result.form = Form::Plain;
  if (with_bias) {
    result.form = Form::BiasThenSum;
    if (spec.alpha == 1.0 && spec.beta == 1.0 && bias_is_row(spec)) {
      try {
        auto pd = make_primitive_desc(spec, Form::BiasInLibrary);
        if (!is_reference(pd)) {
          result.form = Form::BiasInLibrary;
          result.pd = std::move(pd);
          return result;
        }
      } catch (const dnnl::error&) {
        // not this bias layout: the copy-then-sum form below
      }
    }
  }
  try {
    result.pd = make_primitive_desc(spec, result.form);
  } catch (const dnnl::error& e) {
    result.refusal = std::string("oneDNN refuses this layout") +
                     (spec.post_ops.empty() ? "" : " or these post-ops") + " (" + e.what() + ")";
    return result;
  }
  if (is_reference(*result.pd) && !spec.post_ops.empty()) {
    // Whether the post-ops are what sends it to the reference kernel.
    MatmulSpec without = spec;
    without.post_ops.clear();
    if (!is_reference(make_primitive_desc(without, result.form))) {
      result.refusal =
          "oneDNN has only its reference (unoptimized) kernel for these post-ops with this "
          "layout (a binary operand broadcast, or a binary operand with a strided output, that "
          "its fast kernels lack)";
      result.pd.reset();
      return result;
    }
  }
  if (is_reference(*result.pd)) {
    result.refusal =
        "oneDNN has only its reference (unoptimized) kernel for this dtype and layout on "
        "this CPU (its fast kernels need a unit stride among the last two of a and of b, "
        "and c's columns contiguous)";
    result.pd.reset();
  }
  return result;
}

// One oneDNN primitive for one thread count, with its pool of scratchpads; with packed
// weights, the reorder of B from its given layout into the primitive's and the pool of the
// packed copies.
struct Primitive {
  dnnl::matmul::primitive_desc pd;
  std::vector<detail::BinaryArgument> binary_arguments;
  dnnl::matmul matmul;
  size_t scratchpad_bytes = 0;
  detail::BufferPool pool;
  std::optional<memory::desc> given_weights;
  std::optional<dnnl::reorder> pack;
  detail::BufferPool packed_pool;

  Primitive(dnnl::matmul::primitive_desc desc, std::vector<detail::BinaryArgument> binaries,
            std::optional<memory::desc> given)
      : pd(std::move(desc)),
        binary_arguments(std::move(binaries)),
        matmul(pd),
        scratchpad_bytes(pd.scratchpad_desc().get_size()),
        pool(scratchpad_bytes),
        given_weights(std::move(given)),
        packed_pool(given_weights ? pd.weights_desc().get_size() : 0) {
    if (given_weights) {
      pack.emplace(dnnl::reorder::primitive_desc(cpu_engine(), *given_weights, cpu_engine(),
                                                 pd.weights_desc()));
    }
  }
};

std::string library_name() {
  return detail::library_version() + " matmul";
}

// Runs one library form of `spec` (the spec the library computes: the plan's own, or its
// transpose) with primitive `p`: the bias copy of BiasThenSum, the per-batch calls, the
// post-op operands. The caller has set the thread count.
void execute(const MatmulSpec& spec, Form form, Primitive& p, const void* a, const void* b,
             const void* bias, void* c, std::span<const void* const> post_operands, int threads) {
  if (form == Form::BiasThenSum) detail::copy_bias(spec, bias, c, threads);
  dnnl::stream& stream = thread_stream();
  // oneDNN takes non-const handles; it writes only DST, the scratchpad and the packed B.
  Buffer packed;
  if (p.pack) packed = p.packed_pool.take();
  memory weights(p.pd.weights_desc(), cpu_engine(), p.pack ? packed.get() : const_cast<void*>(b));
  if (p.pack) {
    memory given(*p.given_weights, cpu_engine(), const_cast<void*>(b));
    p.pack->execute(stream, given, weights);
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(p.pd.src_desc(), cpu_engine(), const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_DST, memory(p.pd.dst_desc(), cpu_engine(), c)}};
  if (form == Form::BiasInLibrary) {
    args.emplace(DNNL_ARG_BIAS, memory(p.pd.bias_desc(), cpu_engine(), const_cast<void*>(bias)));
  }
  auto binary_slot = [&](size_t i) {
    return DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.binary_arguments[i].library_index) | DNNL_ARG_SRC_1;
  };
  // The operand of each binary post-op: one of post_operands, or a constant of the plan.
  auto operand_data = [&](const detail::BinaryArgument& argument, int64_t batch) -> void* {
    if (argument.operand < 0) return const_cast<float*>(&argument.constant);
    return const_cast<char*>(static_cast<const char*>(post_operands[argument.operand])) +
           batch * argument.batch_stride_bytes;
  };
  for (size_t i = 0; i < p.binary_arguments.size(); ++i) {
    args.emplace(binary_slot(i), memory(p.binary_arguments[i].desc, cpu_engine(),
                                        operand_data(p.binary_arguments[i], 0)));
  }
  Buffer scratchpad;
  if (p.scratchpad_bytes > 0) {
    scratchpad = p.pool.take();
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(p.pd.scratchpad_desc(), cpu_engine(), scratchpad.get()));
  }
  const int64_t batches = per_batch_calls(spec) ? spec.c.sizes[0] : 1;
  const int64_t element = static_cast<int64_t>(dtype_size(spec.dtype));
  for (int64_t batch = 0; batch < batches; ++batch) {
    if (batch > 0) {
      args.at(DNNL_ARG_DST)
          .set_data_handle(static_cast<char*>(c) + batch * spec.c.strides[0] * element);
      if (form == Form::BiasInLibrary && !detail::broadcasts(*spec.bias, 0, batches)) {
        args.at(DNNL_ARG_BIAS)
            .set_data_handle(const_cast<char*>(static_cast<const char*>(bias)) +
                             batch * spec.bias->strides[0] * element);
      }
      for (size_t i = 0; i < p.binary_arguments.size(); ++i) {
        args.at(binary_slot(i)).set_data_handle(operand_data(p.binary_arguments[i], batch));
      }
    }
    p.matmul.execute(stream, args);
  }
  stream.wait();
}

std::unique_ptr<Primitive> make_primitive(const MatmulSpec& spec, Form form, bool packed_weights) {
  std::vector<detail::BinaryArgument> binaries;
  auto pd = make_primitive_desc(spec, form, &binaries, packed_weights);
  std::optional<memory::desc> given;
  if (packed_weights) given = operand_desc(spec.b, *library_dtype(spec.dtype), spec, false);
  return std::make_unique<Primitive>(std::move(pd), std::move(binaries), std::move(given));
}

// A 64-byte aligned memory of `elements` ones (float32 or bfloat16; zeros for other dtypes):
// the operands measure_weights_forms times on, written so that the library reads real pages
// rather than the kernel's shared zero page.
struct ScratchOperand {
  std::unique_ptr<void, decltype(&std::free)> memory{nullptr, &std::free};
  ScratchOperand(int64_t elements, DType dtype) {
    const size_t element = dtype_size(dtype);
    const size_t bytes =
        (static_cast<size_t>(std::max<int64_t>(elements, 1)) * element + 63) / 64 * 64;
    memory.reset(std::aligned_alloc(64, bytes));
    if (!memory) throw std::bad_alloc();
    auto* out = static_cast<unsigned char*>(memory.get());
    std::memset(out, 0, bytes);
    const float one = 1.0f;
    const uint16_t bf16_one = detail::float_to_bf16(1.0f);
    if (dtype == DType::Float32 || dtype == DType::BFloat16) {
      for (size_t i = 0; i + element <= bytes; i += element) {
        std::memcpy(out + i, element == 4 ? static_cast<const void*>(&one) : &bf16_one, element);
      }
    }
  }
  void* data() const { return memory.get(); }
};

// Times the forms of `spec` on scratch operands (matmul_weights_form.h): `direct` first,
// `packed` where not null, the BLAS where not null, all of them planned for `spec`, which is
// `planned` or its first columns (detail::measurement_spec); the decision is kept under
// `planned`'s key. Returns the note explain shows; `chosen` gets the decision.
std::string measure_weights_forms(const MatmulSpec& planned, const MatmulSpec& spec, Form form,
                                  Primitive& direct, Primitive* packed,
                                  const detail::BlasLibrary* blas, int threads,
                                  const std::string& directory, MatmulWeights* chosen) {
  // Made only when the decision is measured, not when it is read from the cache (up to the
  // measurement's budget of memory written: most of a package's load time otherwise).
  struct Scratch {
    ScratchOperand a, b, c;
    std::optional<ScratchOperand> bias;
    std::vector<ScratchOperand> operands;
    std::vector<const void*> operand_data;
    explicit Scratch(const MatmulSpec& spec)
        : a(detail::layout_extent(spec.a), spec.dtype),
          b(detail::layout_extent(spec.b), spec.dtype),
          c(detail::layout_extent(spec.c), spec.dtype) {
      if (spec.bias) bias.emplace(detail::layout_extent(*spec.bias), spec.dtype);
      for (const PostOp& op : spec.post_ops) {
        if (op.operand) operands.emplace_back(detail::layout_extent(*op.operand), op.operand_dtype);
      }
      for (const ScratchOperand& operand : operands) operand_data.push_back(operand.data());
    }
    const void* bias_data() const { return bias ? bias->data() : nullptr; }
  };
  std::optional<Scratch> scratch;
  auto operands = [&]() -> const Scratch& {
    if (!scratch) scratch.emplace(spec);
    return *scratch;
  };
  auto run_with = [&](Primitive& p) {
    return [&] {
      const Scratch& s = operands();
      execute(spec, form, p, s.a.data(), s.b.data(), s.bias_data(), s.c.data(), s.operand_data,
              threads);
    };
  };
  // In order of preference (matmul_weights_form.h).
  std::vector<detail::WeightsFormCandidate> candidates{{MatmulWeights::Direct, run_with(direct)}};
  if (blas != nullptr) {
    candidates.push_back({MatmulWeights::Blas, [&] {
                            const Scratch& s = operands();
                            detail::run_blas_product(*blas, spec, s.a.data(), s.b.data(),
                                                     s.bias_data(), s.c.data(), threads);
                          }});
  }
  if (packed != nullptr) candidates.push_back({MatmulWeights::Packed, run_with(*packed)});
  std::string note = detail::measure_weights_form(detail::weights_form_key(planned, threads, blas),
                                                  directory, candidates, chosen);
  if (spec.c.sizes[2] != planned.c.sizes[2]) {
    note += "; timed on its first " + std::to_string(spec.c.sizes[2]) + " of " +
            std::to_string(planned.c.sizes[2]) + " columns (operands within the measurement's " +
            std::to_string(detail::kMeasurementBudgetBytes >> 20) + " MiB)";
  }
  return note;
}

}  // namespace

struct MatmulPlan::State {
  MatmulSpec spec;
  // Direct; Packed: B reordered into the library's layout on every run; Blas: the product by
  // `blas` (no oneDNN primitive).
  MatmulWeights weights = MatmulWeights::Direct;
  const detail::BlasLibrary* blas = nullptr;
  Form form = Form::NoOutput;
  std::string implementation;
  // ThroughFloat32: the float32 plan of the same layouts, and whether it computes the product
  // alone (alpha == 0).
  std::unique_ptr<MatmulPlan> plan32;
  bool product_only = false;
  Arithmetic arithmetic = Arithmetic::Native;
  mutable std::mutex mutex;  // guards primitives (created on first use of a thread count)
  mutable std::map<int, std::unique_ptr<Primitive>> primitives;

  // The primitive for `threads`, created on first use; the caller has set the thread count.
  Primitive& primitive(int threads) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = primitives[threads];
    if (!slot) slot = make_primitive(spec, form, weights == MatmulWeights::Packed);
    return *slot;
  }
};

std::optional<Arithmetic> MatmulPlan::arithmetic(DType dtype, std::string* why) {
  return dtype_arithmetic(dtype, why);
}

bool MatmulPlan::supported(const MatmulSpec& spec, std::string* why) {
  Analysis analysis;
  try {
    analysis = analyze(spec);
  } catch (const std::exception& e) {
    analysis.refusal = e.what();
  }
  if (why != nullptr) *why = analysis.refusal;
  return analysis.refusal.empty();
}

std::unique_ptr<MatmulPlan> MatmulPlan::create(const MatmulSpec& spec, int num_threads,
                                               MatmulWeights weights,
                                               const std::string& measurement_dir,
                                               const std::string& why_asked) {
  const std::string asked = why_asked.empty() ? "asked for" : why_asked;
  if (num_threads < 0) {
    throw LibraryError("matmul " + spec.describe() + ": a negative thread count");
  }
  const int threads = detail::resolve_threads(num_threads);
  OmpThreads scope(threads);
  try {
    Analysis analysis = analyze(spec);
    if (!analysis.refusal.empty()) {
      throw LibraryError("matmul " + spec.describe() + ": no library plan: " + analysis.refusal);
    }
    auto state = std::make_unique<State>();
    state->spec = spec;
    state->form = analysis.form;
    state->implementation = form_note(analysis.form, spec);
    if (analysis.form == Form::ThroughFloat32) {
      state->plan32 = create(*analysis.spec32, threads, weights, measurement_dir, why_asked);
      state->product_only = analysis.product_only;
      state->arithmetic =
          spec.dtype == DType::Float32 ? Arithmetic::Native : Arithmetic::ThroughFloat32;
      state->implementation =
          analysis.through_float32 + "; the float32 plan: " + state->plan32->implementation();
      return std::unique_ptr<MatmulPlan>(new MatmulPlan(std::move(state)));
    }
    if (!analysis.pd) {
      if (weights == MatmulWeights::Packed) {
        throw LibraryError("matmul " + spec.describe() +
                           ": packed weights were asked for a plan without a library call");
      }
      return std::unique_ptr<MatmulPlan>(new MatmulPlan(std::move(state)));
    }
    if (weights == MatmulWeights::Blas) {
      std::string why = detail::blas_refusal(spec);
      const detail::BlasLibrary* blas = why.empty() ? detail::blas_library(&why) : nullptr;
      if (blas == nullptr) {
        throw LibraryError("matmul " + spec.describe() + ": the BLAS was asked for: " + why);
      }
      state->weights = MatmulWeights::Blas;
      state->blas = blas;
      state->implementation = blas->description() + " sgemm" + state->implementation +
                              "; the product by the BLAS: " + asked;
      return std::unique_ptr<MatmulPlan>(new MatmulPlan(std::move(state)));
    }
    auto chosen = make_primitive(spec, analysis.form, false);
    std::string why = "B read in place: " + asked;
    if (weights == MatmulWeights::Packed) {
      auto packed = make_primitive(spec, analysis.form, true);
      if (is_reference(packed->pd)) {
        throw LibraryError("matmul " + spec.describe() +
                           ": oneDNN has only its reference kernel for packed weights");
      }
      why = "B packed by the library on every run: " + asked;
      state->weights = MatmulWeights::Packed;
      chosen = std::move(packed);
    } else if (weights == MatmulWeights::Measured ||
               weights == MatmulWeights::MeasuredWithoutBlas) {
      // matmul_weights_form.h: B packed where its columns are contiguous, the BLAS where it
      // takes the spec, timed against B in place.
      std::string blas_why = "not asked for";
      const detail::BlasLibrary* blas = nullptr;
      if (weights == MatmulWeights::Measured) {
        blas_why = detail::blas_refusal(spec);
        if (blas_why.empty()) blas = detail::blas_library(&blas_why);
      }
      const bool packable = detail::b_columns_contiguous(spec);
      const std::optional<MatmulSpec> timed = detail::measurement_spec(spec);
      std::unique_ptr<Primitive> packed;
      if (packable && timed) {
        packed = make_primitive(spec, analysis.form, true);
        if (is_reference(packed->pd)) packed.reset();
      }
      MatmulWeights form = MatmulWeights::Direct;
      if (!timed) {
        why = "B read in place, unmeasured: operands above the " +
              std::to_string(detail::kMeasurementBudgetBytes >> 20) +
              " MiB a measurement may allocate, and no narrower product of one matrix fits";
      } else if (!packed && blas == nullptr) {
        why = std::string("B read in place: ") +
              (packable ? "the library has no fast kernel for it packed"
                        : "B's columns are not contiguous (the library packs it inside its "
                          "kernel)") +
              ", and the BLAS does not take it (" + blas_why + ")";
      } else if (timed->c.sizes[2] == spec.c.sizes[2]) {
        why = measure_weights_forms(spec, spec, analysis.form, *chosen, packed.get(), blas, threads,
                                    measurement_dir, &form);
      } else {
        // The forms are timed on the first columns, each planned for them.
        const Form timed_form = analyze(*timed).form;
        auto timed_direct = make_primitive(*timed, timed_form, false);
        std::unique_ptr<Primitive> timed_packed;
        if (packed) timed_packed = make_primitive(*timed, timed_form, true);
        why = measure_weights_forms(spec, *timed, timed_form, *timed_direct, timed_packed.get(),
                                    blas, threads, measurement_dir, &form);
      }
      state->weights = form;
      if (form == MatmulWeights::Packed) chosen = std::move(packed);
      if (form == MatmulWeights::Blas) {
        state->blas = blas;
        state->implementation = blas->description() + " sgemm" + state->implementation + "; " + why;
        return std::unique_ptr<MatmulPlan>(new MatmulPlan(std::move(state)));
      }
    }
    state->implementation = library_name() + " " + std::string(chosen->pd.impl_info_str()) +
                            state->implementation + "; " + why;
    state->primitives[threads] = std::move(chosen);
    return std::unique_ptr<MatmulPlan>(new MatmulPlan(std::move(state)));
  } catch (const dnnl::error& e) {
    throw LibraryError("matmul " + spec.describe() + ": oneDNN failed: " + e.what());
  } catch (const std::bad_alloc&) {
    throw LibraryError("matmul " + spec.describe() + ": out of memory building the plan");
  }
}

MatmulPlan::MatmulPlan(std::unique_ptr<State> state) : state_(std::move(state)) {}
MatmulPlan::~MatmulPlan() = default;

const MatmulSpec& MatmulPlan::spec() const {
  return state_->spec;
}
bool MatmulPlan::packs_weights() const {
  return state_->plan32 ? state_->plan32->packs_weights()
                        : state_->weights == MatmulWeights::Packed;
}
MatmulWeights MatmulPlan::weights_form() const {
  return state_->plan32 ? state_->plan32->weights_form() : state_->weights;
}
Arithmetic MatmulPlan::arithmetic() const {
  return state_->arithmetic;
}
std::string MatmulPlan::implementation() const {
  return state_->implementation;
}

void MatmulPlan::run(const void* a, const void* b, const void* bias, void* c, int num_threads,
                     std::span<const void* const> post_operands) const {
  const State& s = *state_;
  const MatmulSpec& spec = s.spec;
  if (s.form == Form::NoOutput) return;
  const bool needs_bias = spec.bias && spec.beta != 0.0;
  const bool needs_operands = s.form != Form::NoProduct;
  if (num_threads < 0 || c == nullptr || (needs_bias && bias == nullptr) ||
      (needs_operands && (a == nullptr || b == nullptr))) {
    throw LibraryError("matmul " + spec.describe() +
                       ": run() with a null buffer or a negative thread count");
  }
  if (post_operands.size() != detail::binary_post_op_count(spec) ||
      std::find(post_operands.begin(), post_operands.end(), nullptr) != post_operands.end()) {
    throw LibraryError("matmul " + spec.describe() + ": run() with " +
                       std::to_string(post_operands.size()) + " post-op operands for " +
                       std::to_string(detail::binary_post_op_count(spec)) +
                       " binary post-ops, or a null one");
  }
  const int threads = detail::resolve_threads(num_threads);
  OmpThreads scope(threads);
  try {
    if (s.form == Form::NoProduct) {
      detail::fill_scaled_bias(spec, bias, c, threads);
      return;
    }
    if (s.plan32) {
      detail::run_through_float32(spec, *s.plan32, s.product_only, a, b, bias, c, threads,
                                  post_operands);
      return;
    }
    if (s.blas != nullptr) {
      detail::run_blas_product(*s.blas, spec, a, b, bias, c, threads);
      return;
    }
    Primitive& p = s.primitive(threads);
    execute(spec, s.form, p, a, b, bias, c, post_operands, threads);
  } catch (const dnnl::error& e) {
    throw LibraryError("matmul " + spec.describe() + ": oneDNN failed: " + e.what());
  } catch (const std::bad_alloc&) {
    throw LibraryError("matmul " + spec.describe() + ": out of memory for the scratchpad");
  }
}

}  // namespace stax::external
