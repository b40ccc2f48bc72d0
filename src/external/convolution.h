// Convolutions as external calls: a plan for one call site of aten.convolution (forward, not
// transposed), built once when a graph is loaded (oneDNN 2.6's convolution primitive and the
// reorders around it) and run many times, as MatmulPlan is for matrix products (matmul.h:
// the library, its OpenMP runtime, LibraryError). The plan computes what eager's
// torch.ops.aten.convolution(input, weight, bias, stride, padding, dilation, False, [0...],
// groups) computes: float32, or bfloat16 accumulated in float32 with the bias and rounded to
// bfloat16 once. Lowering asks supported() first; when it says no (float64, or a convolution
// oneDNN would run only with its reference kernel), the convolution is a Stax loop nest and
// `why` is shown by `stax explain`.
//
// Memory formats: the primitive is created for the src/dst formats that measured fastest
// (convolution.cpp, bench/conv/RESULTS.md: blocked nChw16c for NCHW callers, nhwc for
// channels-last ones) and oneDNN's choice of weights format (format_tag::any); each run
// reorders the caller's input and weights into them and the result back into the caller's
// output strides, skipping a reorder where the caller's layout already is the chosen one
// (channels-last activations with nhwc). Weights are reordered on every run, as eager does
// without prepacking: in training they change between calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "external/matmul.h"  // LibraryError, shared by the external plans
#include "ir/dtype.h"

namespace stax::external {

// A tensor's sizes and strides (in elements, non-negative).
struct TensorLayout {
  std::vector<int64_t> sizes, strides;

  // Row-major strides (NCHW for an activation, OIHW for a weight).
  static TensorLayout contiguous(std::vector<int64_t> sizes);
  // PyTorch's channels_last / channels_last_3d (and its 1-D analogue, NWC): dimension 1 has
  // stride 1, then the spatial dimensions from last to first, then dimension 0.
  static TensorLayout channels_last(std::vector<int64_t> sizes);
  // Whether the layout addresses its elements as contiguous() / channels_last() would
  // (strides of size-1 dimensions ignored, as PyTorch's is_contiguous does).
  bool is_contiguous() const;
  bool is_channels_last() const;
};

struct ConvolutionSpec {
  DType dtype = DType::Float32;      // input, weight, bias and output all have it
  TensorLayout input;                // [N, C_in, spatial...], 1 to 3 spatial dimensions
  TensorLayout weight;               // [C_out, C_in / groups, kernel...]
  std::optional<TensorLayout> bias;  // [C_out]
  TensorLayout output;               // [N, C_out, output spatial...], written by the plan
  // One per spatial dimension; dilation as PyTorch counts it (1 is a dense kernel).
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;

  int spatial_dims() const { return static_cast<int>(input.sizes.size()) - 2; }
  // "" when the spec is well formed (no library asked): ranks, sizes that agree as eager's
  // convolution requires (output sizes included), non-negative strides, an output whose
  // elements do not overlap; else what is wrong.
  std::string error() const;
  // "f32 conv2d [8x64x56x56] * w[64x64x3x3] stride 1 pad 1 -> [8x64x56x56] + bias" for errors
  // and explain; a layout note after each operand that is not contiguous ("(channels-last)",
  // "(strides ...)"), dilation and groups where they are not 1.
  std::string describe() const;
};

class ConvolutionPlan {
 public:
  // The src/dst memory formats the plan asks oneDNN for (weights always get oneDNN's choice).
  // Automatic is what Stax uses; the others are for bench/conv/conv_shapes.py, which
  // measured them, and for the tests.
  enum class Formats : uint8_t {
    Automatic,     // the measured choice (convolution.cpp)
    Any,           // format_tag::any: oneDNN's preference
    ChannelsLast,  // nwc / nhwc / ndhwc
    Blocked,       // nCw16c / nChw16c / nCdhw16c (a src of fewer than 16 channels plain)
    Caller,        // the caller's input and output strides: no activation reorders
  };

  // Whether a library plan exists for the spec on this machine: a well-formed spec, a dtype
  // oneDNN convolves on this CPU (float32, bfloat16), and a convolution it runs with an
  // optimized kernel (it is asked; its reference kernel is refused). Empty outputs (N == 0,
  // or an input without channels, whose output eager gives no channels) are supported: no
  // library call, nothing to write. When false, `why` (if not null) says why.
  static bool supported(const ConvolutionSpec& spec, std::string* why);
  // Builds the primitive and reorders once, for `num_threads` threads (0:
  // omp_get_max_threads()). Throws LibraryError when there is no plan or oneDNN fails.
  static std::unique_ptr<ConvolutionPlan> create(const ConvolutionSpec& spec, int num_threads = 0,
                                                 Formats formats = Formats::Automatic);

  ~ConvolutionPlan();
  ConvolutionPlan(const ConvolutionPlan&) = delete;
  ConvolutionPlan& operator=(const ConvolutionPlan&) = delete;

  // Runs on `num_threads` threads of the process's OpenMP runtime (0: the caller's
  // omp_get_max_threads()), restoring the caller's setting after; a thread count other than
  // create()'s builds its primitive on first use (oneDNN fixes a primitive's thread count
  // when it is built). `bias` is read only when the spec has one. The output must not overlap
  // the other operands. Thread-safe for concurrent calls of one plan (each run borrows its own
  // temporaries). Throws LibraryError on failure.
  void run(const void* input, const void* weight, const void* bias, void* output,
           int num_threads) const;

  // "oneDNN 2.6.3 convolution jit:avx512_core (nChw16c), input reordered from nchw, weights
  // reordered per call, output reordered to nchw" or "... brgconv:avx512_core (nhwc), input in
  // place, weights reordered per call, output in place" for explain; "no library call: the
  // output is empty" for empty outputs.
  std::string implementation() const;
  const ConvolutionSpec& spec() const;

 private:
  struct State;  // convolution.cpp
  explicit ConvolutionPlan(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace stax::external
