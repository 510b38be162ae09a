// Block-status replies turned into extents: pure functions over the numbers
// a server sent, with no libnbd handle, so the rules that decide what a copy
// skips can be tested alone.
//
// A server's answer is advice, and a hostile or buggy one may lie. The rules
// here only ever err towards "data, changed": a range is zero or clean only
// when the first reply chunk for its context says so, within the request.
// For an incremental copy (--dirty-bitmap) one request asks two contexts:
// base:allocation says where the zeroes are, qemu:dirty-bitmap:NAME what
// changed; an extent is clean only where the bitmap answered "unchanged".
//
// Thread safety: values; an object is used by one thread at a time.
#ifndef NBDCOPY_NBD_EXTENTS_H_
#define NBDCOPY_NBD_EXTENTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nbdcopy/endpoint.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

inline constexpr char kBaseAllocation[] = "base:allocation";
inline constexpr char kDirtyBitmapPrefix[] = "qemu:dirty-bitmap:";
// Flags of a (length, flags) pair, as the NBD protocol numbers them.
inline constexpr uint32_t kStateZero = 1u << 1;   // base:allocation: reads as zeroes
inline constexpr uint32_t kStateDirty = 1u << 0;  // dirty bitmap: changed since the checkpoint

// Block-status lengths travel as 32-bit fields; stay well inside.
inline constexpr uint64_t kMaxExtentsLength = 1ULL << 31;
// With extended headers (libnbd >= 1.18 and a server that offers them:
// qemu-nbd >= 8.2, nbdkit >= 1.36) they are 64-bit, and one request can
// describe a hole of many TiB: ask for up to this much at once.
inline constexpr uint64_t kMaxWideExtentsLength = 1ULL << 62;
// A server may describe a range a little at a time. Ask again a few times;
// then whatever of kMinDescribed is still undescribed is data, so that a
// server describing a few bytes per reply cannot make every request tiny.
inline constexpr int kExtentsRounds = 16;
inline constexpr uint64_t kMinDescribed = 1ULL << 20;

// Appends extent to *out, merged into the last extent when that one is at
// index `first` or later and alike (same zero and clean).
void AppendExtent(std::vector<Extent>* out, size_t first, const Extent& extent);

// One (length, flags) pair of a reply, as wide block status (extended
// headers) sends it; a narrow reply's uint32_t pairs widen to it.
struct BlockStatusEntry {
  uint64_t length;
  uint64_t flags;
};

// One meta context's answer to a request for [offset, offset + length), as
// contiguous extents from offset. base:allocation sets `zero`, a dirty
// bitmap sets `clean`; the other field stays false.
class ContextExtents {
 public:
  enum class Meaning { kAllocation, kDirtyBitmap };
  ContextExtents(Meaning meaning, uint64_t offset, uint64_t length)
      : meaning_(meaning), next_(offset), end_(offset + length) {}

  // One reply chunk: `entries` holds (length, flags) pairs; an odd last
  // entry is ignored. Only the first chunk counts: each describes the
  // range from its start, so a second one (a protocol violation) would be
  // read as continuing the first. Extents are cut at the end of the
  // request, and a zero-length extent ends the chunk (no progress).
  void AddChunk(std::span<const uint32_t> entries);
  // The same, for a wide reply.
  void AddChunk(std::span<const BlockStatusEntry> entries);

  const std::vector<Extent>& extents() const { return extents_; }
  [[nodiscard]] std::vector<Extent> TakeExtents() && { return std::move(extents_); }

 private:
  // Takes the pairs [0, count) that entry(i) yields.
  template <typename Entry>
  void AddPairs(size_t count, Entry entry);

  Meaning meaning_;
  uint64_t next_;  // where the next extent starts
  uint64_t end_;
  bool answered_ = false;  // a chunk came
  std::vector<Extent> extents_;
};

// Appends to *out the extents of the prefix that both answers describe,
// from offset: zero where `allocation` says so, clean where `dirty` does.
// Empty `allocation` (no answer) counts as all data. Never merges.
// REQUIRES dirty is non-empty; both lists are contiguous from offset (as
// ContextExtents makes them).
void MergeContexts(uint64_t offset, std::vector<Extent> allocation,
                   const std::vector<Extent>& dirty, std::vector<Extent>* out);

// The reply to one block-status request: its chunks, sorted by context.
// Contexts not asked for are ignored.
class BlockStatusReply {
 public:
  // dirty_context: "" or "qemu:dirty-bitmap:NAME", which was asked for too.
  BlockStatusReply(uint64_t offset, uint64_t length, std::string dirty_context)
      : offset_(offset),
        dirty_context_(std::move(dirty_context)),
        allocation_(ContextExtents::Meaning::kAllocation, offset, length),
        dirty_(ContextExtents::Meaning::kDirtyBitmap, offset, length) {}

  void AddChunk(std::string_view context, std::span<const uint32_t> entries);
  void AddChunk(std::string_view context, std::span<const BlockStatusEntry> entries);

  // Call once the reply has ended well: appends its extents to *out
  // (possibly none). false, appending nothing, when a dirty bitmap was asked
  // for and did not answer: that would read as "all clean", never guess it.
  [[nodiscard]] bool Finish(std::vector<Extent>* out) &&;

 private:
  // The context's answer being gathered; nullptr: not asked for.
  ContextExtents* Answering(std::string_view context);

  uint64_t offset_;
  std::string dirty_context_;
  ContextExtents allocation_;
  ContextExtents dirty_;
};

// Asks the server about [offset, offset + length) once, appending what the
// reply describes (a prefix, maybe empty) to *out; on failure appends
// nothing.
using BlockStatusCall =
    std::function<Status(uint64_t offset, uint64_t length, std::vector<Extent>* out)>;

// Endpoint::Extents over block_status: asks about [offset, offset + length)
// (at most max_length: kMaxExtentsLength, or kMaxWideExtentsLength when
// the connection's block status is wide) until the range is described, a reply makes
// no progress or kExtentsRounds replies came; then at least kMinDescribed
// (or the range, if shorter) is described, the rest as data. A failure
// after some progress keeps what was described; a failure or no
// description at all fails, naming endpoint_name.
[[nodiscard]] Status DescribeExtents(const std::string& endpoint_name, uint64_t offset,
                                     uint64_t length, uint64_t max_length,
                                     const BlockStatusCall& block_status, std::vector<Extent>* out);

}  // namespace nbdcopy

#endif  // NBDCOPY_NBD_EXTENTS_H_
