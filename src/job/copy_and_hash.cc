#include "job/copy_and_hash.h"

#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "endpoints/null_endpoint.h"
#include "endpoints/prefix_endpoint.h"
#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "hash/blkhash.h"

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

Result<std::string> CopyAndHash(const Options& options, const CopyPlan& plan, Endpoint& source,
                                Endpoint& destination, Progress& progress,
                                const BlkhashSpec* hash_spec, uint64_t* length, CopyStats* stats,
                                Checkpointer* checkpointer) {
  std::unique_ptr<Blkhash> hash;
  if (hash_spec != nullptr) {
    auto created = Blkhash::Create(*hash_spec);
    if (!created.ok()) return created.status();
    hash = std::move(created).value();
  }
  // The synchronous engine hashes in image order (a stream's chunks end
  // anywhere); the parallel one by block, in any order.
  std::optional<SequentialBlkhash> sequential;
  if (hash && plan.synchronous) sequential.emplace(*hash);
  CopyBooks books(plan, progress, sequential ? nullptr : hash.get(),
                  sequential ? &*sequential : nullptr, checkpointer);
  Status status = plan.synchronous ? SyncCopy(plan, source, destination, books, length, stats)
                                   : ParallelCopy(plan, source, destination, books, stats);
  if (options.verbose) PrintStats(*stats);
  if (!status.ok()) return status;
  if (!plan.synchronous) *length = *source.info().size;
  if (!hash) return std::string();
  return sequential ? sequential->Finish() : hash->Finish(*length);
}

Result<std::string> HashImage(const Options& options, const CopyPlan& copy_plan, Endpoint& endpoint,
                              uint64_t length, const BlkhashSpec& spec,
                              std::shared_ptr<const Coverage> coverage) {
  PrefixEndpoint image(endpoint, length);
  NullEndpoint discard;
  const CopyPlan plan = HashingPlan(copy_plan, endpoint.info(), std::move(coverage));
  Progress silent(ProgressMode::kNone, -1, length);
  uint64_t hashed = 0;
  CopyStats stats;
  return CopyAndHash(options, plan, image, discard, silent, &spec, &hashed, &stats);
}

Status Verify(const Options& options, const CopyPlan& plan, Endpoint& destination, uint64_t length,
              const BlkhashSpec& spec, const std::string& digest, RunReport* report,
              std::shared_ptr<const Coverage> coverage) {
  Result<std::string> copied =
      HashImage(options, plan, destination, length, spec, std::move(coverage));
  if (!copied.ok()) return copied.status().WithPrefix("--verify");
  report->destination_digest = *copied;
  if (options.verbose) {
    std::fprintf(stderr, "nbdcopy: verify: source %s\nnbdcopy: verify: destination %s\n",
                 digest.c_str(), copied->c_str());
  }
  if (*copied != digest) {
    return Status::Error(fmt::format(
        "--verify: {}: the destination does not match the source (blkhash {} differs from {})",
        destination.name(), *copied, digest));
  }
  return Status::Ok();
}

}  // namespace nbdcopy
