#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "plugin.h"

extern char** environ;

namespace hwport {

namespace {
double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

bool probe_plugin(const std::string& probe_exe, const std::string& path, double timeout_s,
                  std::string* reason) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string exe = probe_exe, arg = path;
  char* argv[] = {exe.data(), arg.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    // Without a probe the plugin is loaded unprobed: the probe is a safety net, not a gate.
    return true;
  }
  const double deadline = now_s() + timeout_s;
  int status = 0;
  timespec pause{0, 1000000};  // 1 ms, growing to 20 ms
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return true;
    if (now_s() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f", timeout_s);
      *reason = std::string("hwport_plugin_init or get_device_count did not return within ") +
                seconds + " s in an isolated probe process (HWPORT_PLUGIN_PROBE_TIMEOUT); "
                "not loaded";
      return false;
    }
    nanosleep(&pause, nullptr);
    if (pause.tv_nsec < 20000000) pause.tv_nsec *= 2;
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    *reason = "crashed with signal " + std::to_string(sig) + " (" + (name ? name : "?") +
              ") in hwport_plugin_init or get_device_count, run in an isolated probe process; "
              "not loaded";
    return false;
  }
  return true;
}

}  // namespace hwport
