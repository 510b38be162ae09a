#include "engine/sync_writer.h"

namespace nbdcopy {

Status SyncWriter::WriteRuns(uint64_t offset, std::span<const std::byte> stored) {
  return policy_.ForEachRun(offset, stored,
                            [this](uint64_t run_offset, std::span<const std::byte> run,
                                   RunAction action) { return Apply(run_offset, run, action); });
}

Status SyncWriter::ZeroPiece(uint64_t offset, uint64_t length) {
  RunAction action = policy_.ForZeroPiece();
  stats_.AddRun(action, length);
  if (action == RunAction::kZero) return destination_.Zero(offset, length, plan_.allocated);
  return Status::Ok();
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
