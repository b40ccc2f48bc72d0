// The fuzzing loop: case generation, sandboxed checks, reduction and saving of failures.
#include "fuzz/fuzz_session.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>

#include "fuzz/mutator.h"
#include "fuzz/regression_file.h"
#include "ir/graph.h"

namespace stax::fuzz {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t case_seed(uint64_t seed, long long index, Mode mode) {
  return splitmix64(splitmix64(seed) ^ (static_cast<uint64_t>(index) * 2 + (mode == Mode::Mutate)));
}

const char* mode_name(Mode m) {
  return m == Mode::Valid ? "valid" : "mutate";
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double sandbox_timeout(Mode mode, const SessionOptions& options) {
  return (mode == Mode::Valid ? options.valid_sandbox : options.mutate_sandbox).timeout_seconds;
}

Outcome run_sandboxed(Mode mode, const std::string& text, const CaseOptions& case_options,
                      const SessionOptions& options, double timeout) {
  if (options.run_check) return options.run_check(mode, text, case_options, timeout);
  SandboxOptions sandbox = mode == Mode::Valid ? options.valid_sandbox : options.mutate_sandbox;
  sandbox.timeout_seconds = timeout;
  if (mode == Mode::Valid) {
    return run_isolated([&] { return check_valid(text, case_options); }, sandbox);
  }
  return run_isolated([&] { return check_clean_errors(text); }, sandbox);
}

// The session's clock and the end of its time budget (infinity with a case budget).
class Budget {
 public:
  explicit Budget(const SessionOptions& options)
      : clock_(options.clock ? options.clock : steady_seconds), start_(clock_()) {
    if (options.seconds > 0) deadline_ = start_ + options.seconds;
  }
  double now() const { return clock_(); }
  double elapsed() const { return now() - start_; }
  double deadline() const { return deadline_; }
  const std::function<double()>& clock() const { return clock_; }

 private:
  std::function<double()> clock_;
  double start_;
  double deadline_ = std::numeric_limits<double>::infinity();
};

// One check within the budget: its sandbox's time bound, cut to the time left. nullopt when
// no time is left, or when the check ran into a bound that the budget had cut (a timeout
// that says nothing about the program).
std::optional<Outcome> run_case(Mode mode, const std::string& text, const CaseOptions& case_options,
                                const SessionOptions& options, const Budget& budget) {
  const double own = sandbox_timeout(mode, options);
  const double bound = std::min(own, budget.deadline() - budget.now());
  if (bound <= 0) return std::nullopt;
  Outcome o = run_sandboxed(mode, text, case_options, options, bound);
  if (o.kind == FailureKind::Timeout && bound < own) return std::nullopt;
  return o;
}

std::string file_name(const Finding& f, uint64_t seed) {
  return std::string(failure_kind_name(f.outcome.kind)) + "-" + mode_name(f.mode) + "-s" +
         std::to_string(seed) + "-c" + std::to_string(f.case_index) + ".stax";
}

void save(Finding& f, const SessionOptions& options) {
  if (options.out_dir.empty()) return;
  std::filesystem::create_directories(options.out_dir);
  RegressionCase c;
  c.found = std::string(failure_kind_name(f.outcome.kind)) + " (" + f.outcome.detail + "); mode " +
            mode_name(f.mode) + ", seed " + std::to_string(options.seed) + ", case " +
            std::to_string(f.case_index);
  c.expect = f.mode == Mode::Valid ? Expectation::Match : Expectation::Clean;
  c.options = f.options;
  c.program = f.reduced;
  const std::filesystem::path path =
      std::filesystem::path(options.out_dir) / file_name(f, options.seed);
  std::ofstream(path, std::ios::binary) << format_regression(c);
  c.program = f.original;
  std::filesystem::path original = path;
  original.replace_extension(".original.txt");
  std::ofstream(original, std::ios::binary) << format_regression(c);
  f.file = path.string();
}

// What identifies a bug across cases: kind, stage, signal and the message without numbers
// (sizes and positions differ from case to case).
std::string signature(const Outcome& o) {
  std::string s =
      std::string(failure_kind_name(o.kind)) + "|" + o.stage + "|" + std::to_string(o.signal) + "|";
  // The C library's last words vary with the heap state, not with the bug.
  const std::string message = o.detail.substr(0, o.detail.find("; stderr: "));
  for (char c : message) {
    if (!std::isdigit(static_cast<unsigned char>(c))) s += c;
  }
  return s;
}

}  // namespace

GeneratedCase case_program(uint64_t seed, long long index, Mode mode,
                           const SessionOptions& options) {
  const uint64_t s = case_seed(seed, index, mode);
  if (mode == Mode::Valid) return generate_case(s, options.valid_generator);
  GeneratedCase base = generate_case(s, options.mutate_generator);
  // Mutate the printer's spelling of the program, the canonical text format.
  base.text = mutate_program(ir::print_graph(ir::parse_graph(base.text)), splitmix64(s)).text;
  return base;
}

SessionStats run_session(const SessionOptions& options) {
  if (options.cases <= 0 && options.seconds <= 0) {
    throw std::invalid_argument("fuzz session: give a positive number of cases or seconds");
  }
  SessionStats stats;
  std::set<std::string> reduced_seen;
  std::map<std::string, int> reductions_of;
  const Budget budget(options);
  double last_progress = budget.now();
  auto progress_due = [&] {
    if (!options.log || budget.now() - last_progress < options.progress_every_seconds) return false;
    last_progress = budget.now();
    return true;
  };
  auto stamp = [&] {
    return "[" + std::to_string(static_cast<long long>(budget.elapsed())) + " s]";
  };
  long long index = 0;
  for (;; ++index) {
    if (options.cases > 0 && index >= options.cases) break;
    if (budget.now() >= budget.deadline()) break;
    Mode mode = options.mode;
    if (mode == Mode::Both)
      mode = stats.valid_seconds <= stats.mutate_seconds ? Mode::Valid : Mode::Mutate;
    const GeneratedCase c = case_program(options.seed, index, mode, options);
    const double case_start = budget.now();
    const std::optional<Outcome> ran = run_case(mode, c.text, c.options, options, budget);
    if (!ran) {
      if (options.log) {
        *options.log << stamp() << " " << mode_name(mode) << " case " << index
                     << " was cut short by the end of the time budget; not counted\n";
      }
      break;
    }
    const Outcome& outcome = *ran;
    (mode == Mode::Valid ? stats.valid_cases : stats.mutated_cases) += 1;
    if (outcome.kind == FailureKind::SandboxError) {
      ++stats.sandbox_errors;
      if (options.log) *options.log << "sandbox error: " << outcome.detail << "\n";
    } else if (outcome.failed()) {
      Finding f;
      f.mode = mode;
      f.case_index = index;
      f.outcome = outcome;
      f.original = c.text;
      f.reduced = c.text;
      f.options = c.options;
      ++stats.failures_by_kind[failure_kind_name(outcome.kind)];
      if (options.log) {
        *options.log << "FAILURE " << failure_kind_name(outcome.kind) << " in " << mode_name(mode)
                     << " case " << index << ": " << outcome.detail << "\n";
      }
      f.skipped = ++reductions_of[signature(outcome)] > options.reductions_per_signature;
      if (f.skipped && options.log) *options.log << "  (signature reduced before; not again)\n";
      if (options.reduce && !f.skipped) {
        ReduceOptions ro = mode == Mode::Valid ? options.valid_reduce : options.mutate_reduce;
        ro.clock = budget.clock();
        ro.deadline = std::min(ro.deadline, budget.deadline());
        const double reduce_start = budget.now();
        const std::string what = std::string(mode_name(mode)) + " case " + std::to_string(index);
        if (options.log) {
          *options.log << "  reducing " << what << ": at most " << ro.max_checks << " checks";
          if (ro.deadline < std::numeric_limits<double>::infinity()) {
            *options.log << ", " << static_cast<long long>(ro.deadline - reduce_start)
                         << " s left in the budget";
          }
          *options.log << "\n";
          options.log->flush();
        }
        ro.on_check = [&](const ReduceProgress& p) {
          if (!progress_due()) return;
          *options.log << "  " << stamp() << " reducing " << what << ": " << p.pass << ", check "
                       << p.checks << " (" << p.accepted << " kept), " << p.size << " characters, "
                       << static_cast<long long>(budget.now() - reduce_start) << " s so far\n";
          options.log->flush();
        };
        const ReduceResult r = reduce_program(
            c.text,
            [&](const std::string& text) {
              const std::optional<Outcome> o = run_case(mode, text, c.options, options, budget);
              return o && same_failure(*o, outcome);
            },
            ro);
        f.reduced = r.text;
        if (options.log) {
          *options.log << "  reduced with " << r.checks << " checks in "
                       << static_cast<long long>(budget.now() - reduce_start) << " s";
          if (r.out_of_time) *options.log << " (stopped at the end of the time budget)";
          *options.log << " to:\n" << r.text;
        }
      }
      f.duplicate = !f.skipped && !reduced_seen.insert(f.reduced).second;
      if (!f.duplicate && !f.skipped) save(f, options);
      if (options.log && !f.file.empty()) *options.log << "  saved " << f.file << "\n";
      stats.findings.push_back(f);
    }
    (mode == Mode::Valid ? stats.valid_seconds : stats.mutate_seconds) += budget.now() - case_start;
    if (progress_due()) {
      *options.log << stamp() << " valid " << stats.valid_cases << ", mutated "
                   << stats.mutated_cases << ", failures " << stats.findings.size() << "\n";
      options.log->flush();
    }
  }
  return stats;
}

void print_summary(std::ostream& out, const SessionStats& stats) {
  out << "programs tried: " << stats.valid_cases + stats.mutated_cases << " (valid "
      << stats.valid_cases << " in " << static_cast<long long>(stats.valid_seconds)
      << " s, mutated " << stats.mutated_cases << " in "
      << static_cast<long long>(stats.mutate_seconds) << " s)\n";
  out << "failures found: " << stats.findings.size();
  for (const auto& [kind, n] : stats.failures_by_kind) out << " " << kind << "=" << n;
  out << "\n";
  if (stats.sandbox_errors) out << "sandbox errors: " << stats.sandbox_errors << "\n";
  int distinct = 0;
  int skipped = 0;
  for (const Finding& f : stats.findings) {
    distinct += f.duplicate || f.skipped ? 0 : 1;
    skipped += f.skipped ? 1 : 0;
  }
  out << "reduced programs: " << distinct << " distinct";
  if (skipped) out << " (" << skipped << " more failures with an already reduced signature)";
  out << "\n";
  for (const Finding& f : stats.findings) {
    if (!f.file.empty()) out << "  " << f.file << "\n";
  }
}

}  // namespace stax::fuzz
