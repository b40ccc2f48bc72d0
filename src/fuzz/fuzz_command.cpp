// The fuzzer's command line (see fuzz_command.h).
#include "fuzz/fuzz_command.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_session.h"
#include "fuzz/regression_file.h"
#include "fuzz/sandbox.h"

namespace stax::fuzz {

namespace {

std::string usage(const std::string& program) {
  const std::string indent(program.size(), ' ');
  return "usage: " + program +
         " [--seed S] [--cases N | --seconds T] [--mode valid|mutate|both] [--out DIR]\n" +
         "       " + indent + " [--no-reduce] [--symbolic-one-in K]\n" + "       " + program +
         " --replay FILE...\n";
}

int replay(const std::vector<std::string>& files) {
  int failures = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << path << ": cannot open file for reading\n";
      return 2;
    }
    std::ostringstream text;
    text << in.rdbuf();
    RegressionCase c;
    try {
      c = parse_regression(text.str(), path);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
    const Outcome o = run_isolated([&] { return check_regression(c); },
                                   SandboxOptions{c.expect == Expectation::Match ? 120.0 : 20.0});
    if (o.failed()) {
      ++failures;
      std::cout << "FAIL " << path << ": " << failure_kind_name(o.kind) << ": " << o.detail << "\n"
                << "  found: " << c.found << "\n";
    } else {
      std::cout << "ok   " << path << "\n";
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int fuzz_command(const std::string& program, const std::vector<std::string>& args) {
  SessionOptions options;
  options.log = &std::cout;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
        return args[++i];
      };
      if (a == "--replay") {
        std::vector<std::string> files(args.begin() + static_cast<long>(i) + 1, args.end());
        if (files.empty()) throw std::invalid_argument("--replay needs at least one file");
        return replay(files);
      } else if (a == "--seed") {
        options.seed = std::stoull(value());
      } else if (a == "--cases") {
        options.cases = std::stoll(value());
      } else if (a == "--seconds") {
        options.seconds = std::stod(value());
      } else if (a == "--mode") {
        const std::string m = value();
        if (m == "valid") {
          options.mode = Mode::Valid;
        } else if (m == "mutate") {
          options.mode = Mode::Mutate;
        } else if (m == "both") {
          options.mode = Mode::Both;
        } else {
          throw std::invalid_argument("--mode: expected valid, mutate or both, got '" + m + "'");
        }
      } else if (a == "--out") {
        options.out_dir = value();
      } else if (a == "--no-reduce") {
        options.reduce = false;
      } else if (a == "--symbolic-one-in") {
        // Issue 33: one valid case in K also run as one symbolic program at other sizes.
        options.valid_generator.symbolic_one_in = std::stoi(value());
      } else if (a == "--help" || a == "-h") {
        std::cout << usage(program);
        return 0;
      } else {
        throw std::invalid_argument("unknown argument '" + a + "'");
      }
    }
    if (options.cases > 0 && options.seconds > 0) {
      throw std::invalid_argument("give --cases or --seconds, not both");
    }
    if (options.cases <= 0 && options.seconds <= 0) options.cases = 100;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n" << usage(program);
    return 2;
  }
  std::cout << program << ": seed " << options.seed << "\n";
  SessionStats stats;
  try {
    stats = run_session(options);
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  }
  print_summary(std::cout, stats);
  return stats.findings.empty() ? 0 : 1;
}

}  // namespace stax::fuzz
