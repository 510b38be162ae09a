#include "engine/parallel_copy.h"

#include <fmt/format.h>

#include <thread>
#include <vector>

#include "engine/worker.h"
#include "nbdcopy/cancel.h"

namespace nbdcopy {

Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                    ProgressSink& progress, Blkhash* blkhash, CopyStats* stats) {
  if (blkhash != nullptr && plan.alignment % blkhash->block_size() != 0) {
    return Status::Error(fmt::format("internal error: alignment {} splits blkhash blocks of {}",
                                     plan.alignment, blkhash->block_size()));
  }
  SharedCopy shared(plan, *source.info().size, blkhash, progress);
  {
    // Other workers start only once there is data to move: an image of
    // holes and zeroes is done by one connection before a second could
    // finish its handshake.
    std::vector<std::jthread> helpers;
    auto start_helpers = [&] {
      for (unsigned i = 1; i < plan.connections; ++i) {
        helpers.emplace_back([&shared, &source, &destination] {
          auto source_connection = source.Connect();
          if (!source_connection.ok()) return;
          auto destination_connection = destination.Connect();
          if (!destination_connection.ok()) return;
          Worker(shared, **source_connection, **destination_connection).Run();
        });
      }
    };
    Worker(shared, source, destination, start_helpers).Run();
  }  // joins the helpers
  if (stats != nullptr) *stats = shared.stats();
  if (shared.failed()) return shared.first_error();
  if (CancelRequested()) return CancelledStatus();
  return plan.flush ? destination.Flush() : Status::Ok();
}

}  // namespace nbdcopy
