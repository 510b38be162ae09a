// The one interface every kind of source and destination implements
// (file, block device, pipe, NBD server, null:). The copy engine sees only
// this interface and never asks which kind it drives: differences show up as
// EndpointInfo capabilities.
//
// Thread safety: an Endpoint is used by one thread at a time. Several
// workers each use their own connection, made with Connect().
// Errors: every failed operation returns a Status whose message names the
// endpoint, the operation, the offset and length, and the OS's or server's
// reason, ready to print after "nbdcopy: ".
#ifndef NBDCOPY_ENDPOINT_H_
#define NBDCOPY_ENDPOINT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nbdcopy/status.h"

namespace nbdcopy {

// A run of the image. zero == true only when the source guarantees the run
// reads as zeroes; anything else (including "unallocated") is data.
// clean == true only from a source opened with a dirty bitmap
// (--dirty-bitmap): the run has not changed since the bitmap's checkpoint,
// so an incremental copy leaves the destination alone there.
struct Extent {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool zero = false;
  bool clean = false;
  bool operator==(const Extent&) const = default;
};

// A finished asynchronous operation: the caller's tag and how it ended.
struct Completion {
  uint64_t tag = 0;
  Status status;
};

// What an endpoint with operations in flight waits on: poll(2) fd and
// events, or fd -1 when its completions never need waiting for; and how
// long it may wait before OnPollEvents(0) must be called (-1: forever).
struct PollInterest {
  int fd = -1;
  short events = 0;
  int timeout_ms = -1;
};

struct EndpointInfo {
  std::optional<uint64_t> size;  // nullopt: a stream whose end is found by reading
  // What libnbd's nbdcopy calls this kind of endpoint in its -v lines
  // ("file_ops", "pipe_ops", "nbd_ops", "null_ops"), which scripts grep.
  const char* ops_name = "file_ops";
  // Block-size rules (powers of 2). Every request starts and ends on a
  // multiple of min_block_size, except at the end of an image whose size is
  // not a multiple of it; reads and writes are at most max_block_size
  // (0: no limit of the endpoint's own). Zero operations carry no payload
  // and are not bound by the maximum.
  uint32_t min_block_size = 1;
  uint32_t preferred_block_size = 4096;
  uint32_t max_block_size = 0;
  // Reads and writes at any alignment work (the page cache of a block
  // device); min_block_size still binds zero operations.
  bool partial_blocks_ok = false;
  bool read_only = false;
  bool sequential = false;      // offsets must advance without gaps (pipes)
  bool resizable = false;       // Truncate() works (regular files)
  bool efficient_zero = false;  // Zero() is cheaper than writing zero bytes
  bool can_flush = false;       // Flush() does something
  bool can_extents = false;     // Extents() may report zero runs
  bool can_multi_conn = false;  // several connections share one cache
  bool reads_as_zero = false;   // every byte currently reads as zero
  bool overlapped_io = false;   // Start* returns before the I/O is done
  // Another process does its I/O (an NBD server), and its threads sleep
  // whenever its queue of our requests runs dry.
  bool served = false;
  // Overlapped endpoints: writes shorter than this run inline in StartWrite
  // (where handing them over costs more than doing them).
  uint32_t inline_writes_below = 0;
  // Writes bypass the page cache (O_DIRECT): a block-device destination,
  // whose writes then reach the device while the copy runs.
  bool direct_writes = false;
};

// What CloneRangeFrom did.
enum class CloneResult {
  kCloned,        // the range now shares the source's blocks
  kRangeRefused,  // not this range (unaligned, say); another may work
  kUnsupported,   // never between these two (other kinds, file systems, no reflink)
};

// The largest zero operation the engines plan: NBD's 32-bit lengths, kept a
// power of 2 so that it stays a multiple of every alignment.
inline constexpr uint64_t kMaxZeroLength = uint64_t{1} << 30;

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Printable description with secrets removed.
  virtual const std::string& name() const = 0;
  virtual const EndpointInfo& info() const = 0;

  // Reads into buffer at offset. A random-access endpoint fills the whole
  // buffer (REQUIRES offset + buffer.size() <= size). A sequential one
  // returns fewer bytes only at the end of the stream, and 0 at its end.
  virtual Result<size_t> Read(uint64_t offset, std::span<std::byte> buffer) = 0;

  virtual Status Write(uint64_t offset, std::span<const std::byte> data) = 0;

  // Makes [offset, offset + length) read as zeroes, by the cheapest correct
  // means this endpoint has (falling back to writing zero bytes).
  // allocate: the range must stay allocated (no holes punched).
  virtual Status Zero(uint64_t offset, uint64_t length, bool allocate) = 0;

  // Makes completed writes durable. A no-op where there is nothing to flush.
  virtual Status Flush() = 0;

  // The end of a copy without --flush: waits for completed writes that are
  // still only in a cache of this machine's to reach the endpoint, and
  // reports what failed on the way (a block device's page cache is written
  // back after each write returned; a write-back into a full thin device
  // fails there). Asks no device to empty its own cache, as Flush does.
  // Default: every completed write has reached the endpoint.
  virtual Status Settle() { return Status::Ok(); }

  // Describes a prefix of [offset, offset + length): appends one or more
  // extents to *out, the first starting at offset, contiguous, within the
  // range. Endpoints without extent information report one data extent.
  virtual Status Extents(uint64_t offset, uint64_t length, std::vector<Extent>* out);

  // REQUIRES info().resizable. Discards the contents and sets the size;
  // afterwards every byte reads as zero.
  virtual Status Truncate(uint64_t size);

  // Opens another connection to the same image, for another worker thread.
  // REQUIRES info().can_multi_conn.
  // Thread safety: may be called from any thread while the thread that owns
  // this endpoint keeps using it.
  virtual Result<std::unique_ptr<Endpoint>> Connect();

  // Makes [offset, offset + length) of this endpoint share the blocks of the
  // same range of `source` (a reflink, as on XFS and btrfs) without reading
  // or writing the data. Anything but kCloned: the caller copies the range,
  // which also repairs whatever a failed clone left. The endpoint only
  // reports; when to stop asking is the engines' rule (engine/clone_rule.h).
  // REQUIRES the range lies within both and length > 0.
  [[nodiscard]] virtual CloneResult CloneRangeFrom(Endpoint& source, uint64_t offset,
                                                   uint64_t length) {
    return CloneResult::kUnsupported;
  }

  // How many times this connection was re-established after it dropped
  // (NBD with --retry); what was in flight then was issued again. A
  // destination that restarted may have lost acknowledged writes that were
  // not flushed: the engines watch this count (engine/checkpointer.h).
  virtual uint64_t reconnections() const { return 0; }

  // Asynchronous operations for the parallel engine. Each Start* begins an
  // operation; it finishes later and shows up in TakeCompletions() with the
  // tag given here. Buffers must stay valid until then. The default
  // implementation runs the synchronous call at once and queues its result,
  // so every endpoint works with the engine; endpoints with real
  // asynchronous I/O override all of these.
  virtual void StartRead(uint64_t offset, std::span<std::byte> buffer, uint64_t tag);
  virtual void StartWrite(uint64_t offset, std::span<const std::byte> data, uint64_t tag);
  virtual void StartZero(uint64_t offset, uint64_t length, bool allocate, uint64_t tag);
  // Moves the operations finished so far to *out (appending).
  virtual void TakeCompletions(std::vector<Completion>* out);
  // What to poll for while operations are in flight.
  virtual PollInterest poll_interest() const { return {}; }
  // Handles the events poll(2) returned for poll_interest().fd; revents 0
  // when poll(2) timed out (the endpoint may then give up on its I/O,
  // failing what was in flight).
  virtual void OnPollEvents(short revents) {}

 protected:
  std::vector<Completion> completions_;  // finished, not yet taken
};

// Writes zero bytes over [offset, offset + length) with Write(): the last
// resort for endpoints that have no cheaper way.
Status WriteZeroBytes(Endpoint& endpoint, uint64_t offset, uint64_t length);

// "<name>: <op> at offset <offset> length <length>: <why>"
Status IoError(const std::string& name, const char* op, uint64_t offset, uint64_t length,
               const std::string& why);
// The same with why = strerror(error_number), which the Status remembers
// (Status::error_number: --salvage tells an unreadable range by it).
Status IoError(const std::string& name, const char* op, uint64_t offset, uint64_t length,
               int error_number);

}  // namespace nbdcopy

#endif  // NBDCOPY_ENDPOINT_H_
