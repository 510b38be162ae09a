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
#include "job/progress.h"
#include "job/report.h"
#include "nbdcopy/blkhash_spec.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/options.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

// Runs the right engine; returns the source's digest when hash_spec is
// given ("" otherwise). *length receives the bytes copied (a stream's
// length); *stats the engine's statistics, even after a failure.
// checkpointer: as for ParallelCopy (may be null).
[[nodiscard]] Result<std::string> CopyAndHash(const Options& options, const CopyPlan& plan,
                                              Endpoint& source, Endpoint& destination,
                                              Progress& progress, const BlkhashSpec* hash_spec,
                                              uint64_t* length, CopyStats* stats,
                                              Checkpointer* checkpointer = nullptr);

// Reads the first `length` bytes of an endpoint (the destination, or the
// source of an incremental copy) and hashes them. coverage (optional): what
// to hash (a --ranges copy's unlisted ranges as zeroes without reading, so
// that two images are compared in the listed ranges only).
[[nodiscard]] Result<std::string> HashImage(const Options& options, const CopyPlan& copy_plan,
                                            Endpoint& endpoint, uint64_t length,
                                            const BlkhashSpec& spec,
                                            std::shared_ptr<const Coverage> coverage = nullptr);

// --verify: reads the destination back and compares its digest with the
// source's (`digest`, hashed alike), recording both in *report.
[[nodiscard]] Status Verify(const Options& options, const CopyPlan& plan, Endpoint& destination,
                            uint64_t length, const BlkhashSpec& spec, const std::string& digest,
                            RunReport* report, std::shared_ptr<const Coverage> coverage = nullptr);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_COPY_AND_HASH_H_
