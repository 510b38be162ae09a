#include "nbdcopy/copy_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace nbdcopy {

namespace {

unsigned OnlineCpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

std::string SizeText(const EndpointInfo& info) {
  if (info.size) return std::to_string(*info.size);
  return info.sequential ? "unknown (stream)" : "unlimited";
}

}  // namespace

Result<CopyPlan> MakeCopyPlan(const Options& options, const Endpoint& source,
                              const Endpoint& destination) {
  const EndpointInfo& src = source.info();
  const EndpointInfo& dst = destination.info();
  if (dst.read_only) {
    return Status::Error(destination.name() + ": the destination is read-only");
  }
  if (src.size && dst.size && !dst.resizable && *src.size > *dst.size) {
    return Status::Error(fmt::format("{}: source size {} is larger than destination size {}",
                                     destination.name(), *src.size, *dst.size));
  }

  CopyPlan plan;
  uint64_t block = std::max(src.preferred_block_size, dst.preferred_block_size);
  // A blkhash block is hashed from one buffer: requests are at least that big.
  if (auto hash = ChecksumSpec(options)) block = std::max(block, hash->block_size);
  plan.request_size = std::min(std::max(options.request_size, block), kMaxRequestSize);
  plan.sparse_size =
      options.sparse_size == 0 ? 0 : std::max<uint64_t>(options.sparse_size,
                                                        dst.preferred_block_size);
  plan.queue_size = std::max(options.queue_size, plan.request_size);
  plan.requests = options.requests;
  plan.synchronous = options.synchronous || src.sequential || dst.sequential;
  unsigned threads = options.threads == 0 ? OnlineCpus() : options.threads;
  plan.connections = std::min(options.connections, threads);
  if (plan.synchronous || !src.can_multi_conn || !dst.can_multi_conn) plan.connections = 1;
  plan.use_extents = options.extents && src.can_extents;
  plan.allocated = options.allocated;
  plan.flush = options.flush;
  return plan;
}

Status PrepareDestination(const Options& options, const Endpoint& source,
                          Endpoint& destination, CopyPlan* plan) {
  const EndpointInfo& src = source.info();
  if (destination.info().resizable) {
    Status status = destination.Truncate(src.size.value_or(0));
    if (!status.ok()) return status;
  }
  const EndpointInfo& dst = destination.info();
  // Skipping needs a destination already at its final size: a stream's
  // length is only known at its end, and a pipe cannot skip.
  plan->skip_zero_ranges = !plan->allocated && !dst.sequential && src.size.has_value() &&
                           (options.destination_is_zero || dst.reads_as_zero);
  return Status::Ok();
}

std::string DescribeCopy(const CopyPlan& plan, const Endpoint& source,
                         const Endpoint& destination) {
  auto describe = [](const char* role, const Endpoint& endpoint) {
    const EndpointInfo& info = endpoint.info();
    return fmt::format(
        "nbdcopy: {}: {}\n"
        "nbdcopy: {}: size={} block={} read_only={} extents={} zero={} flush={} multi_conn={} "
        "sequential={}\n",
        role, endpoint.name(), role, SizeText(info), info.preferred_block_size, info.read_only,
        info.can_extents, info.efficient_zero, info.can_flush, info.can_multi_conn,
        info.sequential);
  };
  return describe("src", source) + describe("dst", destination) +
         fmt::format(
             "nbdcopy: connections={} requests={} request_size={} queue_size={} sparse={} "
             "synchronous={} extents={} allocated={} skip_zero_ranges={} flush={}\n",
             plan.connections, plan.requests, plan.request_size, plan.queue_size,
             plan.sparse_size, plan.synchronous, plan.use_extents, plan.allocated,
             plan.skip_zero_ranges, plan.flush);
}

}  // namespace nbdcopy
