// blkhash: a block-based digest of a disk image (the construction of the
// blkhash project and of upstream nbdcopy's --blkhash). With digest H and
// block size B, an image of L bytes is split into blocks; the result is
//   H(H(block_0) || H(block_1) || ... || H(block_n-1) || LE64(L))
// A full all-zero block's digest is precomputed, so zero extents are never
// read. Digests go through OpenSSL's EVP interface, loaded on the first
// checksum (hash/digest_library.h).
//
// Thread safety: BlockDigest() and Add*() may be called from any thread;
// blocks may arrive in any order. Finish() once, after every block.
#ifndef NBDCOPY_BLKHASH_H_
#define NBDCOPY_BLKHASH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "nbdcopy/blkhash_spec.h"
#include "nbdcopy/status.h"

struct evp_md_st;
struct evp_md_ctx_st;

namespace nbdcopy {

struct DigestLibrary;  // hash/digest_library.h

class Blkhash {
 public:
  static constexpr size_t kMaxDigestSize = 64;
  // A digest by value: no allocation per block.
  struct Digest {
    std::array<unsigned char, kMaxDigestSize> bytes{};
    unsigned int size = 0;
  };

  // REQUIRES spec.block_size is a power of 2 (ParseCommandLine checks).
  static Result<std::unique_ptr<Blkhash>> Create(const BlkhashSpec& spec);
  ~Blkhash();

  uint64_t block_size() const { return block_size_; }
  size_t digest_size() const { return digest_size_; }

  // H(data): the digest of one block (a full one, or the short last one).
  Digest BlockDigest(std::span<const std::byte> data) const;

  // Block `index` has digest `digest`.
  void AddDigest(uint64_t index, Digest digest);
  // Hashes data, which starts at block `first_index` and covers whole blocks
  // (the last may be short, at the end of the image), adding each digest.
  // All-zero blocks use the precomputed digest.
  void AddData(uint64_t first_index, std::span<const std::byte> data);
  // Blocks first_index .. first_index + count - 1 are full all-zero blocks.
  void AddZeroBlocks(uint64_t first_index, uint64_t count);

  // The digest as lowercase hex. REQUIRES every block of an image of
  // `length` bytes was added.
  Result<std::string> Finish(uint64_t length);

 private:
  Blkhash(const DigestLibrary& evp, evp_md_st* md, uint64_t block_size);
  // Feeds ready blocks to the outer digest.
  void Drain() REQUIRES(mutex_);
  void FeedZeroes(uint64_t count) REQUIRES(mutex_);

  struct Pending {
    uint64_t zero_count = 0;  // > 0: a run of zero blocks
    Digest digest;            // otherwise one block's digest
  };

  const DigestLibrary& evp_;  // libcrypto, loaded by Create
  evp_md_st* md_;  // fetched once: implicit fetches per call are slow
  const uint64_t block_size_;
  size_t digest_size_ = 0;
  Digest zero_digest_;
  Mutex mutex_;
  evp_md_ctx_st* outer_ GUARDED_BY(mutex_) = nullptr;
  uint64_t next_index_ GUARDED_BY(mutex_) = 0;
  std::map<uint64_t, Pending> pending_ GUARDED_BY(mutex_);  // out-of-order arrivals
  bool failed_ GUARDED_BY(mutex_) = false;
};

// Feeds a Blkhash from a copy that moves strictly forward (the synchronous
// engine, streams): collects partial blocks until they are whole.
// Thread safety: one thread.
class SequentialBlkhash {
 public:
  explicit SequentialBlkhash(Blkhash& hash) : hash_(hash) {}

  void Data(std::span<const std::byte> data);
  void Zeroes(uint64_t length);
  // Adds the short last block, if any, and finishes.
  Result<std::string> Finish();

 private:
  Blkhash& hash_;
  std::vector<std::byte> partial_;  // bytes of the block not yet complete
  uint64_t next_index_ = 0;
  uint64_t length_ = 0;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_BLKHASH_H_
