#include "engine/copy_books.h"

#include <vector>

#include "nbdcopy/cancel.h"

namespace nbdcopy {

CopyBooks::CopyBooks(const CopyPlan& plan, ProgressSink& progress, Blkhash* blkhash,
                     SequentialBlkhash* sequential, Checkpointer* checkpointer,
                     OrderedChecksum* checksum, LostRanges* lost)
    : plan_(plan),
      progress_(progress),
      blkhash_(blkhash),
      sequential_(sequential),
      checkpointer_(checkpointer),
      checksum_(checksum),
      lost_(lost) {
  if (plan.rate > 0) rate_.emplace(plan.rate);
}

void CopyBooks::StopCounting() {
  counting_.store(false, std::memory_order_relaxed);
  if (checksum_ != nullptr) checksum_->Abandon();
}

Status CannotCopyAgain(const Endpoint& destination) {
  return Status::Error(
      destination.name() +
      ": the connection was re-established, and the server may have lost writes it had not "
      "flushed: a stream source cannot be read again to write them");
}

Status CopyBooks::EndRound(Endpoint& destination, WorkMap* map, bool stopped, bool* again) {
  *again = false;
  if (checkpointer_ == nullptr) {
    if (stopped) return Status::Ok();
    return plan_.flush ? destination.Flush() : destination.Settle();
  }
  // The loops handled the losses they saw; this one is the flush's own.
  uint64_t seen = destination.reconnections();
  Status status = checkpointer_->Checkpoint(destination);
  if (stopped || !status.ok()) return status;
  RangeSet lost = checkpointer_->ToCopyAgain(destination, &seen);
  if (lost.empty()) return Status::Ok();
  if (map == nullptr) return CannotCopyAgain(destination);
  map->CopyAgain(lost);
  *again = true;
  return Status::Ok();
}

Bookkeeper::Bookkeeper(CopyBooks& books, const Endpoint& destination, bool opened_mid_copy)
    : books_(books),
      returns_(books.checksum_ != nullptr ? std::make_unique<OrderedChecksum::Returns>() : nullptr),
      vouches_(!opened_mid_copy),
      seen_reconnections_(destination.reconnections()) {}

Clock::duration Bookkeeper::ReadWait(uint64_t length) {
  return books_.rate_ ? books_.rate_->TryAcquire(length) : Clock::duration::zero();
}

void Bookkeeper::AwaitRead(uint64_t length) {
  if (books_.rate_) books_.rate_->Acquire(length, CancelRequested);
}

uint64_t Bookkeeper::Started() const {
  return books_.checkpointer_ != nullptr ? books_.checkpointer_->epoch() : 0;
}

bool Bookkeeper::FeedBlkhash(const Piece& piece, uint64_t offset, std::span<const std::byte> data) {
  if (piece.kind == PieceKind::kCopyAgain) return false;
  if (books_.blkhash_ != nullptr) {
    books_.blkhash_->AddData(offset / books_.blkhash_->block_size(), data);
  } else if (books_.sequential_ != nullptr) {
    books_.sequential_->Data(data);
  }
  return true;
}

void Bookkeeper::Read(const Piece& piece, uint64_t offset, std::span<const std::byte> data) {
  if (FeedBlkhash(piece, offset, data) && books_.checksum_ != nullptr) {
    books_.checksum_->AddData(offset, data, nullptr, 0);
  }
}

bool Bookkeeper::ReadKept(const Piece& piece, uint64_t offset, std::span<const std::byte> data,
                          uint64_t tag) {
  if (!FeedBlkhash(piece, offset, data) || books_.checksum_ == nullptr) return false;
  books_.checksum_->AddData(offset, data, returns_.get(), tag);
  return true;
}

Status Bookkeeper::Rescue(Endpoint& source, const Piece& piece, uint64_t offset,
                          std::span<std::byte> data, Status failed) {
  if (books_.lost_ == nullptr || piece.kind == PieceKind::kHashOnly || !IsUnreadable(failed)) {
    return failed;
  }
  return SalvageRead(source, offset, data, failed.error_number(), *books_.lost_);
}

void Bookkeeper::Zeroes(const Piece& piece) {
  if (books_.checksum_ != nullptr) books_.checksum_->AddZeroes(piece.offset, piece.length);
  if (books_.sequential_ != nullptr) books_.sequential_->Zeroes(piece.length);
  if (books_.blkhash_ == nullptr) return;
  Blkhash& hash = *books_.blkhash_;
  const uint64_t block = hash.block_size();
  hash.AddZeroBlocks(piece.offset / block, piece.length / block);
  if (uint64_t tail = piece.length % block; tail > 0) {  // the short last block
    std::vector<std::byte> zeroes(tail);
    hash.AddDigest(piece.end() / block, hash.BlockDigest(zeroes));
  }
}

void Bookkeeper::Done(PieceKind kind, uint64_t offset, uint64_t length, uint64_t started,
                      uint64_t written) {
  if (kind != PieceKind::kCopyAgain && books_.counting_.load(std::memory_order_relaxed)) {
    books_.progress_.Add(length);
  }
  if (books_.checkpointer_ == nullptr) return;
  // Completions mostly arrive in order: a run of them is told at once.
  if (gathered_length_ > 0 && gathered_epoch_ == started &&
      gathered_offset_ + gathered_length_ == offset && gathered_length_ < kMostGathered) {
    gathered_length_ += length;
    gathered_written_ += written;
    return;
  }
  Tell();
  gathered_offset_ = offset;
  gathered_length_ = length;
  gathered_epoch_ = started;
  gathered_written_ = written;
}

void Bookkeeper::Tell() {
  if (gathered_length_ == 0) return;
  books_.checkpointer_->Completed(gathered_offset_, gathered_length_, gathered_epoch_,
                                  gathered_written_);
  gathered_length_ = 0;
}

Status Bookkeeper::Between(Endpoint& destination, WorkMap& map, bool stopping, bool* again) {
  // A stopping copy (a failure, a signal) leaves gaps the checksum would
  // wait for: it gives the buffers it holds back.
  if (stopping && books_.checksum_ != nullptr) books_.checksum_->Abandon();
  Checkpointer* checkpointer = books_.checkpointer_;
  if (checkpointer == nullptr) return Status::Ok();
  auto copy_again = [&] {
    RangeSet ranges = checkpointer->ToCopyAgain(destination, &seen_reconnections_);
    if (ranges.empty()) return;
    map.CopyAgain(ranges);
    *again = true;
  };
  const bool due = !stopping && checkpointer->Due();
  if (due) Tell();  // so that the checkpoint includes it (whoever makes it)
  // A loss first: a flush after it must not vouch for what it lost.
  copy_again();
  if (!due || !vouches_) return Status::Ok();
  Status status = checkpointer->Checkpoint(destination);
  copy_again();  // a loss the flush itself met
  return status;
}

Status Bookkeeper::NothingLost(const Endpoint& destination) const {
  return destination.reconnections() == seen_reconnections_ ? Status::Ok()
                                                            : CannotCopyAgain(destination);
}

Status Bookkeeper::AtEnd(Endpoint& destination, WorkMap& map, bool stopping, bool* again) {
  Tell();  // (nothing is gathered without a checkpointer)
  return Between(destination, map, stopping, again);
}

}  // namespace nbdcopy
