// The copy itself and its checksums: the right engine run (hashing the
// source as it goes when asked), an image read back and hashed, and
// --verify's comparison.
// Thread safety: one thread (the engines start their own).
#ifndef NBDCOPY_JOB_COPY_AND_HASH_H_
#define NBDCOPY_JOB_COPY_AND_HASH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/range_set.h"
#include "engine/checkpointer.h"
#include "engine/copy_stats.h"
#include "engine/salvage.h"
#include "job/progress.h"
#include "job/report.h"
#include "nbdcopy/blkhash_spec.h"
#include "nbdcopy/checksum_spec.h"
#include "nbdcopy/endpoint.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// The digests a copy computes of the image it reads: a blkhash
// (--blkhash, or --verify's default), the plain checksum (--checksum).
// Null: not computed.
struct DigestSpecs {
  const BlkhashSpec* blkhash = nullptr;
  const ChecksumSpec* checksum = nullptr;
  bool any() const { return blkhash != nullptr || checksum != nullptr; }
};

// Their values in lowercase hex ("" when not computed).
struct Digests {
  std::string blkhash;
  std::string checksum;
};

// Runs the right engine; returns the source's digests that `specs` asks
// for. *length receives the bytes copied (a stream's length); *stats the
// engine's statistics, even after a failure (on stderr with plan.verbose).
// checkpointer: as for ParallelCopy (may be null). lost: --salvage's
// record (may be null: a failed read fails the copy).
[[nodiscard]] Result<Digests> CopyAndHash(const CopyPlan& plan, Endpoint& source,
                                          Endpoint& destination, Progress& progress,
                                          const DigestSpecs& specs, uint64_t* length,
                                          CopyStats* stats, Checkpointer* checkpointer = nullptr,
                                          LostRanges* lost = nullptr);

// Reads the first `length` bytes of an endpoint (the destination, or the
// source of an incremental copy) and hashes them. coverage (optional): what
// to hash (a --ranges copy's unlisted ranges as zeroes without reading, so
// that two images are compared in the listed ranges only).
[[nodiscard]] Result<Digests> HashImage(const CopyPlan& copy_plan, Endpoint& endpoint,
                                        uint64_t length, const DigestSpecs& specs,
                                        std::shared_ptr<const Coverage> coverage = nullptr);

// --verify: reads the destination back and compares its digests with the
// source's (`source_digests`, hashed alike), recording them in *report (and
// on stderr with plan.verbose).
[[nodiscard]] Status Verify(const CopyPlan& plan, Endpoint& destination, uint64_t length,
                            const DigestSpecs& specs, const Digests& source_digests,
                            JobReport* report, std::shared_ptr<const Coverage> coverage = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_COPY_AND_HASH_H_
