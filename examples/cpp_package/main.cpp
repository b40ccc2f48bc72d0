// run_package PKG CASES.safetensors: loads an ahead-of-time package (stax.aot_compile,
// `stax compile`) and runs it on the inputs in CASES ("input.0", "input.1", ... in the
// package's input order), comparing each output with "expected.K" within "tolerance"
// ([rtol, atol], float64): |actual - expected| <= atol + rtol * |expected| everywhere.
// Prints the load and first-call times; exits 0 when every output matches, 1 when one does
// not, 2 on bad input (a package Stax refuses names what is wrong).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <stax/stax.h>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PKG CASES.safetensors\n", argv[0]);
    return 2;
  }
  try {
    const auto cases = stax::package::load_safetensors_file(argv[2]);
    const auto start = std::chrono::steady_clock::now();
    const stax::Package package = stax::Package::load(argv[1]);
    const double load_s = seconds_since(start);
    std::vector<stax::Tensor> inputs;
    for (size_t i = 0; i < package.input_names().size(); ++i) {
      inputs.push_back(cases.at("input." + std::to_string(i)));
    }
    const auto call = std::chrono::steady_clock::now();
    const std::vector<stax::Tensor> outputs = package.run(inputs);
    const double first_call_s = seconds_since(call);
    const stax::Tensor& tolerance = cases.at("tolerance");
    const double rtol = tolerance.get({0});
    const double atol = tolerance.get({1});
    bool all_match = true;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const stax::Tensor& expected = cases.at("expected." + std::to_string(k));
      if (expected.sizes() != outputs[k].sizes()) {
        std::printf("output %zu: sizes differ from the expected ones\n", k);
        all_match = false;
        continue;
      }
      double worst = 0;
      bool match = true;
      for (int64_t p = 0; p < expected.numel(); ++p) {
        const double a = outputs[k].get_flat(p);
        const double e = expected.get_flat(p);
        const double diff = std::fabs(a - e);
        worst = std::fmax(worst, diff);
        match = match && (diff <= atol + rtol * std::fabs(e) || (std::isnan(a) && std::isnan(e)));
      }
      std::printf("output %zu: %lld values, max abs diff %.3g (rtol %.3g, atol %.3g) %s\n", k,
                  static_cast<long long>(expected.numel()), worst, rtol, atol,
                  match ? "ok" : "MISMATCH");
      all_match = all_match && match;
    }
    std::printf("package %s: loaded in %.2f ms, first call %.2f ms, %zu weights bound\n", argv[1],
                load_s * 1e3, first_call_s * 1e3, package.weight_inputs().size());
    return all_match ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_package: %s\n", e.what());
    return 2;
  }
}
