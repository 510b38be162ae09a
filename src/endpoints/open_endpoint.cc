#include "endpoints/open_endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "endpoints/file_endpoint.h"
#include "endpoints/nbd/nbd_endpoint.h"
#include "endpoints/null_endpoint.h"
#include "endpoints/pipe_endpoint.h"

namespace nbdcopy {

namespace {

Result<std::unique_ptr<Endpoint>> OpenStdio(Role role) {
  int fd = role == Role::kSource ? STDIN_FILENO : STDOUT_FILENO;
  if (isatty(fd)) {
    return Status::Error(role == Role::kSource ? "-: refusing to read from a terminal"
                                               : "-: refusing to write to a terminal");
  }
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy == -1) return Status::FromErrno("-", errno);
  return std::unique_ptr<Endpoint>(new PipeEndpoint("-", UniqueFd(copy)));
}

Result<std::unique_ptr<Endpoint>> OpenLocal(const std::string& path, Role role,
                                            const OpenFlags& open_flags) {
  int flags = O_CLOEXEC | O_NOCTTY;
  if (role == Role::kSource) {
    flags |= O_RDONLY;
  } else {
    // Read and write, so --verify can read the copy back.
    flags |= O_RDWR;
    struct stat existing;
    if (stat(path.c_str(), &existing) == -1) {
      if (errno != ENOENT || open_flags.must_exist) return Status::FromErrno(path, errno);
      flags |= O_CREAT;
    } else if (S_ISFIFO(existing.st_mode) || S_ISCHR(existing.st_mode) ||
               S_ISSOCK(existing.st_mode)) {
      flags = (flags & ~O_RDWR) | O_WRONLY;  // a FIFO opened O_RDWR would not block
    }
  }
  UniqueFd fd(open(path.c_str(), flags, kNewFileMode));
  if (!fd.valid() && errno == EACCES && (flags & O_RDWR)) {  // write-only file
    fd.reset(open(path.c_str(), (flags & ~O_RDWR) | O_WRONLY, kNewFileMode));
  }
  if (!fd.valid()) return Status::FromErrno(path, errno);
  struct stat st;
  if (fstat(fd.get(), &st) == -1) return Status::FromErrno(path, errno);
  if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
    auto file = FileEndpoint::Create(path, std::move(fd), st, role == Role::kDestination,
                                     open_flags.overlapped_file_io, open_flags.io_uring);
    if (!file.ok()) return file.status();
    return std::unique_ptr<Endpoint>(std::move(file).value());
  }
  if (S_ISDIR(st.st_mode)) return Status::FromErrno(path, EISDIR);
  return std::unique_ptr<Endpoint>(new PipeEndpoint(path, std::move(fd)));
}

}  // namespace

bool OverlapFileIo(EndpointKind other) {
  return other == EndpointKind::kNbdUri || other == EndpointKind::kCommand;
}

Result<std::unique_ptr<Endpoint>> OpenEndpoint(const EndpointSpec& spec, Role role,
                                               const OpenFlags& flags) {
  switch (spec.kind) {
    case EndpointKind::kStdio:
      return OpenStdio(role);
    case EndpointKind::kNull:
      return std::unique_ptr<Endpoint>(new NullEndpoint());
    case EndpointKind::kNbdUri:
    case EndpointKind::kCommand: {
      NbdSettings settings;
      settings.debug = flags.debug;
      settings.dirty_bitmap = flags.dirty_bitmap;
      settings.timeout_seconds = flags.timeout;
      settings.retry = flags.retry;
      settings.notices = flags.notices;
      auto nbd = NbdEndpoint::Connect(spec, role, settings);
      if (!nbd.ok()) return nbd.status();
      return std::unique_ptr<Endpoint>(std::move(nbd).value());
    }
    case EndpointKind::kLocalPath:
      return OpenLocal(spec.text, role, flags);
  }
  return Status::Error(spec.text + ": unknown endpoint kind");
}

}  // namespace nbdcopy
