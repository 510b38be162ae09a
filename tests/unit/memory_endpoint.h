// An in-memory Endpoint for unit tests: holds the image in a vector, answers
// extents from a list of zero ranges, logs every operation, and can be told
// to fail one kind of operation.
#ifndef NBDCOPY_TESTS_MEMORY_ENDPOINT_H_
#define NBDCOPY_TESTS_MEMORY_ENDPOINT_H_

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "nbdcopy/endpoint.h"

namespace nbdcopy::testing {

struct Operation {
  std::string op;  // "read", "write", "zero", "zero-alloc", "flush", "extents"
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const Operation&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Operation& op) {
  return os << op.op << "(" << op.offset << "," << op.length << ")";
}

class MemoryEndpoint : public Endpoint {
 public:
  explicit MemoryEndpoint(std::vector<std::byte> data, std::string name = "memory")
      : name_(std::move(name)),
        storage_(std::make_shared<std::vector<std::byte>>(std::move(data))),
        data_(*storage_) {
    info_.size = data_.size();
    info_.efficient_zero = true;
    info_.can_flush = true;
    info_.can_multi_conn = true;
  }
  // A stream: no size, sequential; reads return short at the end.
  void MakeStream() {
    info_.size.reset();
    info_.sequential = true;
  }
  static MemoryEndpoint Zeroes(size_t size) { return MemoryEndpoint(std::vector<std::byte>(size)); }

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  EndpointInfo& mutable_info() { return info_; }
  const std::vector<std::byte>& data() const { return data_; }
  const std::vector<Operation>& log() const { return log_; }
  void clear_log() { log_.clear(); }

  // Extents will report [offset, offset+length) as zero (the data there
  // should be zero too, or the fake lies like a buggy server).
  void AddZeroExtent(uint64_t offset, uint64_t length) {
    zero_ranges_.push_back(Extent{offset, length, true});
    info_.can_extents = true;
  }
  void FailOn(std::string op) { fail_op_ = std::move(op); }

  // Asynchronous mode: Start* does the work at once but its completion is
  // held back, and TakeCompletions() hands out a random non-empty subset,
  // so the engine sees operations finish late and out of order.
  void DeferCompletions(unsigned seed) {
    defer_ = true;
    rng_.seed(seed);
  }
  // Most data bytes this connection had reading at once (deferred mode).
  uint64_t max_read_bytes_in_flight() const { return max_read_bytes_in_flight_; }

  // Another connection to the same bytes, with its own log and settings.
  Result<std::unique_ptr<Endpoint>> Connect() override {
    auto other = std::unique_ptr<MemoryEndpoint>(new MemoryEndpoint(*this));
    other->log_.clear();
    other->completions_.clear();
    other->deferred_.clear();
    other->rng_.seed(static_cast<unsigned>(rng_()));
    return std::unique_ptr<Endpoint>(std::move(other));
  }

  void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) override {
    if (!defer_) return Endpoint::StartRead(offset, buffer, tag);
    read_bytes_in_flight_ += buffer.size();
    max_read_bytes_in_flight_ = std::max(max_read_bytes_in_flight_, read_bytes_in_flight_);
    Result<size_t> got = Read(offset, buffer);
    deferred_.push_back({Completion{tag, got.ok() ? Status::Ok() : got.status()}, buffer.size()});
  }
  void StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag) override {
    if (!defer_) return Endpoint::StartWrite(offset, data, tag);
    deferred_.push_back({Completion{tag, Write(offset, data)}, 0});
  }
  void StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag) override {
    if (!defer_) return Endpoint::StartZero(offset, length, allocate, tag);
    deferred_.push_back({Completion{tag, Zero(offset, length, allocate)}, 0});
  }
  void TakeCompletions(std::vector<Completion>* out) override {
    Endpoint::TakeCompletions(out);
    if (deferred_.empty()) return;
    std::shuffle(deferred_.begin(), deferred_.end(), rng_);
    size_t n = 1 + rng_() % deferred_.size();
    for (size_t i = 0; i < n; ++i) {
      read_bytes_in_flight_ -= deferred_.back().read_bytes;
      out->push_back(std::move(deferred_.back().completion));
      deferred_.pop_back();
    }
  }

  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override {
    log_.push_back({"read", offset, buffer.size()});
    if (fail_op_ == "read") return Failure("read", offset, buffer.size());
    size_t n = buffer.size();
    if (!info_.size) {
      n = std::min<size_t>(n, data_.size() - std::min<size_t>(offset, data_.size()));
    } else if (offset + n > data_.size()) {
      return Failure("read", offset, n);
    }
    std::memcpy(buffer.data(), data_.data() + offset, n);
    return n;
  }
  Status Write(uint64_t offset, std::span<const std::byte> bytes) override {
    log_.push_back({"write", offset, bytes.size()});
    if (fail_op_ == "write") return Failure("write", offset, bytes.size());
    if (offset + bytes.size() > data_.size()) return Failure("write", offset, bytes.size());
    std::memcpy(data_.data() + offset, bytes.data(), bytes.size());
    return Status::Ok();
  }
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override {
    log_.push_back({allocate ? "zero-alloc" : "zero", offset, length});
    if (fail_op_ == "zero") return Failure("zero", offset, length);
    if (offset + length > data_.size()) return Failure("zero", offset, length);
    std::fill_n(data_.begin() + offset, length, std::byte{0});
    return Status::Ok();
  }
  Status Flush() override {
    log_.push_back({"flush", 0, 0});
    if (fail_op_ == "flush") return Failure("flush", 0, 0);
    return Status::Ok();
  }
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    log_.push_back({"extents", offset, length});
    if (fail_op_ == "extents") return Failure("extents", offset, length);
    if (!info_.can_extents) return Endpoint::Extents(offset, length, out);
    const uint64_t end = offset + length;
    for (uint64_t position = offset; position < end;) {
      uint64_t next = end;
      bool zero = false;
      for (const Extent& range : zero_ranges_) {
        uint64_t range_end = range.offset + range.length;
        if (range.offset <= position && position < range_end) {
          zero = true;
          next = std::min(next, range_end);
        } else if (range.offset > position) {
          next = std::min(next, range.offset);
        }
      }
      out->push_back(Extent{position, next - position, zero});
      position = next;
    }
    return Status::Ok();
  }

 private:
  Status Failure(const char* op, uint64_t offset, uint64_t length) {
    return IoError(name_, op, offset, length, "Input/output error", EIO);
  }

  struct Deferred {
    Completion completion;
    uint64_t read_bytes;
  };

  MemoryEndpoint(const MemoryEndpoint&) = default;

  std::string name_;
  std::shared_ptr<std::vector<std::byte>> storage_;  // shared by connections
  std::vector<std::byte>& data_;
  EndpointInfo info_;
  bool defer_ = false;
  std::mt19937 rng_;
  std::vector<Deferred> deferred_;
  uint64_t read_bytes_in_flight_ = 0;
  uint64_t max_read_bytes_in_flight_ = 0;
  std::vector<Operation> log_;
  std::vector<Extent> zero_ranges_;
  std::string fail_op_;
};

}  // namespace nbdcopy::testing

#endif  // NBDCOPY_TESTS_MEMORY_ENDPOINT_H_
