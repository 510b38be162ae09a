#include "base/file_system.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/unique_fd.h"

namespace nbdcopy {

namespace {

using Step = FileError::Step;

FileError Failed(Step step, const std::string& path, int error) {
  return FileError{step, path, error};
}

// Appends everything fd gives until its end.
int ReadToEnd(int fd, std::string* text) {
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return 0;
    text->append(buffer, static_cast<size_t>(got));
  }
}

// Writes all of text; a write that takes nothing is ENOSPC (a full disk
// that does not say so).
int WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return errno;
    if (written == 0) return ENOSPC;
    text.remove_prefix(static_cast<size_t>(written));
  }
  return 0;
}

// Closes fd, reporting what close() says (NFS reports write errors there).
int CloseReporting(UniqueFd& fd) {
  const int raw = fd.release();
  return ::close(raw) == 0 || errno == EINTR ? 0 : errno;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes, syncs and closes the temporary file of ReplaceAtomically.
FileError WriteTemporary(const std::string& temporary, std::string_view text) {
  UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                     kNewFileMode));
  if (!fd.valid()) return Failed(Step::kOpen, temporary, errno);
  if (int error = WriteAll(fd.get(), text); error != 0) {
    return Failed(Step::kWrite, temporary, error);
  }
  if (::fsync(fd.get()) != 0) return Failed(Step::kSync, temporary, errno);
  if (int error = CloseReporting(fd); error != 0) return Failed(Step::kWrite, temporary, error);
  return FileError();
}

class PosixFileSystem final : public FileSystem {
 public:
  FileError ReadWhole(const std::string& path, bool regular_only, std::string* text) override {
    const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | (regular_only ? O_NONBLOCK : 0);
    UniqueFd fd(::open(path.c_str(), flags));
    if (!fd.valid()) return Failed(Step::kOpen, path, errno);
    if (regular_only) {
      struct stat info;
      if (::fstat(fd.get(), &info) != 0) return Failed(Step::kStat, path, errno);
      if (S_ISDIR(info.st_mode)) return Failed(Step::kRead, path, EISDIR);
      if (!S_ISREG(info.st_mode)) return Failed(Step::kNotRegular, path, 0);
    }
    text->clear();
    if (int error = ReadToEnd(fd.get(), text); error != 0) return Failed(Step::kRead, path, error);
    return FileError();
  }

  FileError ReadStandardInput(std::string* text) override {
    text->clear();
    if (int error = ReadToEnd(STDIN_FILENO, text); error != 0) {
      return Failed(Step::kRead, "-", error);
    }
    return FileError();
  }

  FileError WriteWhole(const std::string& path, std::string_view text) override {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, kNewFileMode));
    if (!fd.valid()) return Failed(Step::kOpen, path, errno);
    if (int error = WriteAll(fd.get(), text); error != 0) return Failed(Step::kWrite, path, error);
    if (int error = CloseReporting(fd); error != 0) return Failed(Step::kWrite, path, error);
    return FileError();
  }

  FileError WriteStandardOutput(std::string_view text) override {
    // Through stdio, as anything else the process prints on stdout.
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0) {
      return Failed(Step::kWrite, "stdout", errno != 0 ? errno : ENOSPC);
    }
    return FileError();
  }

  FileError ReplaceAtomically(const std::string& path, std::string_view text) override {
    const std::string temporary = path + ".tmp";
    FileError failed = WriteTemporary(temporary, text);
    if (!failed.failed() && ::rename(temporary.c_str(), path.c_str()) != 0) {
      failed = Failed(Step::kRename, temporary, errno);
    }
    if (failed.failed()) {
      ::unlink(temporary.c_str());
      return failed;
    }
    const std::string directory = DirectoryOf(path);
    UniqueFd directory_fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!directory_fd.valid()) return Failed(Step::kOpenDirectory, directory, errno);
    if (::fsync(directory_fd.get()) != 0) return Failed(Step::kSyncDirectory, directory, errno);
    return FileError();
  }

  FileError ProbeCreate(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid()) return Failed(Step::kOpen, path, errno);
    ::unlink(path.c_str());
    return FileError();
  }

  std::optional<std::string> CanonicalPath(const std::string& path) override {
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (resolved == nullptr) return std::nullopt;
    std::string canonical(resolved);
    std::free(resolved);
    return canonical;
  }
};

}  // namespace

FileSystem& RealFileSystem() {
  static PosixFileSystem* const files = new PosixFileSystem();
  return *files;
}

}  // namespace nbdcopy
