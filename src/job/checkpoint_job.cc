#include "job/checkpoint_job.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/hex.h"
#include "hash/blkhash.h"
#include "job/option_checks.h"
#include "job/sample_reads.h"

namespace nbdcopy {

namespace {

constexpr uint64_t kSampleSize = 64 * 1024;
constexpr uint64_t kSamples = 16;
// Blocks of a resumed destination compared with the source's.
constexpr size_t kDestinationSamples = 8;
constexpr uint64_t kDestinationSampleSize = 64 * 1024;

const char* YesNo(bool value) { return value ? "yes" : "no"; }

// Whether the destination holds the source's bytes where the checkpoint
// says they were copied: a few done ranges, spread, compared byte for byte.
// Samples are whole blocks of both endpoints (done ranges shrunk inward to
// them), as the copy's own requests are.
Status CheckDestinationHoldsDone(const std::string& option, const std::string& path,
                                 const RangeSet& done, Endpoint& source, Endpoint& destination) {
  const uint64_t block = std::bit_ceil(
      std::max<uint64_t>({source.info().min_block_size, destination.info().min_block_size, 1}));
  const uint64_t sample = std::max(kDestinationSampleSize, block);
  std::vector<RangeSet::Range> runs = done.AlignedInward(block, *source.info().size).Runs();
  const size_t count = std::min(runs.size(), kDestinationSamples);
  std::vector<std::byte> a(count * sample), b(a.size());
  std::vector<SampleRead> from_source, from_destination;
  for (size_t i = 0; i < count; ++i) {
    const RangeSet::Range& run = runs[count == 1 ? 0 : i * (runs.size() - 1) / (count - 1)];
    // Whole blocks, or the short last one at the image's end.
    const uint64_t length = run.length <= sample ? run.length : sample / block * block;
    from_source.push_back({run.offset, std::span(a).subspan(i * sample, length)});
    from_destination.push_back({run.offset, std::span(b).subspan(i * sample, length)});
  }
  if (Status status = ReadSamples(source, from_source); !status.ok()) return status;
  if (Status status = ReadSamples(destination, from_destination); !status.ok()) return status;
  for (size_t i = 0; i < count; ++i) {
    const SampleRead& x = from_source[i];
    if (std::memcmp(x.buffer.data(), from_destination[i].buffer.data(), x.buffer.size()) != 0) {
      return Status::Error(fmt::format(
          "{}: {} does not hold what the checkpoint says was copied (the bytes at offset {} "
          "differ from the source's); remove {} to copy from the start",
          option, destination.name(), x.offset, path));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string CheckpointSettings(const Options& options) {
  return fmt::format("allocated={} sparse={} destination-is-zero={} dirty-bitmap={}",
                     YesNo(options.allocated), options.sparse_size,
                     YesNo(options.destination_is_zero), options.dirty_bitmap.value_or("-"));
}

namespace {

// --salvage: each sample's digest on its own (16 hex digits), "-" for one
// the source cannot read, so that a rerun after the source recovered (or
// with another replica) still matches (FingerprintsMatch).
Result<std::string> EachSampleFingerprint(Endpoint& source, const Blkhash& hash,
                                          std::span<const SampleRead> reads,
                                          const std::string& form) {
  std::string text = form + "/each:";
  for (const SampleRead& read : reads) {
    if (&read != reads.data()) text += ',';
    Status status = ReadSamples(source, std::span(&read, 1));
    if (!status.ok() && !IsUnreadable(status)) return status;
    if (!status.ok()) {
      text += '-';
      continue;
    }
    Blkhash::Digest digest = hash.BlockDigest(read.buffer);
    text += LowercaseHex(digest.bytes.data(), std::min<size_t>(digest.size, 8));
  }
  return text;
}

}  // namespace

Result<std::string> SourceFingerprint(Endpoint& source, bool salvage) {
  const uint64_t size = *source.info().size;
  // Whole blocks of a source with large ones.
  const uint64_t sample_size = std::max(
      kSampleSize, std::bit_ceil<uint64_t>(std::max<uint32_t>(source.info().min_block_size, 1)));
  const uint64_t blocks = (size + sample_size - 1) / sample_size;
  const uint64_t samples = std::min(blocks, kSamples);
  auto hash = Blkhash::Create(BlkhashSpec{"sha256", sample_size});
  if (!hash.ok()) return hash.status();
  std::vector<std::byte> buffer(samples * sample_size);
  std::vector<SampleRead> reads;
  for (uint64_t i = 0; i < samples; ++i) {
    // Spread from the first block to the last (which may be short).
    const uint64_t block = samples == 1 ? 0 : i * (blocks - 1) / (samples - 1);
    const uint64_t offset = block * sample_size;
    reads.push_back(
        {offset, std::span(buffer).subspan(i * sample_size, std::min(sample_size, size - offset))});
  }
  const std::string form = fmt::format("blkhash-sha256/{}K@{}", sample_size / 1024, samples);
  if (salvage) return EachSampleFingerprint(source, **hash, reads, form);
  if (Status status = ReadSamples(source, reads); !status.ok()) return status;
  uint64_t length = 0;
  for (uint64_t i = 0; i < samples; ++i) {
    (*hash)->AddData(i, reads[i].buffer);
    length += reads[i].buffer.size();
  }
  Result<std::string> digest = (*hash)->Finish(length);
  if (!digest.ok()) return digest.status();
  return form + ":" + *digest;
}

Result<std::unique_ptr<CheckpointJob>> CheckpointJob::Load(const Options& options,
                                                           const EndpointSpec& source,
                                                           const EndpointSpec& destination,
                                                           FileSystem& files) {
  std::unique_ptr<CheckpointJob> run(new CheckpointJob());
  run->files_ = &files;
  run->path_ = *options.checkpoint;
  run->option_ = "--checkpoint=" + run->path_;
  // Streams, null: (the same rule as every feature writing at offsets).
  if (Status status = CheckCheckpointOperands(options, source, destination); !status.ok()) {
    return status;
  }
  Result<std::optional<std::string>> text = ReadCheckpointFile(run->path_, files);
  if (!text.ok()) return text.status();
  if (*text) {
    Result<CheckpointState> state = ParseCheckpoint(**text, run->path_);
    if (!state.ok()) return state.status().WithPrefix(run->option_);
    run->recorded_ = std::move(state).value();
  }
  // Refused before any endpoint is opened (opening creates a destination file).
  if (Status status = run->CheckWritable(); !status.ok()) return status;
  run->local_source_ = source.kind == EndpointKind::kLocalPath;
  run->local_destination_ = destination.kind == EndpointKind::kLocalPath;
  struct stat st;
  if (destination.kind == EndpointKind::kLocalPath && run->resuming() &&
      stat(destination.text.c_str(), &st) == -1) {
    return Status::Error(fmt::format(
        "{}: {}: the destination of the copy to resume is missing ({}); remove {} to copy "
        "from the start",
        run->option_, destination.text, std::strerror(errno), run->path_));
  }
  return run;
}

Status CheckpointJob::Check(const Options& options, Endpoint& source, Endpoint& destination,
                            const std::string& source_name, const std::string& destination_name,
                            const std::string& extra_settings, const RangeSet* listed) {
  for (Endpoint* endpoint : {&source, &destination}) {
    if (IsStream(*endpoint) || !endpoint->info().size) {
      return Status::Error(
          fmt::format("{}: {}: a stream cannot be resumed", option_, endpoint->name()));
    }
  }
  identity_.source = source_name;
  identity_.destination = destination_name;
  identity_.source_size = *source.info().size;
  identity_.settings = CheckpointSettings(options) + extra_settings;
  ResolveFiles(&identity_);  // both endpoints are open: a new destination file exists
  // A different size needs no reading to be refused: CompareIdentity
  // compares the sizes first, so the fingerprint it is never shown stays
  // empty. (A placeholder "-" assigned here made GCC 12 warn -Wrestrict
  // deep inside std::string, a false positive: GCC bug 105329.)
  if (recorded_ && recorded_->identity.source_size != identity_.source_size) {
    return CompareWithRecorded();
  }
  Result<std::string> fingerprint = SourceFingerprint(source, options.salvage);
  if (!fingerprint.ok()) return fingerprint.status();
  identity_.fingerprint = *fingerprint;
  if (!recorded_) return Status::Ok();
  if (Status status = CompareWithRecorded(); !status.ok()) return status;
  // Only where this copy writes: an incremental copy leaves old bytes
  // elsewhere, rightly different (and a bitmap's clean ranges are not known
  // before the copy asks: trusted, as the bitmap is).
  if (options.dirty_bitmap) return Status::Ok();
  RangeSet sampled = recorded_->done;
  if (listed != nullptr) {
    for (const RangeSet::Range& gap : listed->Gaps(identity_.source_size)) {
      sampled.Remove(gap.offset, gap.length);
    }
  }
  return CheckDestinationHoldsDone(option_, path_, sampled, source, destination);
}

void CheckpointJob::ResolveFiles(CheckpointIdentity* identity) const {
  if (local_source_ && identity->source_file.empty()) {
    identity->source_file = files_->CanonicalPath(identity->source).value_or("");
  }
  if (local_destination_ && identity->destination_file.empty()) {
    identity->destination_file = files_->CanonicalPath(identity->destination).value_or("");
  }
}

Status CheckpointJob::CompareWithRecorded() const {
  // A file written before the files were recorded names them as typed
  // then: taken from the current directory, as the same command would.
  CheckpointIdentity recorded = recorded_->identity;
  ResolveFiles(&recorded);
  return CompareIdentity(recorded, identity_, path_);
}

namespace {
const RangeSet kNothing;
}  // namespace

const RangeSet& CheckpointJob::recorded_done() const {
  return recorded_ ? recorded_->done : kNothing;
}

const RangeSet& CheckpointJob::recorded_bad() const {
  return recorded_ ? recorded_->bad : kNothing;
}

void CheckpointJob::StartBooks(uint64_t alignment, Clock::duration interval) {
  RangeSet done = recorded_done().AlignedInward(alignment, identity_.source_size);
  done_bytes_ = done.bytes();
  checkpointer_ = std::make_unique<Checkpointer>(
      std::move(done), [this](const RangeSet& durable) { return Persist(durable); },
      interval, kCheckpointBytes);
  // No file yet: none is needed until something is durable (a kill before
  // then leaves nothing to resume, as if never started).
  if (recorded_) {
    last_written_ = RenderCheckpoint(recorded_->identity, recorded_->done, recorded_->bad);
  }
}

Status CheckpointJob::CheckWritable() const {
  const std::string probe = path_ + ".tmp";
  if (FileError error = files_->ProbeCreate(probe); error.failed()) {
    return Status::Error(
        fmt::format("{}: cannot write {}: {}", option_, probe, std::strerror(error.error)));
  }
  return Status::Ok();
}

Status CheckpointJob::Persist(const RangeSet& durable) {
  // Bad: what this copy lost, and the recorded bad areas not copied since.
  RangeSet bad = recorded_bad();
  bad.Remove(durable);
  if (lost_ != nullptr) bad.Add(lost_->ranges());
  std::string text = RenderCheckpoint(identity_, durable, bad);
  if (text == last_written_) return Status::Ok();  // no news: no fsync
  Status status = WriteCheckpointFile(path_, text, *files_);
  if (status.ok()) last_written_ = std::move(text);
  return status;
}

Status CheckpointJob::Finish() {
  RangeSet all;
  all.Add(0, identity_.source_size);
  return Persist(all);
}

}  // namespace nbdcopy
