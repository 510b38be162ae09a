#include "nbdcopy/buffer_arena.h"

#include <cassert>
#include <cstdlib>
#include <iterator>
#include <new>

namespace nbdcopy {

namespace {

constexpr size_t kPage = 4096;

}  // namespace

void BufferArena::Free::operator()(std::byte* block) const { std::free(block); }

BufferArena::BufferArena(size_t capacity, size_t max_buffers)
    : size_((Rounded(capacity) + max_buffers * kAlignment + kPage - 1) / kPage * kPage) {
  // Uninitialised on purpose: untouched pages cost no memory.
  block_.reset(static_cast<std::byte*>(std::aligned_alloc(kPage, size_)));
  if (!block_) throw std::bad_alloc();
  free_.emplace(0, size_);
}

std::byte* BufferArena::Take(size_t length) {
  const size_t need = Rounded(length);
  // First fit keeps the low end busy and the high end in one piece.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    auto [offset, free_length] = *it;
    if (free_length < need) continue;
    free_.erase(it);
    if (free_length > need) free_.emplace(offset + need, free_length - need);
    taken_ += need;
    return block_.get() + offset;
  }
  return nullptr;
}

void BufferArena::Give(std::byte* buffer, size_t length) {
  size_t offset = static_cast<size_t>(buffer - block_.get());
  size_t span = Rounded(length);
  assert(offset + span <= size_);
  taken_ -= span;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + span) {  // merge with the range after
    span += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {  // and with the one before
      previous->second += span;
      return;
    }
  }
  free_.emplace_hint(next, offset, span);
}

}  // namespace nbdcopy
