#include "plan/copy_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>

namespace nbdcopy {

namespace {

unsigned OnlineCpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

// Zero ranges shorter than this ride along with the neighbouring data: a
// separate zero operation costs a round trip, reading 64 KiB of zeroes costs
// about as much (measured on the fragmented workload, docs/performance.md).
constexpr uint64_t kCoalesceHoles = 64 * 1024;
// Without --request-size, requests shrink to this on fast pipelines.
constexpr uint64_t kSmallestAdaptiveRequest = 256 * 1024;
// Zero lengths travel as 32-bit fields; stay well inside.
constexpr uint64_t kMaxZeroOperation = 1ULL << 30;

// libnbd's "size=N (HUMAN)": a stream is -1 and an endpoint without an
// end INT64_MAX, as libnbd reports them; HUMAN is N in the largest unit
// that divides it exactly.
std::string SizeText(const EndpointInfo& info) {
  int64_t size = info.size         ? static_cast<int64_t>(*info.size)
                 : info.sequential ? -1
                                   : std::numeric_limits<int64_t>::max();
  uint64_t human = static_cast<uint64_t>(size);
  std::string units = "KMGTPE";
  size_t unit = 0;
  while (human != 0 && human % 1024 == 0 && unit < units.size()) {
    human /= 1024;
    ++unit;
  }
  std::string suffix = unit == 0 ? "" : std::string(1, units[unit - 1]);
  return fmt::format("{} ({}{})", size, human, suffix);
}

}  // namespace

Result<CopyPlan> MakeCopyPlan(const Options& options, const Endpoint& source,
                              const Endpoint& destination) {
  const EndpointInfo& src = source.info();
  const EndpointInfo& dst = destination.info();
  if (dst.read_only) {
    return Status::Error(destination.name() + ": the destination is read-only");
  }
  const bool incremental = options.dirty_bitmap.has_value();
  // An incremental copy writes onto the previous copy, never resizing it.
  if (src.size && dst.size && (!dst.resizable || incremental) && *src.size > *dst.size) {
    // libnbd's words first: scripts match them.
    return Status::Error(
        fmt::format("error: destination size is smaller than source size ({}: source {} bytes, "
                    "destination {} bytes)",
                    destination.name(), *src.size, *dst.size));
  }

  CopyPlan plan;
  // Block-size rules: the stricter endpoint's minimum and maximum hold for
  // both, since every request reads from one and writes to the other.
  const Endpoint* strict_minimum = &source;
  uint64_t alignment = std::bit_ceil<uint64_t>(std::max<uint32_t>(src.min_block_size, 1));
  if (uint64_t m = std::bit_ceil<uint64_t>(std::max<uint32_t>(dst.min_block_size, 1));
      m > alignment) {
    alignment = m;
    strict_minimum = &destination;
  }
  uint64_t max_request = kMaxRequestSize;
  const Endpoint* strict_maximum = nullptr;
  for (const Endpoint* endpoint : {&source, &destination}) {
    uint32_t maximum = endpoint->info().max_block_size;
    if (maximum != 0 && std::bit_floor<uint64_t>(maximum) < max_request) {
      max_request = std::bit_floor<uint64_t>(maximum);
      strict_maximum = endpoint;
    }
  }
  if (alignment > max_request) {
    return Status::Error(
        fmt::format("{}: maximum block size {} is smaller than the minimum block size {} of {}",
                    strict_maximum->name(), max_request, alignment, strict_minimum->name()));
  }
  if (options.request_size_set && options.request_size < alignment) {
    return Status::Error(fmt::format("--request-size={}: smaller than {}'s minimum block size {}",
                                     options.request_size, strict_minimum->name(), alignment));
  }
  // A blkhash block is hashed from one buffer: requests cover whole blocks.
  if (auto hash = ChecksumSpec(options)) {
    if (hash->block_size > max_request) {
      return Status::Error(
          fmt::format("--blkhash: block size {} is larger than {}'s maximum "
                      "block size {}",
                      hash->block_size, strict_maximum->name(), max_request));
    }
    alignment = std::max(alignment, hash->block_size);
  }
  plan.alignment = alignment;

  uint64_t preferred = std::max(src.preferred_block_size, dst.preferred_block_size);
  plan.request_size = std::max({options.request_size, preferred, alignment});
  if (plan.request_size > max_request) {
    // No endpoint's maximum: a preferred block size above our own limit.
    plan.notes +=
        fmt::format("nbdcopy: request size {} lowered to {}, {}\n", plan.request_size, max_request,
                    strict_maximum ? strict_maximum->name() + "'s maximum block size"
                                   : std::string("the largest request"));
    plan.request_size = max_request;
  }
  plan.min_request_size =
      options.request_size_set
          ? plan.request_size
          : std::min(plan.request_size, std::max({kSmallestAdaptiveRequest, preferred, alignment}));
  plan.coalesce_below = std::max(alignment, std::min(kCoalesceHoles, plan.request_size));
  // Zero detection never splits a destination block.
  plan.sparse_size =
      options.sparse_size == 0
          ? 0
          : std::max<uint64_t>(
                {options.sparse_size, dst.preferred_block_size,
                 std::bit_ceil<uint64_t>(std::max<uint32_t>(dst.min_block_size, 1))});
  if (src.size && dst.size && *src.size < *dst.size && (!dst.resizable || incremental) &&
      !dst.partial_blocks_ok && *src.size % std::max<uint32_t>(dst.min_block_size, 1) != 0) {
    return Status::Error(fmt::format(
        "{}: source size {} is not a multiple of the destination's minimum block size {}, and "
        "the destination is larger: its last block cannot be written in part",
        destination.name(), *src.size, dst.min_block_size));
  }
  plan.queue_size = std::max(options.queue_size, plan.request_size);
  plan.requests = options.requests;
  plan.synchronous = options.synchronous || src.sequential || dst.sequential;
  unsigned threads = options.threads == 0 ? OnlineCpus() : options.threads;
  plan.connections = std::min(options.connections, threads);
  if (plan.synchronous || !src.can_multi_conn || !dst.can_multi_conn) plan.connections = 1;
  // Clean ranges come with the extents: an incremental copy always asks.
  plan.use_extents = (options.extents || incremental) && src.can_extents;
  plan.zero_extents = options.extents;
  plan.clone_data = !ChecksumSpec(options) && !options.allocated && !incremental;
  plan.skip_costly_maps = plan.use_extents && plan.zero_extents && !incremental &&
                          plan.sparse_size > 0 && plan.sparse_size <= plan.coalesce_below &&
                          dst.efficient_zero;
  plan.incremental = incremental;
  plan.allocated = options.allocated;
  plan.flush = options.flush;
  return plan;
}

PlanRules RulesFor(const CopyPlan& plan, uint64_t size) {
  PlanRules rules;
  rules.image_size = size;
  rules.alignment = plan.alignment;
  rules.max_data = plan.request_size;
  rules.max_zero = std::max(plan.alignment, kMaxZeroOperation / plan.alignment * plan.alignment);
  rules.coalesce_below = plan.coalesce_below;
  rules.zero_extents = plan.zero_extents;
  rules.skip_clean = plan.incremental;
  return rules;
}

Status PrepareDestination(const Options& options, const Endpoint& source, Endpoint& destination,
                          CopyPlan* plan) {
  const EndpointInfo& src = source.info();
  if (plan->incremental) {
    plan->skip_zero_ranges = false;  // the destination holds old data, not zeroes
    return Status::Ok();
  }
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

// libnbd's -v lines first, byte for byte (scripts grep them), then ours on
// the same line after them.
std::string DescribeCopy(const CopyPlan& plan, const Endpoint& source,
                         const Endpoint& destination) {
  auto describe = [](const char* role, const Endpoint& endpoint) {
    const EndpointInfo& info = endpoint.info();
    return fmt::format(
        "nbdcopy: {}: {} \"{}\"\n"
        "nbdcopy: {}: size={}, preferred block size={} block_min={} block_max={} read_only={} "
        "extents={} zero={} flush={} multi_conn={} sequential={} overlapped_io={} "
        "inline_writes_below={}\n",
        role, info.ops_name, endpoint.name(), role, SizeText(info), info.preferred_block_size,
        info.min_block_size, info.max_block_size, info.read_only, info.can_extents,
        info.efficient_zero, info.can_flush, info.can_multi_conn, info.sequential,
        info.overlapped_io, info.inline_writes_below);
  };
  return plan.notes + describe("src", source) + describe("dst", destination) +
         fmt::format(
             "nbdcopy: connections={} requests={} threads={} synchronous={} request_size={} "
             "min_request_size={} alignment={} coalesce_below={} queue_size={} sparse={} "
             "extents={} allocated={} skip_zero_ranges={} flush={} incremental={}\n",
             plan.connections, plan.requests, plan.connections, plan.synchronous, plan.request_size,
             plan.min_request_size, plan.alignment, plan.coalesce_below, plan.queue_size,
             plan.sparse_size, plan.use_extents, plan.allocated, plan.skip_zero_ranges, plan.flush,
             plan.incremental);
}

}  // namespace nbdcopy
