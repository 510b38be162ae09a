#include "engine/adaptive_budget.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace nbdcopy {

AdaptiveBudget::AdaptiveBudget(uint64_t min_request, uint64_t max_request, uint64_t limit,
                               NowFunction now, double gain)
    : now_(std::move(now)),
      gain_(gain),
      min_request_(min_request),
      max_request_(max_request),
      limit_(limit),
      // The first probe's requests are the smallest, so that the round trip
      // it measures is the pipeline's, not one large request's transfer.
      unit_(min_request),
      budget_(std::min(limit, 4 * max_request)),
      trial_(min_request < max_request ? Trial::kLarge : Trial::kDone),
      first_probe_(min_request < max_request ? FirstProbe::kSmall : FirstProbe::kDone) {}

double AdaptiveBudget::rate() const {
  return *std::max_element(window_rates_.begin(), window_rates_.end());
}

void AdaptiveBudget::OnDone(uint64_t bytes, Clock::time_point started, bool alone) {
  const Clock::time_point now = now_();
  if (window_start_ == Clock::time_point()) {
    window_start_ = started;
    last_probe_ = started;
  }
  // (Not during the trial: its requests change size under one round trip.)
  if (alone && !probing_ && trial_ == Trial::kDone) {
    round_trip_ = std::min(round_trip_, now - started);
  }
  if (probing_ && alone) {
    probe_best_ = std::min(probe_best_, now - started);
    // (The first probe's one request of the largest size is a sample of its own.)
    if (first_probe_ == FirstProbe::kLarge || ++probe_samples_ >= kProbeSamples) {
      if (first_probe_ != FirstProbe::kSmall) return EndProbe(now);
      // The smallest requests timed: now one of the largest.
      small_round_trip_ = probe_best_;
      first_probe_ = FirstProbe::kLarge;
      unit_ = max_request_;
      probe_best_ = Clock::duration::max();
      return;
    }
  }
  window_bytes_ += bytes;
  auto window = std::max<Clock::duration>(kMinWindow, round_trip_ == Clock::duration::max()
                                                          ? kMinWindow
                                                          : kWindowsPerRoundTrip * round_trip_);
  // Draining the trial's large requests takes a round trip or two, not a
  // window's measurement.
  if (trial_ == Trial::kDrain) window = std::max<Clock::duration>(kMinDrain, 2 * round_trip_);
  if (!probing_ && now - window_start_ >= window) EndWindow(now);
}

void AdaptiveBudget::EndProbe(Clock::time_point now) {
  probing_ = false;
  round_trip_ = probe_best_;
  if (first_probe_ == FirstProbe::kLarge) {
    first_probe_ = FirstProbe::kDone;
    large_round_trip_ = round_trip_;
    // Only where the trial's windows are short: a pipeline with a long
    // round trip needs its budget to grow, not to wait three windows.
    if (kWindowsPerRoundTrip * small_round_trip_ > kMinWindow) trial_ = Trial::kDone;
  }
  last_probe_ = now;
  // The probe's own window measured a drained pipeline: not a rate.
  window_start_ = now;
  window_bytes_ = 0;
}

bool AdaptiveBudget::TrialWindow(double window_rate) {
  switch (trial_) {
    case Trial::kLarge:  // the first window after the probe: the largest requests
      large_rate_ = window_rate;
      trial_ = Trial::kDrain;
      unit_ = min_request_;
      return true;
    case Trial::kDrain:  // large requests still finishing: not measured
      trial_ = Trial::kSmall;
      round_trip_ = small_round_trip_;
      return true;
    case Trial::kSmall:
      trial_ = Trial::kDone;
      if (window_rate >= kSizeWins * large_rate_) {
        max_request_ = min_request_;
        return false;
      }
      if (large_rate_ >= kSizeWins * window_rate) {
        min_request_ = max_request_;
        unit_ = max_request_;
        round_trip_ = large_round_trip_;
      }
      // No winner: the product picks sizes from the small requests' round
      // trip (a fast pipeline whose round trip grows with its requests
      // settles on the smaller ones, whose buffers stay in the caches).
      return false;
    case Trial::kDone:
      return false;
  }
  return false;
}

void AdaptiveBudget::EndWindow(Clock::time_point now) {
  double seconds = std::chrono::duration<double>(now - window_start_).count();
  double window_rate = window_bytes_ / seconds;
  window_start_ = now;
  window_bytes_ = 0;
  // The trial keeps the first budget: the two sizes are compared with the
  // same bytes in flight, and their rates stay out of the filter.
  if (TrialWindow(window_rate)) return;
  window_rates_[next_window_++ % window_rates_.size()] = window_rate;
  double product = rate() * std::chrono::duration<double>(round_trip_).count();
  uint64_t wanted = static_cast<uint64_t>(gain_ * product);
  unit_ = std::clamp<uint64_t>(std::bit_floor(std::max<uint64_t>(wanted / kRequestsPerBudget, 1)),
                               min_request_, max_request_);
  // Whole requests: a budget of 1.9 requests would admit only one.
  wanted = (wanted + unit_ - 1) / unit_ * unit_;
  budget_ = std::clamp<uint64_t>(wanted, std::min(limit_, unit_), limit_);
  // A probe costs about three round trips of a drained pipeline: one
  // every kProbeSpacing round trips costs a few percent.
  auto interval = std::clamp<Clock::duration>(kProbeSpacing * round_trip_, kMinProbeInterval,
                                              kMaxProbeInterval);
  if (now - last_probe_ >= interval) {
    probing_ = true;
    probe_samples_ = 0;
    probe_best_ = Clock::duration::max();
  }
}

}  // namespace nbdcopy
