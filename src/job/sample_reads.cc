#include "job/sample_reads.h"

#include <poll.h>

#include <cerrno>

namespace nbdcopy {

Status ReadSamples(Endpoint& endpoint, std::span<const SampleRead> samples) {
  for (size_t i = 0; i < samples.size(); ++i) {
    endpoint.StartRead(samples[i].offset, samples[i].buffer, i);
  }
  Status first;
  std::vector<Completion> completions;
  for (size_t done = 0; done < samples.size();) {
    completions.clear();
    endpoint.TakeCompletions(&completions);
    for (Completion& completion : completions) {
      if (!completion.status.ok() && first.ok()) first = std::move(completion.status);
    }
    done += completions.size();
    if (done == samples.size() || !completions.empty()) continue;
    PollInterest interest = endpoint.poll_interest();
    if (interest.fd < 0) {
      return Status::Error(endpoint.name() +
                           ": internal error: reads in flight, nothing to wait on");
    }
    pollfd fd{interest.fd, interest.events, 0};
    int ready = poll(&fd, 1, interest.timeout_ms);
    if (ready == -1 && errno != EINTR) return Status::FromErrno("poll", errno);
    if (ready >= 0) endpoint.OnPollEvents(ready == 0 ? 0 : fd.revents);
  }
  return first;
}

}  // namespace nbdcopy
