#include "plan/copy_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "base/exact_size.h"

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
// A copy loop takes this many requests' worth of data from the work map at
// a time (one lock and at most one extents query per batch).
constexpr uint64_t kBatchRequests = 8;
// The budget's gain into a destination that another process serves (an NBD
// server). Its threads sleep whenever our requests run out and wake for each
// one that comes: at the usual gain of 2, nbdkit memory as a destination
// woke 12-16 % more often under us than under nbdcopy, and spent 2-5 % more
// CPU; at 4 both fell (wall 0.91-0.93x on nbdkit pattern -> memory, 0.95x
// on sparse-random, 0.93x on the 10 ms source, issue 44 in
// docs/performance.md), while into null: or a file a larger budget only
// cost caches (readnull 1.08x): so only here.
constexpr double kServedDestinationGain = 4.0;

// libnbd's "size=N (HUMAN)": a stream is -1 and an endpoint without an
// end INT64_MAX, as libnbd reports them; HUMAN is N in the largest unit
// that divides it exactly.
std::string SizeText(const EndpointInfo& info) {
  int64_t size = info.size         ? static_cast<int64_t>(*info.size)
                 : info.sequential ? -1
                                   : std::numeric_limits<int64_t>::max();
  return fmt::format("{} ({})", size, FormatExactSize(static_cast<uint64_t>(size), "KMGTPE"));
}

// What the two endpoints' sizes allow, before anything else is planned.
Status CheckSizes(const Endpoint& source, const Endpoint& destination, bool incremental) {
  const EndpointInfo& src = source.info();
  const EndpointInfo& dst = destination.info();
  if (dst.read_only) {
    return Status::Error(destination.name() + ": the destination is read-only");
  }
  // An incremental copy writes onto the previous copy, never resizing it.
  if (src.size && dst.size && (!dst.resizable || incremental) && *src.size > *dst.size) {
    // libnbd's words first: scripts match them.
    return Status::Error(
        fmt::format("error: destination size is smaller than source size ({}: source {} bytes, "
                    "destination {} bytes)",
                    destination.name(), *src.size, *dst.size));
  }
  return Status::Ok();
}

// The block-size rules of both ends folded into one: the stricter
// endpoint's minimum and maximum hold for both, since every request reads
// from one and writes to the other.
struct FoldedRules {
  uint64_t alignment = 1;    // the larger minimum, and the blkhash block
  uint64_t max_request = 0;  // the smaller maximum, and our own limit
  const Endpoint* strict_minimum = nullptr;
  const Endpoint* strict_maximum = nullptr;  // nullptr: our own limit
};

Result<FoldedRules> FoldBlockRules(const Options& options, const Endpoint& source,
                                   const Endpoint& destination) {
  FoldedRules rules{std::bit_ceil<uint64_t>(std::max<uint32_t>(source.info().min_block_size, 1)),
                    kMaxRequestSize, &source, nullptr};
  if (uint64_t m =
          std::bit_ceil<uint64_t>(std::max<uint32_t>(destination.info().min_block_size, 1));
      m > rules.alignment) {
    rules.alignment = m;
    rules.strict_minimum = &destination;
  }
  for (const Endpoint* endpoint : {&source, &destination}) {
    uint32_t maximum = endpoint->info().max_block_size;
    if (maximum != 0 && std::bit_floor<uint64_t>(maximum) < rules.max_request) {
      rules.max_request = std::bit_floor<uint64_t>(maximum);
      rules.strict_maximum = endpoint;
    }
  }
  if (rules.alignment > rules.max_request) {
    return Status::Error(
        fmt::format("{}: maximum block size {} is smaller than the minimum block size {} of {}",
                    rules.strict_maximum->name(), rules.max_request, rules.alignment,
                    rules.strict_minimum->name()));
  }
  if (options.request_size_set && options.request_size < rules.alignment) {
    return Status::Error(fmt::format("--request-size={}: smaller than {}'s minimum block size {}",
                                     options.request_size, rules.strict_minimum->name(),
                                     rules.alignment));
  }
  // A blkhash block is hashed from one buffer: requests cover whole blocks.
  if (auto hash = BlkhashToCompute(options)) {
    if (hash->block_size > rules.max_request) {
      return Status::Error(
          fmt::format("--blkhash: block size {} is larger than {}'s maximum "
                      "block size {}",
                      hash->block_size, rules.strict_maximum->name(), rules.max_request));
    }
    rules.alignment = std::max(rules.alignment, hash->block_size);
  }
  return rules;
}

// Request sizes within the folded rules: the preferred block size at
// least, adaptive down to kSmallestAdaptiveRequest unless --request-size.
void SizeRequests(const Options& options, const Endpoint& source, const Endpoint& destination,
                  const FoldedRules& rules, CopyPlan* plan) {
  uint64_t preferred =
      std::max(source.info().preferred_block_size, destination.info().preferred_block_size);
  plan->alignment = rules.alignment;
  plan->request_size = std::max({options.request_size, preferred, rules.alignment});
  if (plan->request_size > rules.max_request) {
    // No endpoint's maximum: a preferred block size above our own limit.
    plan->notes += fmt::format(
        "nbdcopy: request size {} lowered to {}, {}\n", plan->request_size, rules.max_request,
        rules.strict_maximum ? rules.strict_maximum->name() + "'s maximum block size"
                             : std::string("the largest request"));
    plan->request_size = rules.max_request;
  }
  plan->min_request_size =
      options.request_size_set
          ? plan->request_size
          : std::min(plan->request_size,
                     std::max({kSmallestAdaptiveRequest, preferred, rules.alignment}));
  plan->coalesce_below = std::max(rules.alignment, std::min(kCoalesceHoles, plan->request_size));
  plan->queue_size = options.queue_size;  // FinishPlan raises it to one request
  if (destination.info().served) plan->budget_gain = kServedDestinationGain;
}

}  // namespace

Result<CopyPlan> MakeCopyPlan(const Options& options, const Endpoint& source,
                              const Endpoint& destination,
                              std::shared_ptr<const Coverage> coverage) {
  const EndpointInfo& src = source.info();
  const EndpointInfo& dst = destination.info();
  const bool incremental = options.incremental();
  if (Status status = CheckSizes(source, destination, incremental); !status.ok()) return status;
  Result<FoldedRules> rules = FoldBlockRules(options, source, destination);
  if (!rules.ok()) return rules.status();
  CopyPlan plan;
  SizeRequests(options, source, destination, *rules, &plan);
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
  plan.requests = options.requests;
  plan.synchronous = options.synchronous || src.sequential || dst.sequential;
  unsigned threads = options.threads == 0 ? OnlineCpus() : options.threads;
  plan.connections = std::min(options.connections, threads);
  if (plan.synchronous || !src.can_multi_conn || !dst.can_multi_conn) plan.connections = 1;
  // Clean ranges come with the extents: an incremental copy always asks.
  plan.use_extents = (options.extents || incremental) && src.can_extents;
  plan.zero_extents = options.extents;
  plan.clone_data = !HashesSource(options) && !options.allocated && !incremental;
  // (Not with --allocated: it writes what it reads whole, so only the
  // source's own extents may say where the holes are.)
  plan.skip_costly_maps = plan.use_extents && plan.zero_extents && !incremental &&
                          !options.allocated && plan.sparse_size > 0 &&
                          plan.sparse_size <= plan.coalesce_below && dst.efficient_zero;
  plan.incremental = incremental;
  plan.allocated = options.allocated;
  plan.flush = options.flush;
  plan.rate = options.rate;
  plan.verbose = options.verbose;
  if (coverage != nullptr && !coverage->whole()) plan.coverage = std::move(coverage);
  FinishPlan(src.size.value_or(0), &plan);
  if (plan.queue_size != options.queue_size) {
    plan.notes += fmt::format("nbdcopy: queue size {} raised to {}, the request size\n",
                              options.queue_size, plan.queue_size);
  }
  return plan;
}

void FinishPlan(uint64_t image_size, CopyPlan* plan) {
  if (plan->min_request_size == 0) plan->min_request_size = plan->request_size;
  // A worker's queue holds one request at least.
  plan->queue_size = std::max(plan->queue_size, plan->request_size);
  plan->batch_size = kBatchRequests * plan->request_size;
  PlanRules& rules = plan->rules;
  rules.image_size = image_size;
  rules.alignment = plan->alignment;
  rules.max_data = plan->request_size;
  rules.max_zero = std::max(plan->alignment, kMaxZeroLength / plan->alignment * plan->alignment);
  rules.coalesce_below = plan->coalesce_below;
  rules.zero_extents = plan->zero_extents;
  rules.skip_clean = plan->incremental;  // the coverage is the work map's
}

Status CheckFinishedFor(const CopyPlan& plan, const Endpoint& source) {
  if (plan.batch_size != 0 && plan.rules.image_size == source.info().size) return Status::Ok();
  return Status::Error(fmt::format("internal error: the plan was not finished for {} (FinishPlan)",
                                   source.name()));
}

CopyPlan HashingPlan(const CopyPlan& copy, const EndpointInfo& image,
                     std::shared_ptr<const Coverage> coverage) {
  CopyPlan plan = copy;  // the request shape, connections, rate cap, -v
  // Reads and hashes; writes, zeroes, clones and flushes nothing.
  plan.synchronous = false;
  plan.use_extents = image.can_extents;
  plan.zero_extents = true;  // zero extents are hashed as zeroes, unread
  plan.incremental = false;  // every range of the coverage is hashed
  plan.sparse_size = 0;
  plan.clone_data = false;
  plan.allocated = false;
  plan.skip_zero_ranges = false;
  plan.flush = false;
  plan.notes.clear();
  plan.coverage = std::move(coverage);
  // (skip_costly_maps stays: zero blocks hash the same, read or not.)
  FinishPlan(image.size.value_or(0), &plan);
  return plan;
}

Status PrepareDestination(const Options& options, const Endpoint& source, Endpoint& destination,
                          CopyPlan* plan) {
  const EndpointInfo& src = source.info();
  if (plan->incremental || plan->coverage != nullptr) {
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
        "inline_writes_below={} direct_writes={}\n",
        role, info.ops_name, endpoint.name(), role, SizeText(info), info.preferred_block_size,
        info.min_block_size, info.max_block_size, info.read_only, info.can_extents,
        info.efficient_zero, info.can_flush, info.can_multi_conn, info.sequential,
        info.overlapped_io, info.inline_writes_below, info.direct_writes);
  };
  return plan.notes + describe("src", source) + describe("dst", destination) +
         fmt::format(
             "nbdcopy: connections={} requests={} threads={} synchronous={} request_size={} "
             "min_request_size={} alignment={} coalesce_below={} queue_size={} sparse={} "
             "extents={} allocated={} skip_zero_ranges={} flush={} incremental={} rate={}\n",
             plan.connections, plan.requests, plan.connections, plan.synchronous, plan.request_size,
             plan.min_request_size, plan.alignment, plan.coalesce_below, plan.queue_size,
             plan.sparse_size, plan.use_extents, plan.allocated, plan.skip_zero_ranges, plan.flush,
             plan.incremental, plan.rate);
}

}  // namespace nbdcopy
