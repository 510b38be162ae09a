#include "engine/sync_writer.h"

#include "nbdcopy/cancel.h"

namespace nbdcopy {

void SyncWriter::PaceRead(uint64_t bytes) {
  if (rate_) rate_->Acquire(bytes, CancelRequested);
}

Status SyncWriter::WriteData(uint64_t offset, std::span<const std::byte> data,
                             std::span<const std::byte> stored) {
  if (blkhash_ != nullptr) blkhash_->Data(data);
  Status status =
      policy_.ForEachRun(offset, stored,
                         [this](uint64_t run_offset, std::span<const std::byte> run,
                                RunAction action) { return Apply(run_offset, run, action); });
  if (status.ok()) Done(data.size());
  return status;
}

Status SyncWriter::Rewrite(uint64_t offset, std::span<const std::byte> data) {
  return policy_.ForEachRun(offset, data,
                            [this](uint64_t run_offset, std::span<const std::byte> run,
                                   RunAction action) { return Apply(run_offset, run, action); });
}

Status SyncWriter::ZeroPiece(uint64_t offset, uint64_t length) {
  if (blkhash_ != nullptr) blkhash_->Zeroes(length);
  RunAction action = policy_.ForZeroPiece();
  stats_.AddRun(action, length);
  if (action == RunAction::kZero) {
    Status status = destination_.Zero(offset, length, plan_.allocated);
    if (!status.ok()) return status;
  }
  Done(length);
  return Status::Ok();
}

void SyncWriter::Done(uint64_t bytes) {
  copied_ += bytes;
  progress_.Add(bytes);
}

Status SyncWriter::Apply(uint64_t offset, std::span<const std::byte> run, RunAction action) {
  stats_.AddRun(action, run.size());
  switch (action) {
    case RunAction::kWrite:
      return destination_.Write(offset, run);
    case RunAction::kZero:
      return destination_.Zero(offset, run.size(), plan_.allocated);
    case RunAction::kSkip:
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace nbdcopy
