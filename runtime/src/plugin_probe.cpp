#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "plugin.h"
#include "probe_protocol.h"

extern char** environ;

namespace hwport {

namespace {
double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The probe's report so far: the last stage it started and whether it wrote "done".
struct Report {
  std::string pending;  // an unfinished line
  std::string stage;
  bool done = false;

  void feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] != '\n') {
        if (pending.size() < 256) pending += data[i];
        continue;
      }
      if (pending == kProbeDone) done = true;
      else if (pending.rfind("stage ", 0) == 0) stage = pending.substr(6);
      pending.clear();
    }
  }

  // Reads what is there now; never blocks (a process the plugin forked may hold the pipe open).
  void drain(int fd) {
    char buf[512];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n > 0) feed(buf, static_cast<size_t>(n));
      else if (n < 0 && errno == EINTR) continue;
      else return;
    }
  }

  std::string activity() const {
    for (const auto& s : kProbeStages)
      if (stage == s.name) return s.activity;
    return "before it started the plugin";
  }
};

// The write end lands on kProbeReportFd in the child; keep it off that number here so that
// dup2 (which would then be a no-op) cannot leave FD_CLOEXEC set on it.
bool make_report_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  if (fds[1] <= kProbeReportFd) {
    const int moved = fcntl(fds[1], F_DUPFD_CLOEXEC, kProbeReportFd + 1);
    close(fds[1]);
    if (moved < 0) {
      close(fds[0]);
      return false;
    }
    fds[1] = moved;
  }
  return true;
}
}  // namespace

bool probe_plugin(const std::string& probe_exe, const std::string& path, double timeout_s,
                  std::string* reason) {
  int fds[2];
  if (!make_report_pipe(fds)) return true;  // no probe possible: loaded unprobed, as below
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], kProbeReportFd);
  std::string exe = probe_exe, arg = path;
  char* argv[] = {exe.data(), arg.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    // Without a probe the plugin is loaded unprobed: the probe is a safety net, not a gate.
    return true;
  }
  Report report;
  const double deadline = now_s() + timeout_s;
  int status = 0;
  timespec pause{0, 1000000};  // 1 ms, growing to 20 ms
  for (;;) {
    report.drain(fds[0]);
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      // No status to collect (SIGCHLD ignored: the probe was reaped on exit); its report is
      // complete by then and alone decides.
      report.drain(fds[0]);
      close(fds[0]);
      if (report.done) return true;
      *reason = "ended " + report.activity() +
                ", before the isolated probe process finished (its exit status could not be "
                "collected); not loaded";
      return false;
    }
    if (now_s() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      report.drain(fds[0]);
      close(fds[0]);
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f", timeout_s);
      *reason = "did not return within " + std::string(seconds) + " s " + report.activity() +
                ", run in an isolated probe process (HWPORT_PLUGIN_PROBE_TIMEOUT); not loaded";
      return false;
    }
    nanosleep(&pause, nullptr);
    if (pause.tv_nsec < 20000000) pause.tv_nsec *= 2;
  }
  report.drain(fds[0]);
  close(fds[0]);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    *reason = "crashed with signal " + std::to_string(sig) + " (" + (name ? name : "?") + ") " +
              report.activity() + ", run in an isolated probe process; not loaded";
    return false;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kProbeOkExit && report.done) return true;
  // Anything else is the plugin ending the process (exit() in a constructor or in init) or a
  // probe that could not run: either way nothing says the plugin is safe to load.
  *reason = "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
            " " + report.activity() + ", before the isolated probe process finished; not loaded";
  return false;
}

}  // namespace hwport
