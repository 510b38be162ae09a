// --checkpoint=FILE in one job: what can be refused from the command line,
// the identity of the copy (and the refusal of a checkpoint made for
// another), the ranges a resumed copy leaves alone, and the file kept up
// to date as the engines make ranges durable (engine/checkpointer.h).
//
// The order of a run: Load (before any endpoint is opened) -> Check (both
// endpoints open, nothing written) -> recorded_done() goes into the copy's
// coverage (plan/coverage.h) -> StartBooks (after MakeCopyPlan) -> the
// copy, with checkpointer() -> Finish (after a successful copy: every byte
// done).
// Thread safety: one thread, but checkpointer() is used by every worker.
#ifndef NBDCOPY_JOB_CHECKPOINT_JOB_H_
#define NBDCOPY_JOB_CHECKPOINT_JOB_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/file_system.h"
#include "base/range_set.h"
#include "endpoints/endpoint_spec.h"
#include "engine/checkpointer.h"
#include "engine/salvage.h"
#include "job/checkpoint_file.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"

namespace nbdcopy {

// How often checkpoints are made: every kCheckpointInterval, or once
// kCheckpointBytes more were done (docs/performance.md measured the cost).
// NBDCOPY_CHECKPOINT_SECONDS overrides the interval (tests, tuning;
// job/job_environment.h reads it).
inline constexpr std::chrono::seconds kCheckpointInterval{5};
inline constexpr uint64_t kCheckpointBytes = uint64_t{2} << 30;

class CheckpointJob {
 public:
  // REQUIRES options.checkpoint. Refuses a stream or null: destination and
  // a stream source (CheckCheckpointOperands, job/option_checks.h), reads FILE
  // when it exists (a resume), refuses a FILE that cannot be written and
  // the missing destination of a copy to resume.
  // FILE is read and written through `files`, which must outlive the run.
  static Result<std::unique_ptr<CheckpointJob>> Load(const Options& options,
                                                     const EndpointSpec& source,
                                                     const EndpointSpec& destination,
                                                     FileSystem& files = RealFileSystem());

  // FILE exists and marks ranges done: the destination must already exist,
  // and is neither resized nor assumed to read as zeroes.
  bool resuming() const { return recorded_ && !recorded_->done.empty(); }

  // Both endpoints open, nothing written yet: refuses streams found only
  // now (a FIFO), a checkpoint made for another copy (another source size,
  // content, operands or settings), and a destination that does not hold
  // what the checkpoint says was copied.
  // extra_settings: more identity words (" ranges=DIGEST" for a list);
  // listed: a --ranges list (the destination is checked only inside it).
  [[nodiscard]] Status Check(const Options& options, Endpoint& source, Endpoint& destination,
                             const std::string& source_name, const std::string& destination_name,
                             const std::string& extra_settings = "",
                             const RangeSet* listed = nullptr);

  // What FILE marks done (empty when starting afresh): the copy's coverage
  // leaves it alone.
  const RangeSet& recorded_done() const;
  // What FILE marks bad (--salvage could not read it): copied again.
  const RangeSet& recorded_bad() const;
  // --salvage: what this copy could not read is written to FILE as bad
  // areas ('-'); the recorded ones stay bad until copied. REQUIRES lost
  // outlives the job; before StartBooks.
  void RecordLost(const LostRanges* lost) { lost_ = lost; }

  // After MakeCopyPlan: the books that keep FILE up to date, starting from
  // the done ranges in whole blocks of `alignment` (the plan's: what the
  // copy leaves alone), with a timed checkpoint every `interval`. FILE is
  // first written at the first checkpoint that makes something durable.
  void StartBooks(uint64_t alignment, Clock::duration interval = kCheckpointInterval);

  // Bytes the copy leaves alone as done by an earlier run (after StartBooks).
  uint64_t done_bytes() const { return done_bytes_; }
  Checkpointer* checkpointer() { return checkpointer_.get(); }

  // After a successful copy (the last checkpoint was its flush): FILE says
  // every byte is done.
  [[nodiscard]] Status Finish();

 private:
  CheckpointJob() = default;
  // Writes FILE unless it would say what it already says. Called by the
  // checkpointer one call at a time (its persist lock), and by Finish after.
  [[nodiscard]] Status Persist(const RangeSet& durable);
  [[nodiscard]] Status CheckWritable() const;
  // The files of the identity's local paths (CheckpointIdentity::source_file)
  // that are not known yet, resolved from the current directory.
  void ResolveFiles(CheckpointIdentity* identity) const;
  // CompareIdentity of the recorded identity and this job's.
  [[nodiscard]] Status CompareWithRecorded() const;

  // Which operands are local paths (a file or a block device): the identity
  // knows them by the file too.
  bool local_source_ = false;
  bool local_destination_ = false;

  FileSystem* files_ = nullptr;
  std::string path_;
  std::string option_;  // "--checkpoint=FILE", how messages name it
  std::optional<CheckpointState> recorded_;
  CheckpointIdentity identity_;
  uint64_t done_bytes_ = 0;
  std::unique_ptr<Checkpointer> checkpointer_;
  const LostRanges* lost_ = nullptr;
  std::string last_written_;  // FILE's text as last written or read
};

// The identity's settings word list: what changes the bytes written.
std::string CheckpointSettings(const Options& options);

// A fingerprint of the source cheap enough for every run: the blkhash
// (sha256) of up to 16 blocks of 64 KiB spread over it (all of a small
// source), "blkhash-sha256/64K@N:" + hex.
// salvage (--salvage): each sample's digest instead, "-" for one that
// cannot be read, "blkhash-sha256/64K@N/each:HEX16,-,HEX16..."
// (FingerprintsMatch compares the samples both runs read).
Result<std::string> SourceFingerprint(Endpoint& source, bool salvage = false);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_CHECKPOINT_JOB_H_
