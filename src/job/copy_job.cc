#include "nbdcopy/copy_job.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "endpoints/endpoint_spec.h"
#include "endpoints/open_endpoint.h"
#include "endpoints/prefix_endpoint.h"
#include "engine/parallel_copy.h"
#include "engine/sync_copy.h"
#include "hash/blkhash.h"
#include "hash/digest_library.h"
#include "job/checkpoint_job.h"
#include "job/copy_and_hash.h"
#include "job/digest_output.h"
#include "job/format_hint.h"
#include "job/job_environment.h"
#include "job/job_output.h"
#include "job/option_checks.h"
#include "job/progress.h"
#include "job/ranges_job.h"
#include "job/report.h"
#include "job/salvage_job.h"
#include "nbdcopy/cancel.h"
#include "plan/copy_plan.h"
#include "plan/incremental.h"

namespace nbdcopy {

namespace {

// The two endpoints of a run, opened.
struct EndpointPair {
  std::unique_ptr<Endpoint> source;
  std::unique_ptr<Endpoint> destination;
  bool null_destination = false;              // null: (an incremental copy's dry run)
  std::unique_ptr<CheckpointJob> checkpoint;  // --checkpoint
  std::optional<RangeSet> listed;             // --ranges
};

// libcrypto is loaded by the first checksum (hash/digest_library.h). Where
// this job will make one (--blkhash, --verify, or the source samples of
// --checkpoint), it is loaded before anything is opened: on a machine
// without it the run stops here, the destination untouched.
Status LoadDigestsIfNeeded(const Options& options) {
  const char* user = options.blkhash      ? "--blkhash"
                     : options.checksum   ? "--checksum"
                     : options.verify     ? "--verify"
                     : options.checkpoint ? "--checkpoint"
                                          : nullptr;
  if (user == nullptr) return Status::Ok();
  Result<const DigestLibrary*> library = LoadDigestLibrary();
  if (!library.ok()) return Status::Error(std::string(user) + ": " + library.status().message());
  return Status::Ok();
}

// Classifies and checks the operands and options, then opens the source
// first: if it cannot be opened the destination is never touched.
Result<EndpointPair> OpenEndpoints(const Options& options, const JobEnvironment& environment,
                                   JobReport* report,
                                   const std::shared_ptr<ReconnectNotices>& notices) {
  Result<EndpointSpec> source_spec = ClassifyEndpoint(options.source, Role::kSource);
  if (!source_spec.ok()) return source_spec.status();
  Result<EndpointSpec> destination_spec = ClassifyEndpoint(options.destination, Role::kDestination);
  if (!destination_spec.ok()) return destination_spec.status();
  report->source = DisplayName(*source_spec);
  report->dirty_bitmap = options.dirty_bitmap;
  report->checksum = options.checksum;  // the expected digest, whatever fails
  report->ranges_file = options.ranges;
  report->destination = DisplayName(*destination_spec);
  if (Status status = CheckOptions(options, *source_spec, *destination_spec); !status.ok()) {
    return status;
  }
  if (Status status = LoadDigestsIfNeeded(options); !status.ok()) return status;
  const bool incremental = options.incremental();
  std::optional<std::string> ranges_text;
  if (options.ranges) {
    Result<std::string> text = ReadRangesText(options);
    if (!text.ok()) return text.status();
    ranges_text = std::move(text).value();
  }
  std::unique_ptr<CheckpointJob> checkpoint;
  if (options.checkpoint) {
    auto loaded = CheckpointJob::Load(options, *source_spec, *destination_spec);
    if (!loaded.ok()) return loaded.status();
    checkpoint = std::move(loaded).value();
  }
  OpenFlags flags;
  flags.debug = options.verbose;
  flags.timeout = options.timeout;
  flags.retry = options.retry;
  flags.notices = notices;
  flags.io_uring = environment.io_uring;
  OpenFlags source_flags = flags;
  source_flags.dirty_bitmap = options.dirty_bitmap.value_or("");
  source_flags.overlapped_file_io = OverlapFileIo(destination_spec->kind);
  auto source = OpenEndpoint(*source_spec, Role::kSource, source_flags);
  if (!source.ok()) return source.status();
  // Before any progress frame, and before a destination's refusal it may explain.
  if (auto hint = FormatHint(*source_spec, *destination_spec)) {
    std::fprintf(stderr, "%s\n", hint->c_str());
  }
  report->size = (*source)->info().size;
  std::optional<RangeSet> listed;
  if (ranges_text) {  // CheckIncrementalOptions refused a stream source
    Result<RangeSet> parsed = ParseListedRanges(options, *ranges_text, *report->size);
    if (!parsed.ok()) return parsed.status();
    listed = std::move(parsed).value();
    report->listed_bytes = listed->bytes();
    report->listed_ranges = listed->size();
  }
  OpenFlags destination_flags = flags;
  destination_flags.overlapped_file_io = OverlapFileIo(source_spec->kind);
  // A resumed copy continues the destination it began.
  destination_flags.must_exist = incremental || (checkpoint && checkpoint->resuming());
  auto destination = OpenEndpoint(*destination_spec, Role::kDestination, destination_flags);
  if (!destination.ok()) return destination.status();
  if (Status status = CheckOpenedDestination(options, **destination); !status.ok()) {
    return status;
  }
  if (options.checksum) report->checksum_name = ChecksumName(*source_spec, *destination_spec);
  if (checkpoint) {
    // Another list is another copy.
    std::string settings = listed ? " ranges=" + RangesDigest(*listed) : "";
    Status status = checkpoint->Check(options, **source, **destination, report->source,
                                      report->destination, settings, listed ? &*listed : nullptr);
    if (!status.ok()) return status;
  }
  return EndpointPair{std::move(source).value(), std::move(destination).value(),
                      destination_spec->kind == EndpointKind::kNull, std::move(checkpoint),
                      std::move(listed)};
}

// What the JSON report says of the plan.
void RecordPlan(const CopyPlan& plan, const Options& options,
                const std::optional<BlkhashSpec>& hash_spec, JobReport* report) {
  report->copy_started = true;
  report->synchronous = plan.synchronous;
  report->connections = plan.connections;
  report->request_size = plan.request_size;
  report->queue_size = plan.queue_size;
  report->blkhash = hash_spec;
}

// --retry without --checkpoint: which ranges are durable, in memory, so
// that a destination restart loses nothing.
std::unique_ptr<Checkpointer> RetryCheckpointer(Clock::duration interval) {
  return std::make_unique<Checkpointer>(RangeSet(), nullptr, interval, kCheckpointBytes);
}

// What this copy covers (plan/coverage.h), decided once from the options,
// a --ranges list and a checkpoint: what the list leaves out and what an
// earlier run did are left alone; done ranges are hashed when the digest
// covers the whole source (an incremental copy hashes nothing).
std::shared_ptr<const Coverage> CopyCoverage(const Options& options, const EndpointPair& endpoints,
                                             bool hashing) {
  auto coverage = std::make_shared<Coverage>();
  if (endpoints.listed) {
    coverage->unlisted = UnlistedRanges(*endpoints.listed, *endpoints.source->info().size);
  }
  if (endpoints.checkpoint) coverage->done = endpoints.checkpoint->recorded_done();
  coverage->hash_done = hashing && !options.incremental();
  return coverage;
}

// A plan for the endpoints opened and what the copy covers, with the books
// that track what becomes durable.
struct PreparedCopy {
  CopyPlan plan;
  std::unique_ptr<Checkpointer> retry_books;  // --retry alone: in memory only
  Checkpointer* checkpointer = nullptr;
};

// Plans the copy and prepares the destination: the first change made to it.
Result<PreparedCopy> PrepareCopy(const Options& options, const JobEnvironment& environment,
                                 EndpointPair& endpoints,
                                 const std::optional<BlkhashSpec>& hash_spec, JobReport* report) {
  Endpoint& source = *endpoints.source;
  Endpoint& destination = *endpoints.destination;
  Result<CopyPlan> plan = MakeCopyPlan(options, source, destination,
                                       CopyCoverage(options, endpoints, HashesSource(options)));
  if (!plan.ok()) return plan.status();
  if (CancelRequested()) return CancelledStatus();  // before the destination is touched
  PreparedCopy prepared;
  if (CheckpointJob* checkpoint = endpoints.checkpoint.get()) {
    checkpoint->StartBooks(plan->alignment, environment.checkpoint_interval);
    prepared.checkpointer = checkpoint->checkpointer();
  } else if (options.retry > 0) {
    prepared.retry_books = RetryCheckpointer(environment.checkpoint_interval);
    prepared.checkpointer = prepared.retry_books.get();
  }
  if (Status status = PrepareDestination(options, source, destination, &*plan); !status.ok()) {
    return status;
  }
  if (options.verbose) std::fputs(DescribeCopy(*plan, source, destination).c_str(), stderr);
  RecordPlan(*plan, options, hash_spec, report);
  prepared.plan = std::move(plan).value();
  return prepared;
}

// --verify of a --ranges copy compares the listed ranges only: the rest
// counts as zeroes on both sides.
std::shared_ptr<const Coverage> VerifyCoverage(const CopyPlan& plan) {
  if (plan.coverage == nullptr || plan.coverage->unlisted.empty()) return nullptr;
  auto coverage = std::make_shared<Coverage>();
  coverage->unlisted = plan.coverage->unlisted;
  coverage->unlisted_as_zero = true;
  return coverage;
}

// After the copy: an incremental copy's source hashed whole for --verify
// (or its listed ranges), the expected checksum, the comparison.
// --salvage: what the source lost is compared by neither side.
Status CheckAndReport(const Options& options, const PreparedCopy& prepared, EndpointPair& endpoints,
                      const DigestSpecs& specs, uint64_t length, Result<Digests> digests,
                      const SalvageJob* salvage, JobReport* report) {
  uint64_t not_compared = 0;
  std::shared_ptr<const Coverage> verify_coverage = VerifyCoverage(prepared.plan);
  if (salvage) verify_coverage = salvage->VerifyCoverage(verify_coverage, &not_compared);
  if (options.incremental()) {
    if (options.verbose) PrintIncrementalStats(options, *report);
    length = *report->size;
    if (options.verify) {
      digests = HashImage(prepared.plan, *endpoints.source, length, specs, verify_coverage);
      if (!digests.ok()) return digests.status().WithPrefix("--verify");
    }
  }
  report->size = length;  // a stream's size is known now
  if (specs.blkhash) report->digest = digests->blkhash;
  if (specs.checksum) {
    report->checksum_digest = digests->checksum;
    Status status = CheckExpectedChecksum(*specs.checksum, digests->checksum, report->source);
    if (status.ok() && salvage && specs.checksum->expected) {
      status = salvage->CheckExpectedChecksum(specs.checksum->algorithm);
    }
    if (!status.ok()) return status;
  }
  if (options.verify) {
    Status status = Verify(prepared.plan, *endpoints.destination, length, specs, *digests, report,
                           verify_coverage);
    if (!status.ok()) return status;
    if (not_compared > 0) {
      std::fprintf(stderr, "nbdcopy: --verify: %llu unreadable bytes were not compared\n",
                   static_cast<unsigned long long>(not_compared));
    }
  }
  return Status::Ok();
}

// The job up to its Status, recording in *report what the JSON report
// needs; *progress is created once the source's size is known, and left
// for the caller to read and end.
Status Copy(const Options& options, const JobEnvironment& environment,
            std::optional<Progress>* progress, JobReport* report,
            const std::shared_ptr<ReconnectNotices>& notices) {
  Result<EndpointPair> endpoints = OpenEndpoints(options, environment, report, notices);
  if (!endpoints.ok()) return endpoints.status();
  Endpoint& source = *endpoints->source;
  const bool incremental = options.incremental();
  std::optional<BlkhashSpec> hash_spec = BlkhashToCompute(options);
  const DigestSpecs specs{hash_spec ? &*hash_spec : nullptr,
                          options.checksum ? &*options.checksum : nullptr};
  Result<PreparedCopy> prepared =
      PrepareCopy(options, environment, *endpoints, hash_spec, report);
  if (!prepared.ok()) return prepared.status();
  CheckpointJob* checkpoint = endpoints->checkpoint.get();

  std::optional<uint64_t> total = report->size;
  uint64_t already = checkpoint ? checkpoint->done_bytes() : 0;
  if (incremental) {
    const bool dry_run = endpoints->null_destination;
    Result<uint64_t> dirty = DirtyTotal(options, prepared->plan, source, dry_run, report, &already);
    if (!dirty.ok()) return dirty.status();
    if (dry_run) return Status::Ok();
    total = *dirty;  // progress counts what is copied
  }
  report->bytes_already_done = already;
  if (checkpoint && options.verbose) {
    std::fprintf(stderr, "nbdcopy: checkpoint=%s: resuming with %llu bytes done\n",
                 options.checkpoint->c_str(), static_cast<unsigned long long>(already));
  }

  progress->emplace(options.progress, options.progress_fd, total);
  (*progress)->Start(already);
  std::optional<SalvageJob> salvage;
  if (options.salvage) {
    salvage.emplace(report->source, report->size.value_or(0), [progress](const std::string& line) {
      if (!(*progress)->Note(line)) std::fprintf(stderr, "nbdcopy: %s\n", line.c_str());
    });
    if (checkpoint) checkpoint->RecordLost(salvage->lost());
  }
  uint64_t length = 0;
  // An incremental copy reads part of the source: --verify hashes it whole, later.
  Result<Digests> digests =
      CopyAndHash(prepared->plan, source, *endpoints->destination, **progress,
                  incremental ? DigestSpecs{} : specs, &length, &report->stats,
                  prepared->checkpointer, salvage ? salvage->lost() : nullptr);
  if (prepared->checkpointer) report->checkpoints = prepared->checkpointer->checkpoints();
  if (salvage) salvage->Finish(report);
  if (!digests.ok()) return digests.status();
  if (checkpoint) {
    if (Status status = checkpoint->Finish(); !status.ok()) return status;
  }
  Status checked = CheckAndReport(options, *prepared, *endpoints, specs, length, digests,
                                  salvage ? &*salvage : nullptr, report);
  if (!checked.ok()) return checked;
  (*progress)->Finish();
  if (Status status = WriteDigests(options, *report); !status.ok()) return status;
  if (checkpoint) {
    std::optional<std::string> recovered =
        RecoveredLine(report->source, checkpoint->recorded_bad(),
                      salvage ? salvage->lost()->ranges() : RangeSet(), report);
    if (recovered) std::fprintf(stderr, "nbdcopy: %s\n", recovered->c_str());
  }
  return salvage ? salvage->Outcome(specs.any(), options.checkpoint) : Status::Ok();
}

std::string InterruptedMessage(uint64_t copied, std::optional<uint64_t> total) {
  if (!total) return fmt::format("interrupted after copying {} bytes", copied);
  return fmt::format("interrupted after copying {} of {} bytes", copied, *total);
}

}  // namespace

CopyOutcome ExecuteJob(const Options& options) {
  const auto start = Clock::now();
  std::optional<Progress> progress;
  JobReport report;
  // --retry: a reconnecting endpoint says so between the progress frames,
  // or on stderr with -v.
  auto notices = std::make_shared<ReconnectNotices>();
  notices->notice = [&progress, verbose = options.verbose](const std::string& line) {
    if (progress && progress->Note(line)) return;
    if (verbose) std::fprintf(stderr, "nbdcopy: %s\n", line.c_str());
  };
  // The environment's knobs, read here once (job/job_environment.h).
  Status status = Copy(options, ReadJobEnvironment(), &progress, &report, notices);
  report.reconnections = notices->reconnections.load();
  const uint64_t copied = progress ? progress->copied() : 0;  // earlier runs' too
  report.bytes_copied = copied - std::min(copied, report.bytes_already_done);
  progress.reset();  // ends the bar's line before any message
  // Whatever failed after a signal (a server killed by the same Ctrl-C,
  // say) failed because of it.
  if (!status.ok() && CancelRequested()) {
    std::optional<uint64_t> total = report.size;
    if (report.dirty) total = report.dirty->dirty_bytes;  // what progress counted to
    status = Status::Error(InterruptedMessage(copied, total));
    report.signal_number = CancelSignal();
  }
  report.elapsed_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  report.exit_status = ExitStatusFor(status);
  if (!status.ok()) report.error = status.message();
  // Never on stdout when stdout carries the data (CheckOptions refused that).
  bool stdout_is_data = options.destination == std::vector<std::string>{"-"};
  if (options.json && (options.json_file || !stdout_is_data)) {
    Status written = WriteLine("--json", options.json_file, RenderJson(report));
    if (status.ok() && !written.ok()) status = written;
  }
  return CopyOutcome{status, ExitStatusFor(status)};
}

}  // namespace nbdcopy
