// A FileSystem (base/file_system.h) in memory, for unit tests: files are a
// map from path to text, every call is logged ("read PATH", "replace PATH",
// ...), and one failure can be injected at a step, optionally after part
// of the text was written (a short write). It keeps the real one's
// promises: a failed replace leaves the old text and no ".tmp" file.
// Thread safety: none; one test thread.
#ifndef NBDCOPY_TESTS_SUPPORT_MEMORY_FILE_SYSTEM_H_
#define NBDCOPY_TESTS_SUPPORT_MEMORY_FILE_SYSTEM_H_

#include <errno.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "base/file_system.h"

namespace nbdcopy::fakes {

class MemoryFileSystem final : public FileSystem {
 public:
  using Step = FileError::Step;

  // The next call reaching `step` (on `path`, if not empty) fails with
  // `error`; a kWrite fault first writes `written` bytes (a short write).
  // One-shot.
  struct Fault {
    Fault(Step step, int error, size_t written = 0, std::string path = {})
        : step(step), error(error), written(written), path(std::move(path)) {}
    Step step;
    int error;
    size_t written;
    std::string path;
  };

  std::map<std::string, std::string> files;  // regular files
  std::set<std::string> others;              // FIFOs, devices: not regular
  // What CanonicalPath resolves (a spelling -> its canonical path); any
  // other path cannot be resolved.
  std::map<std::string, std::string> canonical_paths;
  std::string standard_input;
  std::string standard_output;
  std::vector<std::string> log;
  std::optional<Fault> fault;

  FileError ReadWhole(const std::string& path, bool regular_only, std::string* text) override {
    log.push_back("read " + path);
    if (FileError error = Inject(Step::kOpen, path); error.failed()) return error;
    if (others.count(path) != 0) {
      if (regular_only) return FileError{Step::kNotRegular, path, 0};
      *text = "";
      return FileError();
    }
    auto file = files.find(path);
    if (file == files.end()) return FileError{Step::kOpen, path, ENOENT};
    if (FileError error = Inject(Step::kRead, path); error.failed()) return error;
    *text = file->second;
    return FileError();
  }

  FileError ReadStandardInput(std::string* text) override {
    log.push_back("read -");
    if (FileError error = Inject(Step::kRead, "-"); error.failed()) return error;
    *text = standard_input;
    return FileError();
  }

  FileError WriteWhole(const std::string& path, std::string_view text) override {
    log.push_back("write " + path);
    if (FileError error = Inject(Step::kOpen, path); error.failed()) return error;
    return Write(path, text);
  }

  FileError WriteStandardOutput(std::string_view text) override {
    log.push_back("write stdout");
    const size_t before = standard_output.size();
    standard_output += text;
    if (Faulty(Step::kWrite, "stdout")) {
      standard_output.resize(before + std::min(fault->written, text.size()));
    }
    return Inject(Step::kWrite, "stdout");
  }

  FileError ReplaceAtomically(const std::string& path, std::string_view text) override {
    log.push_back("replace " + path);
    const std::string temporary = path + ".tmp";
    FileError error = Inject(Step::kOpen, temporary);
    if (!error.failed()) error = Write(temporary, text);
    if (!error.failed()) error = Inject(Step::kSync, temporary);
    if (!error.failed()) error = Inject(Step::kRename, temporary);
    if (error.failed()) {
      files.erase(temporary);
      return error;
    }
    files[path] = files[temporary];
    files.erase(temporary);
    const std::string directory = "(directory of " + path + ")";
    if (FileError error = Inject(Step::kOpenDirectory, directory); error.failed()) return error;
    return Inject(Step::kSyncDirectory, directory);
  }

  FileError ProbeCreate(const std::string& path) override {
    log.push_back("probe " + path);
    if (FileError error = Inject(Step::kOpen, path); error.failed()) return error;
    files.erase(path);
    return FileError();
  }

  std::optional<std::string> CanonicalPath(const std::string& path) override {
    log.push_back("canonical " + path);
    auto found = canonical_paths.find(path);
    if (found == canonical_paths.end()) return std::nullopt;
    return found->second;
  }

 private:
  bool Faulty(Step step, const std::string& path) const {
    return fault && fault->step == step && (fault->path.empty() || fault->path == path);
  }
  FileError Inject(Step step, const std::string& path) {
    if (!Faulty(step, path)) return FileError();
    const FileError error{step, path, fault->error};
    fault.reset();
    return error;
  }

  // Creates or truncates path and writes text, or its first bytes and
  // fails as the fault says.
  FileError Write(const std::string& path, std::string_view text) {
    std::string& file = files[path];
    file.assign(text);
    if (Faulty(Step::kWrite, path)) file.resize(std::min(fault->written, text.size()));
    return Inject(Step::kWrite, path);
  }
};

}  // namespace nbdcopy::fakes

#endif  // NBDCOPY_TESTS_SUPPORT_MEMORY_FILE_SYSTEM_H_
