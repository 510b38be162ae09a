// --salvage in one job: the record of what the source could not read
// (engine/salvage.h), which the books fill and --checkpoint's FILE marks
// bad, and what the job says of it: the lines as ranges are found, the
// summary at the end (the job's status, Status::Unreadable: exit status
// 4), the digest that cannot match an expected one, --verify comparing
// the rest, and what a rerun recovered of FILE's bad areas.
// Thread safety: one thread, but lost() is used by every worker.
#ifndef NBDCOPY_JOB_SALVAGE_JOB_H_
#define NBDCOPY_JOB_SALVAGE_JOB_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/range_set.h"
#include "engine/salvage.h"
#include "job/report.h"
#include "nbdcopy/status.h"
#include "plan/coverage.h"

namespace nbdcopy {

class SalvageJob {
 public:
  // source_name: as messages show it; size: the source's. notice: where
  // each "SOURCE: unreadable: ..." line goes (stderr, between frames).
  SalvageJob(std::string source_name, uint64_t size, LostRanges::Notice notice);

  LostRanges* lost() { return &lost_; }

  // The copy ended, however: ranges not told yet are told, and the report
  // lists them all.
  void Finish(JobReport* report);

  // --checksum=ALGO:HEX with bytes lost: a mismatch (exit 3), whatever the
  // digest, which is the rescued image's. OK when nothing was lost.
  [[nodiscard]] Status CheckExpectedChecksum(const std::string& algorithm) const;

  // What --verify compares: `coverage` (may be null) with the lost ranges
  // hashed as zeroes on both sides, unread; null when nothing was lost and
  // coverage was null. *skipped: the bytes not compared.
  std::shared_ptr<const Coverage> VerifyCoverage(std::shared_ptr<const Coverage> coverage,
                                                 uint64_t* skipped) const;

  // The job's end after a copy that finished: OK when nothing was lost,
  // else Status::Unreadable with the summary (bytes, ranges, share of the
  // image; digests: that they are of the rescued image; checkpoint: FILE,
  // which marks them bad for a rerun to retry).
  [[nodiscard]] Status Outcome(bool digests, const std::optional<std::string>& checkpoint) const;

 private:
  LostRanges lost_;
};

// A rerun of a --checkpoint copy whose FILE had bad areas (`earlier_bad`):
// the line that says how much of them this copy read (lost: what it could
// not; empty without --salvage), into *report too; nullopt when FILE had
// none.
std::optional<std::string> RecoveredLine(const std::string& source_name,
                                         const RangeSet& earlier_bad, const RangeSet& lost,
                                         JobReport* report);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_SALVAGE_JOB_H_
