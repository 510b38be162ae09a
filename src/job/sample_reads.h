// Reads a few ranges of an endpoint at once (its asynchronous interface),
// so that sampling a remote server costs one round trip, not one per
// sample: the checkpoint's fingerprint of the source and its check of a
// resumed destination.
// Thread safety: one thread, which must own the endpoint.
#ifndef NBDCOPY_JOB_SAMPLE_READS_H_
#define NBDCOPY_JOB_SAMPLE_READS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "nbdcopy/endpoint.h"

namespace nbdcopy {

struct SampleRead {
  uint64_t offset = 0;
  std::span<std::byte> buffer;  // filled; REQUIRES within the endpoint's size
};

// Reads every sample, all in flight together; the first failure.
[[nodiscard]] Status ReadSamples(Endpoint& endpoint, std::span<const SampleRead> samples);

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_SAMPLE_READS_H_
