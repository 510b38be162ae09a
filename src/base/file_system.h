// The files a run reads or writes whole, besides the copy itself: a
// --ranges list, the --checkpoint file, the --json report and the digest.
// One narrow interface (LevelDB's Env is the model): RealFileSystem() over
// POSIX, and in tests tests/support/memory_file_system.h, which records
// what was done and injects failures. Callers word their own messages from
// a FileError (which step failed, on which file, errno), so that each
// option keeps its words.
// Thread safety: RealFileSystem() may be used from any thread; a call
// touches only the files it names.
#ifndef NBDCOPY_BASE_FILE_SYSTEM_H_
#define NBDCOPY_BASE_FILE_SYSTEM_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace nbdcopy {

// The mode of every file nbdcopy creates (a destination, --blkhash-file,
// --json=FILE, the checkpoint): the umask takes bits away as usual, and
// others never get write access, whatever the umask.
inline constexpr mode_t kNewFileMode = 0664;

// What a call failed at; step kNone: it did not.
struct FileError {
  enum class Step {
    kNone,
    kOpen,           // opening (or creating) `path`
    kStat,           // fstat of `path`
    kNotRegular,     // `path` is no regular file (error is 0)
    kRead,           // reading `path` (EISDIR for a directory)
    kWrite,          // writing or closing `path`; a short write is one
    kSync,           // fsync of `path`
    kRename,         // renaming `path` (the temporary) over the target
    kOpenDirectory,  // opening the directory `path` to sync it
    kSyncDirectory,  // fsync of the directory `path`
  };
  Step step = Step::kNone;
  std::string path;  // the file the step failed on
  int error = 0;     // errno
  bool failed() const { return step != Step::kNone; }
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The whole content of `path` into *text. With regular_only, anything but
  // a regular file is refused without blocking (opened O_NONBLOCK: a FIFO
  // does not hang; a directory is kRead with EISDIR); without, a pipe is
  // read to its end. A missing file is kOpen with ENOENT.
  virtual FileError ReadWhole(const std::string& path, bool regular_only, std::string* text) = 0;
  // Standard input, to its end.
  virtual FileError ReadStandardInput(std::string* text) = 0;

  // Creates `path` (kNewFileMode) or truncates it, and writes text, all of
  // it: a short write is an error (ENOSPC when the system gave none).
  virtual FileError WriteWhole(const std::string& path, std::string_view text) = 0;
  // Writes text, all of it, to standard output and flushes it.
  virtual FileError WriteStandardOutput(std::string_view text) = 0;

  // Replaces `path` atomically and durably: writes path + ".tmp" (created
  // with kNewFileMode, truncated if it exists, a symlink there not
  // followed), fsyncs it, renames it over `path` (a symlink at `path` is
  // replaced) and fsyncs the directory. After a crash at any point, `path`
  // holds the old complete text or the new one. When a step before the
  // rename fails, `path` is untouched and the ".tmp" file removed.
  virtual FileError ReplaceAtomically(const std::string& path, std::string_view text) = 0;

  // Whether a file can be created at `path`: creates it (mode 0600) if
  // missing, then removes it (a stale one too).
  virtual FileError ProbeCreate(const std::string& path) = 0;

  // The absolute path of an existing file with every symlink, "." and ".."
  // resolved (realpath(3)): one spelling for every way of naming it.
  // nullopt when it cannot be resolved (missing, no permission).
  virtual std::optional<std::string> CanonicalPath(const std::string& path) = 0;
};

// The one over POSIX; lives as long as the process.
FileSystem& RealFileSystem();

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_FILE_SYSTEM_H_
