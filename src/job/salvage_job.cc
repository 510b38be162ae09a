#include "job/salvage_job.h"

#include <fmt/format.h>

#include <utility>

namespace nbdcopy {

namespace {

std::string Plural(uint64_t count, const char* word) {
  return fmt::format("{} {}{}", count, word, count == 1 ? "" : "s");
}

// "0.0977% of 1073741824 bytes": what share of the image.
std::string Share(uint64_t bytes, uint64_t size) {
  const double percent =
      size > 0 ? 100.0 * static_cast<double>(bytes) / static_cast<double>(size) : 0.0;
  return fmt::format("{:.3g}% of {} bytes", percent, size);
}

}  // namespace

SalvageJob::SalvageJob(std::string source_name, uint64_t size, LostRanges::Notice notice)
    : lost_(std::move(source_name), size, std::move(notice)) {}

void SalvageJob::Finish(JobReport* report) {
  lost_.Finish();
  JobReport::Unreadable unreadable;
  for (const RangeSet::Range& run : lost_.ranges().Runs()) {
    unreadable.ranges.emplace_back(run.offset, run.length);
    unreadable.bytes += run.length;
  }
  unreadable.reads = lost_.reads();
  report->unreadable = std::move(unreadable);
}

Status SalvageJob::CheckExpectedChecksum(const std::string& algorithm) const {
  const RangeSet lost = lost_.ranges();
  if (lost.empty()) return Status::Ok();
  return Status::DigestMismatch(fmt::format(
      "--checksum: {}: {} could not be read (--salvage): the {} digest is of the rescued image, "
      "with zeroes for them, not of the source",
      lost_.source_name(), Plural(lost.bytes(), "byte"), algorithm));
}

std::shared_ptr<const Coverage> SalvageJob::VerifyCoverage(std::shared_ptr<const Coverage> coverage,
                                                           uint64_t* skipped) const {
  const RangeSet lost = lost_.ranges();
  *skipped = lost.bytes();
  if (lost.empty()) return coverage;
  auto skipping = std::make_shared<Coverage>(coverage ? *coverage : Coverage());
  skipping->unlisted.Add(lost);
  skipping->unlisted_as_zero = true;
  return skipping;
}

Status SalvageJob::Outcome(bool digests, const std::optional<std::string>& checkpoint) const {
  const RangeSet lost = lost_.ranges();
  if (lost.empty()) return Status::Ok();
  std::string summary = fmt::format(
      "{}: {} unreadable in {} ({}), written as zeroes: the destination is a rescued image, not a "
      "copy",
      lost_.source_name(), Plural(lost.bytes(), "byte"), Plural(lost.size(), "range"),
      Share(lost.bytes(), lost_.image_size()));
  if (digests) summary += "; the digests are of the rescued image";
  if (checkpoint)
    summary +=
        fmt::format("; --checkpoint={} marks them bad: run again to retry them", *checkpoint);
  return Status::Unreadable(std::move(summary));
}

std::optional<std::string> RecoveredLine(const std::string& source_name,
                                         const RangeSet& earlier_bad, const RangeSet& lost,
                                         JobReport* report) {
  if (earlier_bad.empty()) return std::nullopt;
  RangeSet recovered = earlier_bad;
  recovered.Remove(lost);
  report->bad_area_bytes = earlier_bad.bytes();
  report->recovered_bytes = recovered.bytes();
  return fmt::format("{}: recovered {} of the {} in bad areas ({} still unreadable)", source_name,
                     Plural(recovered.bytes(), "byte"), Plural(earlier_bad.bytes(), "byte"),
                     Plural(earlier_bad.bytes() - recovered.bytes(), "byte"));
}

}  // namespace nbdcopy
