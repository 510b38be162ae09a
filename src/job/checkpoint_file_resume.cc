// What a run does with its checkpoint file (checkpoint_file.h): reads it,
// checks that it is this copy's (CompareIdentity) and replaces it. The text
// format is in checkpoint_file.cc.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "endpoints/open_endpoint.h"
#include "job/checkpoint_file.h"

namespace nbdcopy {

namespace {

std::string Shown(const std::string& value) {
  return value.empty() ? "(none)" : "'" + EscapeCheckpointValue(value) + "'";
}

// The words of text between spaces.
std::vector<std::string> SplitSpaces(const std::string& text) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

// "(A then, B now)" for the first word that differs, or the whole strings.
std::string SettingsDifference(const std::string& recorded, const std::string& now) {
  const std::vector<std::string> a = SplitSpaces(recorded), b = SplitSpaces(now);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string word_a = i < a.size() ? a[i] : "", word_b = i < b.size() ? b[i] : "";
    if (word_a != word_b) return "(" + Shown(word_a) + " then, " + Shown(word_b) + " now)";
  }
  return "(" + Shown(recorded) + " then, " + Shown(now) + " now)";
}

// Closes fd, reporting what close() says (NFS reports write errors there).
int CloseReporting(UniqueFd& fd) {
  const int raw = fd.release();
  return ::close(raw) == 0 || errno == EINTR ? 0 : errno;
}

int WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return errno;
    text.remove_prefix(static_cast<size_t>(written));
  }
  return 0;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status CompareIdentity(const CheckpointIdentity& recorded, const CheckpointIdentity& now,
                       const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return Status::Error("--checkpoint=" + path + ": " + why + "; remove " + path +
                         " to copy from the start");
  };
  auto unknown = [&](const std::string& what, const std::string& a, const std::string& b) {
    return refuse("cannot check " + what + " (the checkpoint records " + Shown(a) +
                  ", this run has " + Shown(b) + ")");
  };
  if (recorded.source_size != now.source_size) {
    return refuse("the source's size differs (the checkpoint was made for " +
                  std::to_string(recorded.source_size) + " bytes, the source has " +
                  std::to_string(now.source_size) + ")");
  }
  const std::string& fa = recorded.fingerprint;
  const std::string& fb = now.fingerprint;
  if (fa.empty() || fb.empty()) return unknown("the source's content fingerprint", fa, fb);
  if (fa != fb) {
    return refuse("the source's content differs from when the checkpoint was made (fingerprint " +
                  Shown(fa) + " then, " + Shown(fb) + " now)");
  }
  const std::pair<const char*, const std::string CheckpointIdentity::*> names[] = {
      {"source", &CheckpointIdentity::source}, {"destination", &CheckpointIdentity::destination}};
  for (const auto& [name, field] : names) {
    const std::string& a = recorded.*field;
    const std::string& b = now.*field;
    if (a.empty() || b.empty()) return unknown(std::string("the ") + name, a, b);
    if (a != b) {
      return refuse("it was made for " + std::string(name) + " " + Shown(a) + ", not " + Shown(b));
    }
  }
  if (recorded.settings.empty() || now.settings.empty()) {
    return unknown("the settings", recorded.settings, now.settings);
  }
  if (recorded.settings != now.settings) {
    return refuse("it was made with other settings " +
                  SettingsDifference(recorded.settings, now.settings));
  }
  return Status::Ok();
}

Status WriteCheckpointFile(const std::string& path, const std::string& text) {
  const std::string prefix = "--checkpoint=" + path + ": ";
  const std::string temporary = path + ".tmp";
  UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                     kNewFileMode));
  if (!fd.valid()) return Status::FromErrno(prefix + "cannot create " + temporary, errno);
  int error = WriteAll(fd.get(), text);
  std::string failed = "cannot write " + temporary;
  if (error == 0 && ::fsync(fd.get()) != 0) {
    error = errno;
    failed = "cannot sync " + temporary;
  }
  if (error == 0) error = CloseReporting(fd);
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) {
    error = errno;
    failed = "cannot rename " + temporary + " to " + path;
  }
  if (error != 0) {
    fd.reset();
    ::unlink(temporary.c_str());
    return Status::FromErrno(prefix + failed, error);
  }
  const std::string directory = DirectoryOf(path);
  UniqueFd directory_fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!directory_fd.valid()) {
    return Status::FromErrno(prefix + "cannot open the directory " + directory, errno);
  }
  if (::fsync(directory_fd.get()) != 0) {
    return Status::FromErrno(prefix + "cannot sync the directory " + directory, errno);
  }
  return Status::Ok();
}

Result<std::optional<std::string>> ReadCheckpointFile(const std::string& path) {
  const std::string prefix = "--checkpoint=" + path + ": ";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid() && errno == ENOENT) return std::optional<std::string>();
  if (!fd.valid()) return Status::FromErrno(prefix + "cannot open it", errno);
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) return Status::FromErrno(prefix + "cannot stat it", errno);
  if (S_ISDIR(info.st_mode)) return Status::FromErrno(prefix + "cannot read it", EISDIR);
  if (!S_ISREG(info.st_mode)) return Status::Error(prefix + "not a regular file");
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::FromErrno(prefix + "cannot read it", errno);
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  return std::optional<std::string>(std::move(text));
}

}  // namespace nbdcopy
