#include "job/copy_and_hash.h"

#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "endpoints/null_endpoint.h"
#include "endpoints/prefix_endpoint.h"
#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "hash/blkhash.h"
#include "hash/ordered_checksum.h"

namespace nbdcopy {

namespace {

void PrintStats(const CopyStats& stats) {
  std::fprintf(stderr,
               "nbdcopy: workers=%u max_requests_in_flight=%u max_bytes_in_flight=%llu "
               "read=%llu written=%llu zeroed=%llu skipped=%llu cloned=%llu maps=%llu extents=%llu "
               "unmapped=%llu\n",
               stats.workers, stats.max_requests_in_flight,
               static_cast<unsigned long long>(stats.max_bytes_in_flight),
               static_cast<unsigned long long>(stats.bytes_read),
               static_cast<unsigned long long>(stats.bytes_written),
               static_cast<unsigned long long>(stats.bytes_zeroed),
               static_cast<unsigned long long>(stats.bytes_skipped),
               static_cast<unsigned long long>(stats.bytes_cloned),
               static_cast<unsigned long long>(stats.map.windows_asked),
               static_cast<unsigned long long>(stats.map.extents),
               static_cast<unsigned long long>(stats.map.bytes_unasked));
  for (const std::string& failure : stats.failed_connections) {
    std::fprintf(stderr, "nbdcopy: %s\n", failure.c_str());
  }
}

}  // namespace

Result<Digests> CopyAndHash(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                            Progress& progress, const DigestSpecs& specs, uint64_t* length,
                            CopyStats* stats, Checkpointer* checkpointer, LostRanges* lost) {
  std::unique_ptr<Blkhash> hash;
  if (specs.blkhash != nullptr) {
    auto created = Blkhash::Create(*specs.blkhash);
    if (!created.ok()) return created.status();
    hash = std::move(created).value();
  }
  std::unique_ptr<OrderedChecksum> checksum;
  if (specs.checksum != nullptr) {
    auto created = OrderedChecksum::Create(specs.checksum->algorithm);
    if (!created.ok()) return created.status();
    checksum = std::move(created).value();
  }
  // The synchronous engine hashes in image order (a stream's chunks end
  // anywhere); the parallel one by block, in any order.
  std::optional<SequentialBlkhash> sequential;
  if (hash && plan.synchronous) sequential.emplace(*hash);
  CopyBooks books(plan, progress, sequential ? nullptr : hash.get(),
                  sequential ? &*sequential : nullptr, checkpointer, checksum.get(), lost);
  Status status = plan.synchronous ? SyncCopy(plan, source, destination, books, length, stats)
                                   : ParallelCopy(plan, source, destination, books, stats);
  if (plan.verbose) PrintStats(*stats);
  if (!status.ok()) return status;
  if (!plan.synchronous) *length = *source.info().size;
  Digests digests;
  if (hash) {
    Result<std::string> value = sequential ? sequential->Finish() : hash->Finish(*length);
    if (!value.ok()) return value.status();
    digests.blkhash = std::move(value).value();
  }
  if (checksum) {
    Result<std::string> value = checksum->Finish(*length);
    if (!value.ok()) return value.status();
    digests.checksum = std::move(value).value();
  }
  return digests;
}

Result<Digests> HashImage(const CopyPlan& copy_plan, Endpoint& endpoint, uint64_t length,
                          const DigestSpecs& specs, std::shared_ptr<const Coverage> coverage) {
  PrefixEndpoint image(endpoint, length);
  NullEndpoint discard;
  const CopyPlan plan = HashingPlan(copy_plan, image.info(), std::move(coverage));
  Progress silent(ProgressMode::kNone, -1, length);
  uint64_t hashed = 0;
  CopyStats stats;
  return CopyAndHash(plan, image, discard, silent, specs, &hashed, &stats);
}

namespace {

// The --verify line of one digest, on stderr with -v.
void PrintVerified(const char* what, const std::string& source, const std::string& copied) {
  std::fprintf(stderr, "nbdcopy: verify: source %s%s\nnbdcopy: verify: destination %s%s\n",
               what, source.c_str(), what, copied.c_str());
}

}  // namespace

Status Verify(const CopyPlan& plan, Endpoint& destination, uint64_t length,
              const DigestSpecs& specs, const Digests& source_digests, JobReport* report,
              std::shared_ptr<const Coverage> coverage) {
  Result<Digests> copied = HashImage(plan, destination, length, specs, std::move(coverage));
  if (!copied.ok()) return copied.status().WithPrefix("--verify");
  if (specs.blkhash) report->destination_digest = copied->blkhash;
  if (specs.checksum) report->destination_checksum = copied->checksum;
  if (plan.verbose) {
    // libnbd-style lines for the blkhash as before; the checksum's name its algorithm.
    if (specs.blkhash) PrintVerified("", source_digests.blkhash, copied->blkhash);
    if (specs.checksum) {
      const std::string what = specs.checksum->algorithm + " ";
      PrintVerified(what.c_str(), source_digests.checksum, copied->checksum);
    }
  }
  auto differs = [&](const std::string& what, const std::string& ours, const std::string& theirs) {
    return Status::Error(fmt::format(
        "--verify: {}: the destination does not match the source ({} {} differs from {})",
        destination.name(), what, ours, theirs));
  };
  if (specs.blkhash && copied->blkhash != source_digests.blkhash) {
    return differs("blkhash", copied->blkhash, source_digests.blkhash);
  }
  if (specs.checksum && copied->checksum != source_digests.checksum) {
    return differs(specs.checksum->algorithm, copied->checksum, source_digests.checksum);
  }
  return Status::Ok();
}

}  // namespace nbdcopy
