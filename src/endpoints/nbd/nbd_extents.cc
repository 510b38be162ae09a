#include "endpoints/nbd/nbd_extents.h"

#include <libnbd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace nbdcopy {

static_assert(kStateZero == LIBNBD_STATE_ZERO);

void AppendExtent(std::vector<Extent>* out, size_t first, const Extent& extent) {
  if (out->size() > first && out->back().zero == extent.zero && out->back().clean == extent.clean) {
    out->back().length += extent.length;
  } else {
    out->push_back(extent);
  }
}

template <typename Entry>
void ContextExtents::AddPairs(size_t count, Entry entry) {
  if (std::exchange(answered_, true)) return;
  for (size_t i = 0; i < count && next_ < end_; ++i) {
    const BlockStatusEntry pair = entry(i);
    uint64_t length = std::min(pair.length, end_ - next_);
    if (length == 0) break;  // No progress: leave the rest undescribed.
    Extent extent{.offset = next_, .length = length};
    if (meaning_ == Meaning::kDirtyBitmap) {
      extent.clean = (pair.flags & kStateDirty) == 0;
    } else {
      extent.zero = (pair.flags & kStateZero) != 0;
    }
    AppendExtent(&extents_, 0, extent);
    next_ += length;
  }
}

void ContextExtents::AddChunk(std::span<const uint32_t> entries) {
  AddPairs(entries.size() / 2, [entries](size_t i) {
    return BlockStatusEntry{entries[2 * i], entries[2 * i + 1]};
  });
}

void ContextExtents::AddChunk(std::span<const BlockStatusEntry> entries) {
  AddPairs(entries.size(), [entries](size_t i) { return entries[i]; });
}

void MergeContexts(uint64_t offset, std::vector<Extent> allocation,
                   const std::vector<Extent>& dirty, std::vector<Extent>* out) {
  const uint64_t dirty_end = dirty.back().offset + dirty.back().length;
  if (allocation.empty()) allocation.push_back(Extent{offset, dirty_end - offset, false});
  const uint64_t end = std::min(dirty_end, allocation.back().offset + allocation.back().length);
  size_t a = 0, d = 0;
  for (uint64_t position = offset; position < end;) {
    uint64_t next = std::min(
        {allocation[a].offset + allocation[a].length, dirty[d].offset + dirty[d].length, end});
    out->push_back(Extent{.offset = position,
                          .length = next - position,
                          .zero = allocation[a].zero,
                          .clean = dirty[d].clean});
    position = next;
    if (allocation[a].offset + allocation[a].length == position) ++a;
    if (dirty[d].offset + dirty[d].length == position) ++d;
  }
}

ContextExtents* BlockStatusReply::Answering(std::string_view context) {
  if (context == kBaseAllocation) return &allocation_;
  if (!dirty_context_.empty() && context == dirty_context_) return &dirty_;
  return nullptr;
}

void BlockStatusReply::AddChunk(std::string_view context, std::span<const uint32_t> entries) {
  if (ContextExtents* answer = Answering(context)) answer->AddChunk(entries);
}

void BlockStatusReply::AddChunk(std::string_view context,
                                std::span<const BlockStatusEntry> entries) {
  if (ContextExtents* answer = Answering(context)) answer->AddChunk(entries);
}

bool BlockStatusReply::Finish(std::vector<Extent>* out) && {
  std::vector<Extent> allocation = std::move(allocation_).TakeExtents();
  if (dirty_context_.empty()) {
    out->insert(out->end(), allocation.begin(), allocation.end());
    return true;
  }
  if (dirty_.extents().empty()) return false;
  MergeContexts(offset_, std::move(allocation), dirty_.extents(), out);
  return true;
}

Status DescribeExtents(const std::string& endpoint_name, uint64_t offset, uint64_t length,
                       uint64_t max_length, const BlockStatusCall& block_status,
                       std::vector<Extent>* out) {
  const uint64_t end = offset + std::min(length, max_length);
  const size_t first = out->size();
  uint64_t position = offset;
  for (int round = 0; round < kExtentsRounds && position < end; ++round) {
    Status status = block_status(position, end - position, out);
    if (!status.ok()) {
      if (out->size() == first) return status;
      break;  // what was described stands
    }
    uint64_t described = out->size() == first ? position : out->back().offset + out->back().length;
    if (described == position) break;  // no progress
    position = described;
  }
  if (out->size() == first) {
    return IoError(endpoint_name, "extents", offset, end - offset, "server described nothing");
  }
  // (Data, and never clean: copying it is always right.)
  uint64_t minimum_end = std::min(end, offset + kMinDescribed);
  if (position < minimum_end) {
    AppendExtent(out, first, Extent{.offset = position, .length = minimum_end - position});
  }
  return Status::Ok();
}

}  // namespace nbdcopy
