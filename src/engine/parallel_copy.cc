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
void RunWorkers(SharedCopy& shared, Endpoint& source, Endpoint& destination, bool first_round) {
  std::vector<std::jthread> helpers;
  auto start_helpers = [&] {
    for (unsigned i = 1; i < shared.plan.connections; ++i) {
      helpers.emplace_back([&shared, &source, &destination] {
        auto source_connection = source.Connect();
        if (!source_connection.ok()) return;
        auto destination_connection = destination.Connect();
        if (!destination_connection.ok()) return;
        Worker(shared, **source_connection, **destination_connection).Run();
      });
    }
  };
  Worker(shared, source, destination,
         first_round ? std::function<void()>(start_helpers) : nullptr)
      .Run();
}  // joins the helpers

// After a round, with a checkpointer: the last checkpoint (the final
// flush); true when a destination loss left ranges to copy again, now in
// the map.
bool FinishRound(SharedCopy& shared, Endpoint& destination) {
  Checkpointer& checkpointer = *shared.checkpointer;
  const bool stopped = shared.failed() || CancelRequested();
  uint64_t seen = destination.reconnections();
  // After a failure or a signal: keep what is durable; the flush may fail
  // with the destination that failed, which then says nothing new.
  Status status = checkpointer.Checkpoint(destination);
  if (stopped) return false;
  if (!status.ok()) {
    shared.Fail(std::move(status));
    return false;
  }
  shared.map.Redo(checkpointer.ToCopyAgain(destination, &seen));
  return shared.map.has_redo();
}

}  // namespace

Status ParallelCopy(const CopyPlan& plan, Endpoint& source, Endpoint& destination,
                    ProgressSink& progress, Blkhash* blkhash, CopyStats* stats,
                    Checkpointer* checkpointer) {
  if (blkhash != nullptr && plan.alignment % blkhash->block_size() != 0) {
    return Status::Error(fmt::format("internal error: alignment {} splits blkhash blocks of {}",
                                     plan.alignment, blkhash->block_size()));
  }
  SharedCopy shared(plan, *source.info().size, blkhash, progress, checkpointer);
  bool first_round = true;
  do {
    RunWorkers(shared, source, destination, first_round);
    first_round = false;
  } while (checkpointer != nullptr && FinishRound(shared, destination));
  if (stats != nullptr) *stats = shared.stats();
  if (shared.failed()) return shared.first_error();
  if (CancelRequested()) return CancelledStatus();
  // A checkpointer's last checkpoint was the flush.
  return plan.flush && checkpointer == nullptr ? destination.Flush() : Status::Ok();
}

}  // namespace nbdcopy
