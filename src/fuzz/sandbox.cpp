// fork + waitpid with a time bound; the child's outcome travels through a close-on-exec pipe.
#include "fuzz/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

namespace stax::fuzz {

namespace {

// Exit codes of the child: kExitBase + the FailureKind it found.
constexpr int kExitBase = 40;
// The report stream: "\x01STAGE\n" records for note_stage, then "\x02" and the detail.
constexpr char kStageMark = '\x01';
constexpr char kDetailMark = '\x02';

int g_report_fd = -1;  // set in a sandbox child only

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void child_main(const std::function<Outcome()>& check, const SandboxOptions& options,
                             int report_fd, int stderr_fd) {
  ::setpgid(0, 0);
  // The C library's last words (malloc's "double free or corruption") go to the parent.
  ::dup2(stderr_fd, 2);
  ::close(stderr_fd);
  if (options.memory_limit_bytes != 0) {
    const rlimit limit{options.memory_limit_bytes, options.memory_limit_bytes};
    ::setrlimit(RLIMIT_AS, &limit);
  }
  g_report_fd = report_fd;
  Outcome outcome;
  try {
    outcome = check();
  } catch (const std::exception& e) {
    outcome.kind = FailureKind::Refused;
    outcome.detail = std::string("the check itself threw: ") + e.what();
  } catch (...) {
    outcome.kind = FailureKind::NonStdException;
    outcome.detail = "the check itself threw a non-std exception";
  }
  write_all(report_fd, std::string(1, kDetailMark) + outcome.stage + "\n" + outcome.detail);
  ::close(report_fd);
  // _exit: no static destructors or atexit handlers of the half-tested state.
  ::_exit(kExitBase + static_cast<int>(outcome.kind));
}

std::string signal_text(int signal) {
  const char* name = sigabbrev_np(signal);
  return "killed by signal " + std::to_string(signal) + " (SIG" + (name ? name : "?") + ")";
}

void drain(int fd, std::string& into) {
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
    into.append(buffer, static_cast<size_t>(n));
    if (into.size() > (size_t{1} << 20)) into.erase(0, into.size() - (size_t{1} << 16));
  }
}

// The last non-empty line of what the child wrote to stderr, as "; stderr: ...".
std::string last_words(const std::string& errors) {
  size_t end = errors.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  const size_t found = errors.rfind('\n', end);
  const size_t begin = found == std::string::npos ? 0 : found + 1;
  return "; stderr: " + errors.substr(begin, end + 1 - begin);
}

// Splits the child's report into the last stage it entered and the detail it sent.
void parse_report(const std::string& report, std::string& stage, std::string& detail,
                  bool& have_detail) {
  size_t pos = 0;
  while (pos < report.size()) {
    const char mark = report[pos];
    const size_t end = report.find('\n', pos);
    if (mark == kStageMark && end != std::string::npos) {
      stage = report.substr(pos + 1, end - pos - 1);
      pos = end + 1;
    } else if (mark == kDetailMark && end != std::string::npos) {
      stage = report.substr(pos + 1, end - pos - 1);
      detail = report.substr(end + 1);
      have_detail = true;
      return;
    } else {
      return;
    }
  }
}

}  // namespace

void note_stage(const char* stage) {
  if (g_report_fd >= 0) write_all(g_report_fd, std::string(1, kStageMark) + stage + "\n");
}

Outcome run_isolated(const std::function<Outcome()>& check, const SandboxOptions& options) {
  Outcome result;
  int fds[2];
  int err_fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.kind = FailureKind::SandboxError;
    result.detail = std::string("pipe2 failed: ") + std::strerror(errno);
    return result;
  }
  if (::pipe2(err_fds, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.kind = FailureKind::SandboxError;
    result.detail = std::string("pipe2 failed: ") + std::strerror(errno);
    return result;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {fds[0], fds[1], err_fds[0], err_fds[1]}) ::close(fd);
    result.kind = FailureKind::SandboxError;
    result.detail = std::string("fork failed: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::close(err_fds[0]);
    child_main(check, options, fds[1], err_fds[1]);
  }
  ::close(fds[1]);
  ::close(err_fds[1]);
  ::fcntl(err_fds[0], F_SETFL, O_NONBLOCK);
  std::string errors;
  // Also set the group from the parent side, so a kill right after fork finds it.
  ::setpgid(pid, pid);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);

  std::string report;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(options.timeout_seconds));
  int status = 0;
  bool exited = false;
  bool timed_out = false;
  while (!exited) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {err_fds[0], POLLIN, 0}};
    ::poll(p, 2, 20);
    drain(fds[0], report);
    drain(err_fds[0], errors);
    const pid_t waited = ::waitpid(pid, &status, WNOHANG);
    if (waited == pid) {
      exited = true;
    } else if (waited < 0 && errno != EINTR) {
      break;
    } else if (std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      exited = true;
    }
  }
  drain(fds[0], report);
  drain(err_fds[0], errors);
  ::close(fds[0]);
  ::close(err_fds[0]);
  // Compilers the child started may outlive it; they belong to its process group.
  ::kill(-pid, SIGKILL);

  std::string stage;
  std::string detail;
  bool have_detail = false;
  parse_report(report, stage, detail, have_detail);
  result.stage = stage;
  const std::string during = stage.empty() ? "" : " during " + stage;
  if (timed_out) {
    result.kind = FailureKind::Timeout;
    result.detail = "no result after " + std::to_string(options.timeout_seconds) + " s" + during;
  } else if (!exited) {
    result.kind = FailureKind::SandboxError;
    result.detail = std::string("waitpid failed: ") + std::strerror(errno);
  } else if (WIFSIGNALED(status)) {
    result.kind = FailureKind::Crash;
    result.signal = WTERMSIG(status);
    result.detail = signal_text(result.signal) + during + last_words(errors);
  } else if (WIFEXITED(status) && have_detail && WEXITSTATUS(status) >= kExitBase &&
             WEXITSTATUS(status) <= kExitBase + static_cast<int>(FailureKind::SandboxError)) {
    result.kind = static_cast<FailureKind>(WEXITSTATUS(status) - kExitBase);
    result.detail = detail;
  } else {
    // exit() from library code, say: the child ended without its report.
    result.kind = FailureKind::Crash;
    result.detail =
        "exited with status " + std::to_string(WEXITSTATUS(status)) + " without reporting" + during;
  }
  return result;
}

}  // namespace stax::fuzz
