// Direct writes to a block device (file_endpoint_direct.cc), on a real loop
// device over a temporary file: root only, skipped elsewhere.
#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "endpoints/file_endpoint.h"

namespace nbdcopy {
namespace {

constexpr uint64_t kDeviceSize = 4 * 1024 * 1024;

// A loop device over a new temporary file of kDeviceSize bytes, detached
// when the last descriptor of it closes.
class LoopDevice {
 public:
  // Empty path(): this machine cannot (not root, no loop devices).
  LoopDevice() {
    if (geteuid() != 0) return;
    char backing_name[] = "/tmp/nbdcopy-direct-test.XXXXXX";
    UniqueFd backing(mkstemp(backing_name));
    if (!backing.valid()) return;
    unlink(backing_name);
    if (ftruncate(backing.get(), kDeviceSize) != 0) return;
    UniqueFd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
    if (!control.valid()) return;
    // Another test (or losetup) may take the free device first.
    std::string path;
    UniqueFd device;
    for (int attempt = 0; attempt < 20 && !device.valid(); ++attempt) {
      int number = ioctl(control.get(), LOOP_CTL_GET_FREE);
      if (number < 0) return;
      path = "/dev/loop" + std::to_string(number);
      device.reset(open(path.c_str(), O_RDWR | O_CLOEXEC));
      if (device.valid() && ioctl(device.get(), LOOP_SET_FD, backing.get()) != 0) {
        if (errno != EBUSY) return;
        device.reset();
      }
    }
    if (!device.valid()) return;
    loop_info64 info{};
    info.lo_flags = LO_FLAGS_AUTOCLEAR;
    ioctl(device.get(), LOOP_SET_STATUS64, &info);
    path_ = path;
    holder_ = std::move(device);
  }

  const std::string& path() const { return path_; }

  // The device opened as nbdcopy opens a destination.
  std::unique_ptr<FileEndpoint> OpenDestination() const {
    UniqueFd fd(open(path_.c_str(), O_RDWR | O_CLOEXEC));
    EXPECT_TRUE(fd.valid()) << path_ << ": " << std::strerror(errno);
    struct stat st;
    EXPECT_EQ(fstat(fd.get(), &st), 0);
    auto endpoint = FileEndpoint::Create(path_, std::move(fd), st, true, false);
    EXPECT_TRUE(endpoint.ok()) << endpoint.status().message();
    return std::move(endpoint).value();
  }

  // What the device holds, read past any page cache.
  std::vector<std::byte> Contents(uint64_t offset, size_t length) const {
    UniqueFd fd(open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    const uint64_t start = offset / 4096 * 4096;
    const size_t aligned = (offset - start + length + 4095) / 4096 * 4096;
    void* memory = nullptr;
    EXPECT_EQ(posix_memalign(&memory, 4096, aligned), 0);
    std::unique_ptr<std::byte, decltype(&std::free)> buffer(static_cast<std::byte*>(memory),
                                                            &std::free);
    std::vector<std::byte> out;
    EXPECT_EQ(pread(fd.get(), buffer.get(), aligned, static_cast<off_t>(start)),
              static_cast<ssize_t>(aligned));
    out.assign(buffer.get() + (offset - start), buffer.get() + (offset - start) + length);
    return out;
  }

  void Fill(std::byte value) const {
    UniqueFd fd(open(path_.c_str(), O_WRONLY | O_CLOEXEC));
    std::vector<std::byte> bytes(kDeviceSize, value);
    ASSERT_EQ(pwrite(fd.get(), bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    ASSERT_EQ(fsync(fd.get()), 0);
  }

 private:
  std::string path_;
  UniqueFd holder_;
};

// How many of this process's descriptors are open on `path` with O_DIRECT.
int DirectDescriptorsOn(const std::string& path) {
  int count = 0;
  struct CloseDir {
    void operator()(DIR* dir) const { closedir(dir); }
  };
  std::unique_ptr<DIR, CloseDir> dir(opendir("/proc/self/fd"));
  while (dirent* entry = readdir(dir.get())) {
    std::string fd_path = std::string("/proc/self/fd/") + entry->d_name;
    char target[256] = {};
    if (readlink(fd_path.c_str(), target, sizeof target - 1) <= 0 || path != target) continue;
    std::ifstream info(std::string("/proc/self/fdinfo/") + entry->d_name);
    std::string key, value;
    while (info >> key >> value) {
      if (key == "flags:" && (std::strtoul(value.c_str(), nullptr, 8) & O_DIRECT) != 0) ++count;
    }
  }
  return count;
}

std::vector<std::byte> Bytes(size_t length, unsigned seed) {
  std::vector<std::byte> bytes(length);
  for (size_t i = 0; i < length; ++i) bytes[i] = std::byte((i * 131 + seed) & 0xff);
  return bytes;
}

// Runs StartWrite through the ring and waits for its completion.
Status WriteThroughRing(FileEndpoint& endpoint, uint64_t offset,
                        std::span<const std::byte> data) {
  endpoint.StartWrite(offset, data, 7);
  std::vector<Completion> done;
  while (done.empty()) {
    endpoint.TakeCompletions(&done);
    if (!done.empty()) break;
    PollInterest interest = endpoint.poll_interest();
    pollfd fd{interest.fd, interest.events, 0};
    poll(&fd, 1, 1000);
  }
  EXPECT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].tag, 7u);
  return done[0].status;
}

class FileEndpointDirectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_.path().empty()) GTEST_SKIP() << "needs root and a free loop device";
    device_.Fill(std::byte{0xee});
    // Direct writes come with the ring; a loop device takes O_DIRECT.
    if (!Uring::Create(8).ok()) GTEST_SKIP() << "no io_uring here";
    endpoint_ = device_.OpenDestination();
    ASSERT_TRUE(endpoint_->info().direct_writes);
  }

  LoopDevice device_;
  std::unique_ptr<FileEndpoint> endpoint_;
};

TEST_F(FileEndpointDirectTest, ABlockDeviceDestinationWritesThroughAnODirectDescriptor) {
  EXPECT_TRUE(endpoint_->info().overlapped_io);  // direct writes need several in flight
  EXPECT_EQ(DirectDescriptorsOn(device_.path()), 1);
  auto connected = endpoint_->Connect();
  ASSERT_TRUE(connected.ok()) << connected.status().message();
  EXPECT_TRUE((*connected)->info().direct_writes);
  EXPECT_EQ(DirectDescriptorsOn(device_.path()), 2);
  std::vector<std::byte> data = Bytes(64 * 1024, 1);
  ASSERT_TRUE((*connected)->Write(128 * 1024, data).ok());
  EXPECT_EQ(device_.Contents(128 * 1024, data.size()), data);
}

TEST_F(FileEndpointDirectTest, AlignedWritesReachTheDeviceWithAndWithoutTheRing) {
  void* memory = nullptr;
  ASSERT_EQ(posix_memalign(&memory, 4096, 256 * 1024), 0);
  std::unique_ptr<std::byte, decltype(&std::free)> buffer(static_cast<std::byte*>(memory),
                                                          &std::free);
  std::vector<std::byte> first = Bytes(256 * 1024, 2);
  std::memcpy(buffer.get(), first.data(), first.size());
  ASSERT_TRUE(endpoint_->Write(512, {buffer.get(), first.size()}).ok());
  EXPECT_EQ(device_.Contents(512, first.size()), first);
  std::vector<std::byte> second = Bytes(256 * 1024, 3);
  std::memcpy(buffer.get(), second.data(), second.size());
  Status status = WriteThroughRing(*endpoint_, 1024 * 1024, {buffer.get(), second.size()});
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(device_.Contents(1024 * 1024, second.size()), second);
  // Nothing around them changed.
  EXPECT_EQ(device_.Contents(0, 512), std::vector<std::byte>(512, std::byte{0xee}));
}

// Offsets, lengths and buffers off the sector: the bounce buffer, which
// keeps the other bytes of the sectors it covers in part.
TEST_F(FileEndpointDirectTest, WritesOffTheSectorKeepTheRestOfTheirSectors) {
  std::vector<std::byte> source = Bytes(5000, 4);
  const std::span<const std::byte> odd(source.data() + 1, 3001);  // an odd address too
  ASSERT_TRUE(endpoint_->Write(700, odd).ok());
  Status status = WriteThroughRing(*endpoint_, 20000 + 3, odd);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<std::byte> expected(32768, std::byte{0xee});
  std::copy(odd.begin(), odd.end(), expected.begin() + 700);
  std::copy(odd.begin(), odd.end(), expected.begin() + 20003);
  EXPECT_EQ(device_.Contents(0, expected.size()), expected);
}

TEST_F(FileEndpointDirectTest, WithinOneSectorAndTheDevicesLastBytes) {
  std::vector<std::byte> small = Bytes(100, 5);
  ASSERT_TRUE(endpoint_->Write(4096 + 10, small).ok());
  ASSERT_TRUE(endpoint_->Write(kDeviceSize - 100, small).ok());
  std::vector<std::byte> sector(512, std::byte{0xee});
  std::copy(small.begin(), small.end(), sector.begin() + 10);
  EXPECT_EQ(device_.Contents(4096, 512), sector);
  std::vector<std::byte> last(512, std::byte{0xee});
  std::copy(small.begin(), small.end(), last.end() - 100);
  EXPECT_EQ(device_.Contents(kDeviceSize - 512, 512), last);
}

TEST_F(FileEndpointDirectTest, ZeroesAndBufferedReadsSeeTheDirectWrites) {
  std::vector<std::byte> data = Bytes(64 * 1024, 6);
  std::vector<std::byte> read_back(data.size());
  // A buffered read first, so the page cache holds the old bytes.
  ASSERT_TRUE(endpoint_->Read(0, read_back).ok());
  ASSERT_TRUE(endpoint_->Write(0, data).ok());
  ASSERT_TRUE(endpoint_->Read(0, read_back).ok());
  EXPECT_EQ(read_back, data);
  ASSERT_TRUE(endpoint_->Zero(4096, 8192, false).ok());
  ASSERT_TRUE(endpoint_->Read(0, read_back).ok());
  std::fill(data.begin() + 4096, data.begin() + 4096 + 8192, std::byte{0});
  EXPECT_EQ(read_back, data);
  EXPECT_EQ(device_.Contents(0, data.size()), data);
}

}  // namespace
}  // namespace nbdcopy
