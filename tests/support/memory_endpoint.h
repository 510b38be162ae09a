// An in-memory Endpoint for unit tests: holds the image in memory, answers
// extents from a list of zero ranges, logs every operation (of every
// connection, in one log), and can be told to fail one kind of operation.
// Connect() gives more connections to the same bytes and log; they are safe
// to use from different threads.
#ifndef NBDCOPY_TESTS_MEMORY_ENDPOINT_H_
#define NBDCOPY_TESTS_MEMORY_ENDPOINT_H_

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "nbdcopy/endpoint.h"

namespace nbdcopy::fakes {

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
      : name_(std::move(name)), shared_(std::make_shared<Shared>()) {
    shared_->bytes = std::move(data);
    info_.size = shared_->bytes.size();
    info_.efficient_zero = true;
    info_.can_flush = true;
    info_.can_multi_conn = true;
  }
  static MemoryEndpoint Zeroes(size_t size) { return MemoryEndpoint(std::vector<std::byte>(size)); }

  const std::string& name() const override { return name_; }
  const EndpointInfo& info() const override { return info_; }
  EndpointInfo& mutable_info() { return info_; }
  // REQUIRES no copy running.
  const std::vector<std::byte>& data() const { return shared_->bytes; }
  std::vector<std::byte>& mutable_data() { return shared_->bytes; }
  std::vector<Operation> log() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->log;
  }
  std::vector<Operation> OpsNamed(const std::string& op) const {
    std::vector<Operation> result;
    for (const Operation& o : log()) {
      if (o.op == op) result.push_back(o);
    }
    return result;
  }

  // Extents will report [offset, offset+length) as zero (the data there
  // should be zero too, or the fake lies like a buggy server).
  void AddZeroExtent(uint64_t offset, uint64_t length) {
    zero_ranges_.push_back(Extent{offset, length, true});
    info_.can_extents = true;
  }
  // Extents will report [offset, offset+length) as clean (unchanged since a
  // dirty bitmap's checkpoint), like a source opened with --dirty-bitmap.
  void AddCleanExtent(uint64_t offset, uint64_t length) {
    clean_ranges_.push_back(Extent{offset, length, false, true});
    info_.can_extents = true;
  }
  // Reads that touch [offset, offset + length) fail with error_number, as
  // a disk's bad sectors do (--salvage); on every connection made later too.
  void FailReadsIn(uint64_t offset, uint64_t length, int error_number = EIO) {
    bad_ranges_.push_back(BadRange{offset, offset + length, error_number});
  }
  // Every connection made afterwards fails this kind of operation too.
  void FailOn(std::string op) { fail_op_ = std::move(op); }
  // A stream: no size, sequential; reads return short at the end.
  void MakeStream() {
    info_.size.reset();
    info_.sequential = true;
  }

  // Asynchronous mode: Start* does the work at once but its completion is
  // held back, and TakeCompletions() hands out a random non-empty subset,
  // so the engine sees operations finish late and out of order.
  void DeferCompletions(unsigned seed) {
    defer_ = true;
    rng_.seed(seed);
  }
  // Most data bytes one connection had reading at once (deferred mode).
  uint64_t max_read_bytes_in_flight() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->max_read_bytes_in_flight;
  }
  unsigned connections() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->connections;
  }

  // CloneRangeFrom another MemoryEndpoint succeeds (copying the bytes, like
  // a reflink shares them), except for ranges overlapping [refuse_from,
  // refuse_to); otherwise it is refused. Each attempt is logged as "clone"
  // on this endpoint.
  void AllowClones(uint64_t refuse_from = 0, uint64_t refuse_to = 0) {
    clones_ = true;
    refuse_from_ = refuse_from;
    refuse_to_ = refuse_to;
  }
  CloneResult CloneRangeFrom(Endpoint& source, uint64_t offset, uint64_t length) override {
    Log("clone", offset, length);
    auto* memory = dynamic_cast<MemoryEndpoint*>(&source);
    if (!clones_ || memory == nullptr) return CloneResult::kUnsupported;
    if (offset < refuse_to_ && refuse_from_ < offset + length) return CloneResult::kRangeRefused;
    std::scoped_lock lock(memory->shared_->mutex, shared_->mutex);
    std::copy_n(memory->shared_->bytes.begin() + static_cast<ptrdiff_t>(offset), length,
                shared_->bytes.begin() + static_cast<ptrdiff_t>(offset));
    return CloneResult::kCloned;
  }

  Result<std::unique_ptr<Endpoint>> Connect() override {
    if (fail_op_ == "connect") return Status::Error(name_ + ": cannot connect");
    auto other = std::make_unique<MemoryEndpoint>(name_, shared_);
    other->info_ = info_;
    other->clones_ = clones_;
    other->refuse_from_ = refuse_from_;
    other->refuse_to_ = refuse_to_;
    other->zero_ranges_ = zero_ranges_;
    other->clean_ranges_ = clean_ranges_;
    other->fail_op_ = fail_op_;
    other->bad_ranges_ = bad_ranges_;
    other->defer_ = defer_;
    std::lock_guard lock(shared_->mutex);
    other->rng_.seed(++shared_->connections * 7919);
    return std::unique_ptr<Endpoint>(std::move(other));
  }

  Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) override {
    Log("read", offset, buffer.size());
    if (fail_op_ == "read") return Failure("read", offset, buffer.size());
    for (const BadRange& bad : bad_ranges_) {
      if (offset < bad.end && bad.offset < offset + buffer.size()) {
        return IoError(name_, "read", offset, buffer.size(), bad.error_number);
      }
    }
    auto& bytes = shared_->bytes;
    size_t n = buffer.size();
    if (!info_.size) {
      n = std::min<size_t>(n, bytes.size() - std::min<size_t>(offset, bytes.size()));
    } else if (offset + n > bytes.size()) {
      return Failure("read", offset, n);
    }
    std::memcpy(buffer.data(), bytes.data() + offset, n);
    return n;
  }
  Status Write(uint64_t offset, std::span<const std::byte> data) override {
    Log("write", offset, data.size());
    if (fail_op_ == "write") return Failure("write", offset, data.size());
    if (offset + data.size() > shared_->bytes.size()) return Failure("write", offset, data.size());
    std::memcpy(shared_->bytes.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  Status Zero(uint64_t offset, uint64_t length, bool allocate) override {
    Log(allocate ? "zero-alloc" : "zero", offset, length);
    if (fail_op_ == "zero") return Failure("zero", offset, length);
    if (offset + length > shared_->bytes.size()) return Failure("zero", offset, length);
    std::fill_n(shared_->bytes.begin() + offset, length, std::byte{0});
    return Status::Ok();
  }
  Status Flush() override {
    Log("flush", 0, 0);
    if (fail_op_ == "flush") return Failure("flush", 0, 0);
    return Status::Ok();
  }
  Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out) override {
    Log("extents", offset, length);
    if (fail_op_ == "extents") return Failure("extents", offset, length);
    if (!info_.can_extents) return Endpoint::Extents(offset, length, out);
    const uint64_t end = offset + length;
    for (uint64_t position = offset; position < end;) {
      uint64_t next = end;
      // Is position inside one of ranges? Lowers next to where that changes.
      auto inside = [&](const std::vector<Extent>& ranges) {
        bool found = false;
        for (const Extent& range : ranges) {
          uint64_t range_end = range.offset + range.length;
          if (range.offset <= position && position < range_end) {
            found = true;
            next = std::min(next, range_end);
          } else if (range.offset > position) {
            next = std::min(next, range.offset);
          }
        }
        return found;
      };
      bool zero = inside(zero_ranges_);
      bool clean = inside(clean_ranges_);
      out->push_back(Extent{position, next - position, zero, clean});
      position = next;
    }
    return Status::Ok();
  }

  void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag) override {
    if (!defer_) return Endpoint::StartRead(offset, buffer, tag);
    read_bytes_in_flight_ += buffer.size();
    {
      std::lock_guard lock(shared_->mutex);
      shared_->max_read_bytes_in_flight =
          std::max(shared_->max_read_bytes_in_flight, read_bytes_in_flight_);
    }
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

  // State every connection shares.
  struct Shared {
    std::vector<std::byte> bytes;  // connections write disjoint ranges
    std::mutex mutex;              // guards the rest
    std::vector<Operation> log;
    uint64_t max_read_bytes_in_flight = 0;
    unsigned connections = 1;
  };
  MemoryEndpoint(std::string name, std::shared_ptr<Shared> shared)
      : name_(std::move(name)), shared_(std::move(shared)) {}

 private:
  struct BadRange {
    uint64_t offset, end;
    int error_number;
  };
  struct Deferred {
    Completion completion;
    uint64_t read_bytes;
  };

  void Log(const char* op, uint64_t offset, uint64_t length) {
    std::lock_guard lock(shared_->mutex);
    shared_->log.push_back(Operation{op, offset, length});
  }
  Status Failure(const char* op, uint64_t offset, uint64_t length) {
    return IoError(name_, op, offset, length, EIO);
  }

  std::string name_;
  std::shared_ptr<Shared> shared_;
  EndpointInfo info_;
  std::vector<Extent> zero_ranges_;
  std::vector<Extent> clean_ranges_;
  std::string fail_op_;
  std::vector<BadRange> bad_ranges_;
  bool defer_ = false;
  bool clones_ = false;
  uint64_t refuse_from_ = 0, refuse_to_ = 0;
  std::mt19937 rng_;
  std::vector<Deferred> deferred_;
  uint64_t read_bytes_in_flight_ = 0;
};

}  // namespace nbdcopy::fakes

#endif  // NBDCOPY_TESTS_MEMORY_ENDPOINT_H_
