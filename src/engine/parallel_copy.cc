#include "engine/parallel_copy.h"

#include <fmt/format.h>

#include <thread>
#include <vector>

#include "engine/worker.h"
#include "nbdcopy/cancel.h"

namespace nbdcopy {

namespace {

// One round of workers over what the map holds. first_round: other
// workers start once there is data to move (an image of holes and zeroes
// is done by one connection before a second could finish its handshake);
// later rounds (ranges to copy again) are small, done by one.
void CopyWithWorkers(SharedCopy& shared, Endpoint& source, Endpoint& destination, bool first_round) {
  std::vector<std::jthread> helpers;
  auto start_helpers = [&] {
    for (unsigned i = 1; i < shared.plan.connections; ++i) {
      helpers.emplace_back([&shared, &source, &destination, number = i + 1] {
        // One that cannot connect (--retry's attempts included) leaves its
        // work to the others, and the stats say so; after a signal it was
        // only cut short.
        auto opened = [&shared, number](const Result<std::unique_ptr<Endpoint>>& connection) {
          if (!connection.ok() && !CancelRequested()) {
            shared.ConnectionFailed(number, connection.status());
          }
          return connection.ok();
        };
        auto source_connection = source.Connect();
        if (!opened(source_connection)) return;
        auto destination_connection = destination.Connect();
        if (!opened(destination_connection)) return;
        Worker(shared, **source_connection, **destination_connection, nullptr, true).Work();
      });
    }
  };
  Worker(shared, source, destination, first_round ? std::function<void()>(start_helpers) : nullptr)
      .Work();
}  // joins the helpers

}  // namespace

Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination, CopyBooks& books,
                    CopyStats* stats) {
  if (Status status = CheckFinishedFor(plan, source); !status.ok()) return status;
  SharedCopy shared(plan, books);
  bool first_round = true, again = false;
  do {
    CopyWithWorkers(shared, source, destination, first_round);
    first_round = false;
    const bool stopped = shared.failed() || CancelRequested();
    // The last checkpoint (the flush); after a failure or a signal it keeps
    // what is durable, and its own failure then says nothing new.
    Status status = books.EndRound(destination, &shared.map, stopped, &again);
    if (!stopped && !status.ok()) shared.Fail(std::move(status));
  } while (again && !shared.failed() && !CancelRequested());
  if (stats != nullptr) *stats = shared.stats();
  if (shared.failed()) return shared.first_error();
  if (CancelRequested()) return CancelledStatus();
  return Status::Ok();
}

}  // namespace nbdcopy
