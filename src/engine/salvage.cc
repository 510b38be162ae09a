#include "engine/salvage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace nbdcopy {

bool IsUnreadable(const Status& failed) {
  switch (failed.error_number()) {
    case EIO:
    case ENODATA:
    case EILSEQ:
    case EBADMSG:
      return true;
    default:
      return false;
  }
}

LostRanges::LostRanges(std::string source_name, uint64_t image_size, Notice notice)
    : source_name_(std::move(source_name)), image_size_(image_size), notice_(std::move(notice)) {}

void LostRanges::Add(uint64_t offset, uint64_t length, int error_number, bool readable_before,
                     bool readable_after) {
  MutexLock lock(mutex_);
  lost_.Add(offset, length);
  Pending run{offset + length, error_number, readable_before, readable_after};
  // Join the pending neighbours: one bad area narrowed in several requests.
  if (auto next = pending_.find(run.end); next != pending_.end()) {
    run.end = next->second.end;
    run.readable_after = next->second.readable_after;
    pending_.erase(next);
  }
  if (auto before = pending_.lower_bound(offset); before != pending_.begin()) {
    --before;
    if (before->second.end == offset) {
      offset = before->first;
      run.error_number = before->second.error_number;
      run.readable_before = before->second.readable_before;
      pending_.erase(before);
    }
  }
  if (run.readable_before && run.readable_after) {
    Tell(offset, run);
  } else {
    pending_.emplace(offset, run);
  }
}

void LostRanges::Tell(uint64_t offset, const Pending& run) {
  if (!notice_) return;
  notice_(fmt::format("{}: unreadable: offset {} length {}: {}", source_name_, offset,
                      run.end - offset, std::strerror(run.error_number)));
}

void LostRanges::CountReads(uint64_t reads) {
  MutexLock lock(mutex_);
  reads_ += reads;
}

void LostRanges::Finish() {
  MutexLock lock(mutex_);
  for (const auto& [offset, run] : pending_) Tell(offset, run);
  pending_.clear();
}

RangeSet LostRanges::ranges() const {
  MutexLock lock(mutex_);
  return lost_;
}

uint64_t LostRanges::reads() const {
  MutexLock lock(mutex_);
  return reads_;
}

namespace {

constexpr uint64_t kDefaultSector = 512;
// A failed range of at most this many sectors is scraped, not split: a
// bad area costs 1.25 reads a sector instead of bisection's 2, an
// isolated bad sector a few reads more.
constexpr uint64_t kScrapeSectors = 8;

// One failed request narrowed (salvage.h): the runs it lost, in order.
class Narrowing {
 public:
  struct LostRun {
    uint64_t offset;
    uint64_t end;
    int error_number;
  };

  Narrowing(Endpoint& source, uint64_t offset, std::span<std::byte> buffer)
      : source_(source),
        offset_(offset),
        buffer_(buffer),
        sector_(std::max<uint64_t>(kDefaultSector, source.info().min_block_size)) {}

  // The whole request, known to fail with error_number.
  Status NarrowAll(int error_number) {
    return Narrow(offset_, offset_ + buffer_.size(), true, error_number);
  }
  // Whether the sector before `offset` (after `end`) reads: OK(true),
  // OK(false) when unreadable, a fatal failure otherwise.
  Result<bool> SectorBeforeReads(uint64_t offset) {
    if (offset == 0) return true;
    uint64_t begin = (offset - 1) / sector_ * sector_;
    return Probe(begin, offset);
  }
  Result<bool> SectorAfterReads(uint64_t end) {
    std::optional<uint64_t> size = source_.info().size;
    if (!size || end >= *size) return true;
    return Probe(end, std::min(*size, (end / sector_ + 1) * sector_));
  }

  const std::vector<LostRun>& runs() const { return runs_; }
  uint64_t reads() const { return reads_; }

 private:
  // [begin, end) of the request; known_bad: it fails without being read.
  Status Narrow(uint64_t begin, uint64_t end, bool known_bad, int error_number) {
    if (!known_bad) {
      Status status = ReadAt(begin, buffer_.subspan(begin - offset_, end - begin));
      if (status.ok()) return status;
      if (!IsUnreadable(status)) return status;
      error_number = status.error_number();
    }
    // A few sectors are read one by one (scraped); more are split on a
    // sector boundary near the middle.
    if ((end - 1) / sector_ == begin / sector_) {  // one sector, known to fail
      Lose(begin, end, error_number);
      return Status::Ok();
    }
    if (end - begin <= kScrapeSectors * sector_) return Scrape(begin, end);
    const uint64_t middle = (begin + (end - begin) / 2) / sector_ * sector_;
    const size_t lost_before = runs_.size();
    if (Status status = Narrow(begin, middle, false, error_number); !status.ok()) return status;
    // The left half read whole: the failure is in the right half.
    const bool right_fails = runs_.size() == lost_before;
    return Narrow(middle, end, right_fails, error_number);
  }

  // Each sector of [begin, end) read alone; one that fails is lost.
  Status Scrape(uint64_t begin, uint64_t end) {
    for (uint64_t at = begin; at < end;) {
      const uint64_t next = std::min(end, (at / sector_ + 1) * sector_);
      Status status = ReadAt(at, buffer_.subspan(at - offset_, next - at));
      if (!status.ok() && !IsUnreadable(status)) return status;
      if (!status.ok()) Lose(at, next, status.error_number());
      at = next;
    }
    return Status::Ok();
  }

  Status ReadAt(uint64_t begin, std::span<std::byte> into) {
    ++reads_;
    Result<size_t> got = source_.Read(begin, into);
    return got.ok() ? Status::Ok() : got.status();
  }

  Result<bool> Probe(uint64_t begin, uint64_t end) {
    std::vector<std::byte> scratch(end - begin);
    Status status = ReadAt(begin, scratch);
    if (status.ok()) return true;
    if (IsUnreadable(status)) return false;
    return status;
  }

  void Lose(uint64_t begin, uint64_t end, int error_number) {
    std::memset(buffer_.data() + (begin - offset_), 0, end - begin);
    if (!runs_.empty() && runs_.back().end == begin) {
      runs_.back().end = end;
    } else {
      runs_.push_back(LostRun{begin, end, error_number});
    }
  }

  Endpoint& source_;
  const uint64_t offset_;
  const std::span<std::byte> buffer_;
  const uint64_t sector_;
  std::vector<LostRun> runs_;
  uint64_t reads_ = 0;
};

}  // namespace

Status SalvageRead(Endpoint& source, uint64_t offset, std::span<std::byte> buffer, int error_number,
                   LostRanges& lost) {
  Narrowing narrowing(source, offset, buffer);
  Status status = narrowing.NarrowAll(error_number);
  const uint64_t end = offset + buffer.size();
  std::vector<bool> readable_before, readable_after;
  for (const Narrowing::LostRun& run : narrowing.runs()) {
    if (!status.ok()) break;
    Result<bool> before = run.offset > offset ? true : narrowing.SectorBeforeReads(offset);
    Result<bool> after = run.end < end ? true : narrowing.SectorAfterReads(end);
    if (!before.ok()) status = before.status();
    if (!after.ok()) status = after.status();
    readable_before.push_back(before.ok() && *before);
    readable_after.push_back(after.ok() && *after);
  }
  lost.CountReads(narrowing.reads());
  if (!status.ok()) return status;
  for (size_t i = 0; i < narrowing.runs().size(); ++i) {
    const Narrowing::LostRun& run = narrowing.runs()[i];
    lost.Add(run.offset, run.end - run.offset, run.error_number, readable_before[i],
             readable_after[i]);
  }
  return Status::Ok();
}

}  // namespace nbdcopy
