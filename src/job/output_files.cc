#include "job/output_files.h"

#include <fmt/format.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace nbdcopy {

namespace {

// What a path names, to tell two spellings of one file apart from two
// files: its device and inode when it exists, else the absolute path of
// the file it would create (its folder resolved).
struct FileKey {
  bool exists = false;
  bool regular = false;  // a device, FIFO or socket (/dev/null) clashes with nothing
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;

  bool Clashes(const FileKey& other) const {
    if (exists != other.exists) return false;
    if (!exists) return path == other.path;
    return regular && device == other.device && inode == other.inode;
  }
};

FileKey KeyOf(const std::string& path) {
  FileKey key;
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    key.exists = true;
    key.regular = S_ISREG(st.st_mode);
    key.device = st.st_dev;
    key.inode = st.st_ino;
    return key;
  }
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  char resolved[PATH_MAX];
  key.path = (realpath(folder.c_str(), resolved) ? std::string(resolved) : folder) + "/" +
             path.substr(slash == std::string::npos ? 0 : slash + 1);
  return key;
}

struct OutputFile {
  std::string option;  // as messages name it
  std::string path;
};

std::vector<OutputFile> WrittenFiles(const Options& options) {
  std::vector<OutputFile> files;
  if (options.blkhash_file) files.push_back({"--blkhash-file", *options.blkhash_file});
  if (options.checksum_file) files.push_back({"--checksum-file", *options.checksum_file});
  if (options.json && options.json_file) files.push_back({"--json", *options.json_file});
  return files;
}

// A file that cannot be created or replaced: refused now, not after the copy.
Status CheckWritable(const OutputFile& file) {
  struct stat st;
  const std::string& path = file.path;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::FromErrno(file.option + ": " + path, EISDIR);
    if (access(path.c_str(), W_OK) != 0) return Status::FromErrno(file.option + ": " + path, errno);
    return Status::Ok();
  }
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  if (access(folder.c_str(), W_OK | X_OK) != 0) {
    return Status::FromErrno(file.option + ": " + path, errno);
  }
  return Status::Ok();
}

}  // namespace

bool SameRegularFile(const std::string& a, const std::string& b) {
  const FileKey key = KeyOf(a);
  return key.exists && key.Clashes(KeyOf(b));
}

bool NamesStandardOutput(const std::string& path) {
  struct stat out, st;
  return fstat(STDOUT_FILENO, &out) == 0 && stat(path.c_str(), &st) == 0 &&
         out.st_dev == st.st_dev && out.st_ino == st.st_ino;
}

Status CheckOutputFiles(const Options& options, const EndpointSpec& source,
                        const EndpointSpec& destination) {
  const std::vector<OutputFile> files = WrittenFiles(options);
  std::vector<std::pair<std::string, FileKey>> taken;  // what each file already is
  if (source.kind == EndpointKind::kLocalPath) taken.emplace_back("the source", KeyOf(source.text));
  if (destination.kind == EndpointKind::kLocalPath) {
    taken.emplace_back("the destination", KeyOf(destination.text));
  }
  if (options.checkpoint) taken.emplace_back("--checkpoint's file", KeyOf(*options.checkpoint));
  const bool stdout_is_data = destination.kind == EndpointKind::kStdio;
  for (const OutputFile& file : files) {
    // A file that is standard output while something else owns it.
    const bool json_on_stdout = options.json && !options.json_file;
    if ((stdout_is_data || json_on_stdout) && NamesStandardOutput(file.path)) {
      return Status::Error(fmt::format("{}: {}: is standard output, which carries the {}",
                                       file.option, file.path,
                                       stdout_is_data ? "data" : "JSON report"));
    }
    const FileKey key = KeyOf(file.path);
    for (const auto& [what, other] : taken) {
      if (key.Clashes(other)) {
        return Status::Error(fmt::format("{}: {}: is also {} (writing it would destroy that)",
                                         file.option, file.path, what));
      }
    }
    if (Status status = CheckWritable(file); !status.ok()) return status;
    taken.emplace_back(file.option + "'s file", key);
  }
  return Status::Ok();
}

}  // namespace nbdcopy
