// One worker's read buffers, carved from a single block whose size is the
// most data the worker may have in flight. Buffers are exactly as long as
// their request (rounded up to a cache line), so memory follows the bytes
// in flight, not the number of requests: sixty-four 4 KiB reads hold 256 KiB,
// where a pool of request-size buffers would in time touch 64 MiB.
//
// The block is allocated once and left untouched until used, so only the
// pages requests have filled count towards the process's memory. A block of
// 2 MiB or more is offered transparent huge pages (one page fault per 2 MiB
// touched, not 512).
//
// Thread safety: none; each worker owns one.
#ifndef NBDCOPY_BUFFER_ARENA_H_
#define NBDCOPY_BUFFER_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace nbdcopy {

class BufferArena {
 public:
  static constexpr size_t kAlignment = 64;

  // capacity: the most bytes buffers may hold at once (before rounding).
  // max_buffers: the most buffers at once, for the rounding's slack.
  BufferArena(size_t capacity, size_t max_buffers);

  // A buffer of length bytes, or nullptr when no free range is that long
  // (the caller waits for buffers to come back; an empty arena always has
  // room for up to capacity bytes). REQUIRES length > 0.
  std::byte* Take(size_t length);

  // REQUIRES buffer came from Take(length) and is not given back yet.
  void Give(std::byte* buffer, size_t length);

  size_t bytes_taken() const { return taken_; }

 private:
  static size_t Rounded(size_t length) {
    return (length + kAlignment - 1) / kAlignment * kAlignment;
  }

  struct Free {
    void operator()(std::byte* block) const;
  };

  struct Range {
    size_t offset;
    size_t length;
  };

  size_t size_;
  std::unique_ptr<std::byte, Free> block_;
  // Sorted by offset, never adjacent; at most one more range than buffers
  // out, so reserved once and never reallocated: Take and Give allocate
  // nothing.
  std::vector<Range> free_;
  size_t taken_ = 0;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_BUFFER_ARENA_H_
