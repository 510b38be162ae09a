// WriteCheckpointFile and ReadCheckpointFile (checkpoint_file.h); the text
// format is in checkpoint_file.cc.
#include "job/checkpoint_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <string_view>

#include "base/unique_fd.h"
#include "endpoints/open_endpoint.h"

namespace nbdcopy {

namespace {

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
