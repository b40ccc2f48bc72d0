// Compile-time benchmark of Stax's own work (parse, lowering, scheduling, C++ generation; the
// system compiler excluded), on generated graphs of growing size in the shapes that once
// made it explode: pointwise chains, values read twice by one op, transpose/reshape chains,
// many outputs of one kernel, wide DAGs, and blocks that fuse in every direction. Prints time per
// node for every stage and size, so super-linear growth shows as a growing per-node figure. Usage:
// stax_compile_time_bench [--sizes 100,1000,10000] [--shapes chain,self_read,...]
#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cpp_codegen.h"
#include "fuzz/scaling_programs.h"
#include "ir/graph.h"
#include "lowering/lowering.h"
#include "scheduler/schedule.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {100, 1000, 10000};
  const std::map<std::string, std::function<std::string(int)>> generators = {
      {"chain", stax::fuzz::chain_program},
      {"self_read", stax::fuzz::self_read_program},
      {"view_chain", stax::fuzz::view_chain_program},
      {"many_outputs", stax::fuzz::many_outputs_program},
      {"wide_dag", stax::fuzz::wide_dag_program},
      {"many_fusions", stax::fuzz::many_fusions_program}};
  std::vector<std::string> shapes;
  for (const auto& [name, gen] : generators) shapes.push_back(name);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (const auto& v : split(argv[++i])) sizes.push_back(std::stoi(v));
    } else if (a == "--shapes" && i + 1 < argc) {
      shapes = split(argv[++i]);
    } else {
      std::cerr << "usage: stax_compile_time_bench [--sizes 100,1000] [--shapes chain,...]\n";
      return 2;
    }
  }
  // The vectorized forms are the ones that run; two threads give the parallel forms.
  stax::codegen::CodegenOptions codegen_options;
  codegen_options.simd = stax::runtime::SimdLevel::Avx2;
  codegen_options.num_threads = 2;
  std::cout << "microseconds per node (the system compiler excluded)\n";
  std::cout << std::left << std::setw(14) << "shape" << std::right << std::setw(7) << "nodes"
            << std::setw(10) << "parse" << std::setw(10) << "lower" << std::setw(10) << "schedule"
            << std::setw(10) << "codegen" << std::setw(10) << "total" << std::setw(10) << "buffers"
            << std::setw(10) << "kernels" << std::setw(12) << "C++ bytes"
            << "\n";
  for (const auto& shape : shapes) {
    auto gen = generators.find(shape);
    if (gen == generators.end()) {
      std::cerr << "unknown shape " << shape << "\n";
      return 2;
    }
    for (int n : sizes) {
      const std::string text = gen->second(n);
      auto t0 = Clock::now();
      const stax::ir::Graph graph = stax::ir::parse_graph(text, shape);
      auto t1 = Clock::now();
      const stax::lowering::LoweredGraph lowered = stax::lowering::lower(graph);
      auto t2 = Clock::now();
      const stax::scheduler::Schedule schedule = stax::scheduler::schedule(lowered);
      auto t3 = Clock::now();
      const stax::codegen::GeneratedModule module =
          stax::codegen::generate_cpp(schedule, codegen_options);
      auto t4 = Clock::now();
      const double nodes = static_cast<double>(graph.nodes().size());
      auto per_node = [&](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::micro>(b - a).count() / nodes;
      };
      std::cout << std::left << std::setw(14) << shape << std::right << std::setw(7)
                << graph.nodes().size() << std::fixed << std::setprecision(1) << std::setw(10)
                << per_node(t0, t1) << std::setw(10) << per_node(t1, t2) << std::setw(10)
                << per_node(t2, t3) << std::setw(10) << per_node(t3, t4) << std::setw(10)
                << per_node(t0, t4) << std::setw(10) << lowered.buffers.size() << std::setw(10)
                << schedule.kernels.size() << std::setw(12) << module.source.size() << "\n"
                << std::flush;
    }
  }
  return 0;
}
