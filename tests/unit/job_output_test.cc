// WriteLine through a MemoryFileSystem: the line whole, or an error naming
// the option and the file (a short write is one).
#include "job/job_output.h"

#include <gtest/gtest.h>

#include "support/memory_file_system.h"

namespace nbdcopy {
namespace {

using fakes::MemoryFileSystem;
using Step = FileError::Step;

TEST(JobOutputTest, WriteLineWritesTheLineWholeToFileOrStdout) {
  MemoryFileSystem files;
  files.files["sum"] = "old, longer text\n";
  ASSERT_TRUE(WriteLine("--blkhash-file", "sum", "abc", files).ok());
  EXPECT_EQ(files.files.at("sum"), "abc\n");
  ASSERT_TRUE(WriteLine("--json", std::nullopt, "{}", files).ok());
  EXPECT_EQ(files.standard_output, "{}\n");
}

TEST(JobOutputTest, AShortWriteIsAFailure) {
  MemoryFileSystem files;
  files.fault = MemoryFileSystem::Fault{Step::kWrite, ENOSPC, 2};
  EXPECT_EQ(WriteLine("--json", "report.json", "{\"a\": 1}", files).message(),
            "--json: report.json: No space left on device");
  EXPECT_EQ(files.files.at("report.json"), "{\"");
  files.fault = MemoryFileSystem::Fault{Step::kWrite, EPIPE, 1};
  EXPECT_EQ(WriteLine("--blkhash", std::nullopt, "abc", files).message(),
            "--blkhash: stdout: Broken pipe");
  files.fault = MemoryFileSystem::Fault{Step::kOpen, EACCES};
  EXPECT_EQ(WriteLine("--json", "ro.json", "{}", files).message(),
            "--json: ro.json: Permission denied");
}

}  // namespace
}  // namespace nbdcopy
