#include "endpoints/nbd/nbd_command_end.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/clock.h"

namespace nbdcopy {

namespace {

// Whether PATH (or the path itself, with a '/') has an executable `name`.
bool Findable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (access(((dir.empty() ? "." : dir) + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<pid_t> ThreadChildren() {
  std::vector<pid_t> pids;
  std::ifstream children("/proc/thread-self/children");
  for (pid_t pid; children >> pid;) pids.push_back(pid);
  return pids;
}

pid_t NewChild(const std::vector<pid_t>& before, const std::vector<pid_t>& after) {
  for (pid_t pid : after) {
    if (std::find(before.begin(), before.end(), pid) == before.end()) return pid;
  }
  return 0;
}

std::string CommandEnd(const std::vector<std::string>& argv, pid_t pid, bool zero_is_news) {
  const std::string& command = argv.empty() ? std::string() : argv.front();
  if (!Findable(command)) return "the command " + command + " was not found";
  if (pid <= 0) return "";
  // (It closed its end of the socket: exiting, if not yet gone.)
  const auto until = Clock::now() + std::chrono::seconds(1);
  do {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == -1) return "";
    if (info.si_pid == pid) {
      if (info.si_code == CLD_EXITED) {
        if (info.si_status == 0 && !zero_is_news) return "";
        return fmt::format("{} exited with status {} before its NBD handshake ended", command,
                           info.si_status);
      }
      const char* name = sigabbrev_np(info.si_status);
      return fmt::format("{} was killed by signal {} (SIG{}) before its NBD handshake ended",
                         command, info.si_status, name != nullptr ? name : "?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (Clock::now() < until);
  return "";
}

}  // namespace nbdcopy
