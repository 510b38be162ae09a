// Sizes one worker's data budget: how many bytes of requests it keeps in
// flight. Too few and the servers wait for us; too many and buffers fall
// out of the CPU caches while the servers' threads fight over the cores.
//
// The budget is the pipeline's bandwidth-delay product with headroom: the
// best recent delivery rate (bytes of requests finished per second) times
// the unloaded round trip of one request (read to last write, measured on
// requests that started with nothing else in flight), times the gain
// (kGain, or the plan's: see CopyPlan::budget_gain). A
// budget too small to fill the pipeline shows as a rate that grows with
// it, so it doubles each window until the rate stops following; queueing
// beyond that inflates latency but not the unloaded round trip, so the
// budget does not chase it. Every kProbeSpacing round trips (within
// [kMinProbeInterval, kMaxProbeInterval]) the worker lets its pipeline
// drain and sends requests alone to measure the round trip again (the first
// measurement includes a cold start; servers slow down and speed up). Both inputs are filtered
// (maximum rate over a few windows, minimum latency over the probe), which keeps the budget steady
// on a noisy machine, unlike hill climbing on raw throughput.
//
// Request sizes: servers differ in what a request costs them, beyond what
// the bandwidth-delay product shows (qemu-nbd reading qcow2 spent six times
// the CPU on 1M requests as on 512K ones, and wrote a new qcow2 image four
// times faster in 1M requests than in 256K ones; the cause, found later:
// with requests of one length, glibc maps each of qemu-nbd's 4 KiB-aligned
// buffers afresh, so whichever size runs alone longest pays; see
// performance-history.md, "Why a fixed request size costs qemu-nbd six
// times the CPU"). So after the first probe a worker runs one window at
// the largest request size and, after a window to drain it, one at the
// smallest; where one size delivered at least
// kSizeWins times the rate of the other, requests stay at that size for the
// rest of the copy. Otherwise the product decides, as it does between.
// Not where the round trip is long (windows of more than kMinWindow): there
// three windows at the first budget would cost more than any request size.
// The first probe times both sizes: kProbeSamples requests of the smallest
// (whether to run the trial), then one of the largest. The product uses the
// round trip of the size in force: through nbdkit's delay filter a 1M read
// took 21 ms against 11.5 ms at 256K, and a product of the shorter one with
// the larger requests' rate kept the budget at half of what it needed.
//
// Thread safety: none; each worker owns one.
#ifndef NBDCOPY_ADAPTIVE_BUDGET_H_
#define NBDCOPY_ADAPTIVE_BUDGET_H_

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>

#include "base/clock.h"
#include "plan/copy_plan.h"

namespace nbdcopy {

class AdaptiveBudget {
 public:
  static constexpr double kGain = kUsualBudgetGain;  // (plan/copy_plan.h)
  static constexpr auto kMinWindow = std::chrono::milliseconds(10);
  static constexpr int kWindowsPerRoundTrip = 4;  // a window lasts this many round trips at least
  static constexpr unsigned kProbeSpacing = 100;  // round trips between probes
  static constexpr auto kMinProbeInterval = std::chrono::milliseconds(20);
  static constexpr auto kMaxProbeInterval = std::chrono::seconds(2);
  static constexpr unsigned kProbeSamples = 2;
  static constexpr uint64_t kRequestsPerBudget = 4;
  static constexpr double kSizeWins = 1.5;
  static constexpr auto kMinDrain = std::chrono::milliseconds(1);

  // Requests are between min_request and max_request bytes (powers of 2);
  // the budget stays within [the request size, limit] (limit itself may be
  // less than one request: then every request runs alone). now: the clock
  // that times the requests.
  AdaptiveBudget(uint64_t min_request, uint64_t max_request, uint64_t limit,
                 NowFunction now = Clock::now, double gain = kGain);
  AdaptiveBudget(uint64_t request_size, uint64_t limit)
      : AdaptiveBudget(request_size, request_size, limit) {}

  // The time on the budget's clock: when a request starts.
  Clock::time_point Now() const { return now_(); }

  // Bytes the worker may have in flight now.
  uint64_t budget() const { return probing_ ? std::min(limit_, unit_) : budget_; }

  // Size of the next data request. A pipeline that needs many bytes in
  // flight gets large requests (servers often serve a fixed number of
  // requests at once), one that needs few gets small ones (buffers stay in
  // the caches; some servers, qemu-nbd among them, handle 1M requests
  // poorly): about kRequestsPerBudget requests fill the budget.
  uint64_t request_size() const { return unit_; }

  // A data request of this worker finished now: `bytes` long, started at
  // `started` (Now() then), `alone` when nothing else of this worker's was
  // in flight then.
  void OnDone(uint64_t bytes, Clock::time_point started, bool alone);

  // For tests and -v.
  bool probing() const { return probing_; }
  bool sizes_tried() const { return trial_ == Trial::kDone; }
  Clock::duration round_trip() const { return round_trip_; }
  double rate() const;  // bytes per second, the filtered delivery rate

 private:
  // The window at each end of the request sizes (see above).
  enum class Trial { kLarge, kDrain, kSmall, kDone };

  // The first probe's requests: the smallest, then (where sizes differ)
  // one of the largest.
  enum class FirstProbe { kSmall, kLarge, kDone };

  void EndProbe(Clock::time_point now);
  void EndWindow(Clock::time_point now);
  // Ends a window of the size trial; false once the trial is over.
  bool TrialWindow(double window_rate);

  const NowFunction now_;
  const double gain_;  // the budget over the bandwidth-delay product
  // Requests are within these; the trial may close them to one size.
  uint64_t min_request_;
  uint64_t max_request_;
  const uint64_t limit_;
  uint64_t unit_;  // request size in force
  uint64_t budget_;
  Clock::duration round_trip_ = Clock::duration::max();  // unloaded, from the last probe
  Clock::duration probe_best_ = Clock::duration::max();  // during a probe
  bool probing_ = true;  // the first request runs alone: the first sample
  unsigned probe_samples_ = 0;
  Clock::time_point last_probe_;
  Clock::time_point window_start_;
  uint64_t window_bytes_ = 0;
  std::array<double, 4> window_rates_{};  // the last few windows, bytes/s
  unsigned next_window_ = 0;
  Trial trial_;
  FirstProbe first_probe_;
  // Unloaded round trips of the smallest and the largest requests, from the
  // first probe (the trial switches round_trip_ between them).
  Clock::duration small_round_trip_ = Clock::duration::max();
  Clock::duration large_round_trip_ = Clock::duration::max();
  double large_rate_ = 0;  // bytes/s of the window of largest requests
};

}  // namespace nbdcopy

#endif  // NBDCOPY_ADAPTIVE_BUDGET_H_
