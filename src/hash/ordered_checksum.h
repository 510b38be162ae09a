// The plain digest of an image as one byte stream (--checksum: what
// `sha256sum` prints for the same bytes), fed by copy loops whose reads
// finish in any order.
//
// A thread of its own hashes the bytes in image order. A loop hands over
// the buffer a read filled and gets it back, as a completion carrying the
// loop's tag, once it is hashed: so the only data held is what the loops'
// byte budgets already hold (nothing is copied), and a loop waits for the
// checksum only when hashing is the slower side. Zero runs (holes, zero
// extents) are hashed from a block of zeroes, never read.
//
// Why a loop's buffers cannot deadlock it: the loops take their pieces from
// the work map in image order and start their reads in order, so the first
// byte not hashed yet is always either in flight or in a loop that holds
// nothing the checksum waits on, whose budget is free to read it.
//
// Thread safety: every method may be called from any thread.
#ifndef NBDCOPY_HASH_ORDERED_CHECKSUM_H_
#define NBDCOPY_HASH_ORDERED_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/unique_fd.h"
#include "nbdcopy/endpoint.h"
#include "nbdcopy/status.h"

struct evp_md_st;
struct evp_md_ctx_st;

namespace nbdcopy {

struct DigestLibrary;  // hash/digest_library.h

class OrderedChecksum {
 public:
  // Where one loop's buffers come back: a descriptor that polls readable
  // when some have, and their completions (always OK, tag as given). Its
  // loop may destroy it once every tag it handed over came back.
  class Returns {
   public:
    Returns();
    int fd() const { return event_.get(); }
    // Appends the buffers come back since the last call.
    void Take(std::vector<Completion>* completions) EXCLUDES(mutex_);

   private:
    friend class OrderedChecksum;
    void Post(uint64_t tag) EXCLUDES(mutex_);

    Mutex mutex_;
    std::vector<uint64_t> tags_ GUARDED_BY(mutex_);
    UniqueFd event_;  // an eventfd: written, and drained, under mutex_
  };

  // algorithm: md5, sha1, sha256 or sha512. Loads libcrypto (the first
  // checksum does) and starts the thread.
  static Result<std::unique_ptr<OrderedChecksum>> Create(const std::string& algorithm);
  ~OrderedChecksum();  // stops and joins the thread
  OrderedChecksum(const OrderedChecksum&) = delete;
  OrderedChecksum& operator=(const OrderedChecksum&) = delete;

  // The image's bytes [offset, offset + data.size()). With returns, data
  // must stay unchanged until `tag` comes back through it; with none, this
  // waits until the bytes are hashed (a caller that adds in image order).
  // REQUIRES no byte of the image is added twice.
  void AddData(uint64_t offset, std::span<const std::byte> data, Returns* returns, uint64_t tag)
      EXCLUDES(mutex_);
  // [offset, offset + length) reads as zeroes.
  void AddZeroes(uint64_t offset, uint64_t length) EXCLUDES(mutex_);

  // The copy stops: every buffer held comes back now, and any added later
  // at once; Finish fails.
  void Abandon() EXCLUDES(mutex_);

  // Waits until [0, length) is hashed; the digest as lowercase hex.
  // REQUIRES every byte of [0, length) was added. Once.
  Result<std::string> Finish(uint64_t length) EXCLUDES(mutex_);

 private:
  // A stretch of the image waiting for its turn: bytes to hash (data), or
  // zeroes (data null).
  struct Stretch {
    const std::byte* data = nullptr;
    uint64_t length = 0;
    Returns* returns = nullptr;  // null: the adder waits (hashed_ passes it)
    uint64_t tag = 0;
  };

  OrderedChecksum(const DigestLibrary& evp, evp_md_st* md, evp_md_ctx_st* context);
  void HashInOrder() EXCLUDES(mutex_);
  // Hashes one stretch; false if libcrypto failed.
  bool Hash(const Stretch& stretch);
  void GiveBack(const Stretch& stretch);
  void Add(uint64_t offset, const Stretch& stretch) EXCLUDES(mutex_);

  const DigestLibrary& evp_;
  evp_md_st* const md_;
  evp_md_ctx_st* const context_;  // the thread's alone once it runs
  Mutex mutex_;
  CondVar changed_;  // a stretch added, hashed, or the end
  std::map<uint64_t, Stretch> waiting_ GUARDED_BY(mutex_);  // by offset
  uint64_t hashed_ GUARDED_BY(mutex_) = 0;  // [0, hashed_) is in the digest
  bool hashing_ GUARDED_BY(mutex_) = false;  // the thread hashes the stretch at hashed_
  bool abandoned_ GUARDED_BY(mutex_) = false;
  bool failed_ GUARDED_BY(mutex_) = false;  // libcrypto failed, or a byte came twice
  bool stop_ GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace nbdcopy

#endif  // NBDCOPY_HASH_ORDERED_CHECKSUM_H_
