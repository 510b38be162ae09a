#include "hash/blkhash.h"

#include <algorithm>
#include <memory>

#include "base/hex.h"
#include "base/zero_detect.h"
#include "hash/digest_library.h"

namespace nbdcopy {

namespace {

struct ContextFree {
  const DigestLibrary* evp;
  void operator()(EVP_MD_CTX* context) const { evp->MD_CTX_free(context); }
};

// One digest context per thread, reused for every block it hashes.
EVP_MD_CTX* ThreadContext(const DigestLibrary& evp) {
  thread_local std::unique_ptr<EVP_MD_CTX, ContextFree> context(evp.MD_CTX_new(),
                                                                ContextFree{&evp});
  return context.get();
}

}  // namespace

Result<std::unique_ptr<Blkhash>> Blkhash::Create(const BlkhashSpec& spec) {
  Result<const DigestLibrary*> evp = LoadDigestLibrary();
  if (!evp.ok()) return Status::Error("--blkhash: " + evp.status().message());
  EVP_MD* md = IsBlkhashAlgorithm(spec.algorithm)
                   ? (*evp)->MD_fetch(nullptr, spec.algorithm.c_str(), nullptr)
                   : nullptr;
  if (md == nullptr) return Status::Error("--blkhash: unknown algorithm '" + spec.algorithm + "'");
  std::unique_ptr<Blkhash> hash(new Blkhash(**evp, md, spec.block_size));
  {
    MutexLock lock(hash->mutex_);  // not shared yet, but the analysis cannot know
    if (hash->outer_ == nullptr || hash->evp_.DigestInit_ex2(hash->outer_, md, nullptr) != 1) {
      return Status::Error("--blkhash: cannot initialise " + spec.algorithm);
    }
  }
  std::vector<std::byte> zeroes(spec.block_size);
  hash->zero_digest_ = hash->BlockDigest(zeroes);
  return hash;
}

Blkhash::Blkhash(const DigestLibrary& evp, EVP_MD* md, uint64_t block_size)
    : evp_(evp), md_(md), block_size_(block_size), outer_(evp.MD_CTX_new()) {
  digest_size_ = static_cast<size_t>(evp_.MD_get_size(md));
}

Blkhash::~Blkhash() {
  evp_.MD_CTX_free(outer_);
  evp_.MD_free(md_);
}

Blkhash::Digest Blkhash::BlockDigest(std::span<const std::byte> data) const {
  Digest digest;
  EVP_MD_CTX* context = ThreadContext(evp_);
  if (context == nullptr || evp_.DigestInit_ex2(context, md_, nullptr) != 1 ||
      evp_.DigestUpdate(context, data.data(), data.size()) != 1 ||
      evp_.DigestFinal_ex(context, digest.bytes.data(), &digest.size) != 1) {
    digest.size = 0;  // Finish() reports the failure
  }
  return digest;
}

void Blkhash::AddData(uint64_t first_index, std::span<const std::byte> data) {
  // Hash outside the lock; hand the digests over under one lock per call.
  std::vector<std::pair<uint64_t, Pending>> digests;
  digests.reserve((data.size() + block_size_ - 1) / block_size_);
  for (size_t offset = 0; offset < data.size(); offset += block_size_, ++first_index) {
    auto block = data.subspan(offset, std::min<size_t>(block_size_, data.size() - offset));
    if (block.size() == block_size_ && IsZero(block)) {
      digests.emplace_back(first_index, Pending{1, {}});
    } else {
      digests.emplace_back(first_index, Pending{0, BlockDigest(block)});
    }
  }
  MutexLock lock(mutex_);
  for (auto& [index, pending] : digests) pending_[index] = pending;
  Drain();
}

void Blkhash::AddDigest(uint64_t index, Digest digest) {
  MutexLock lock(mutex_);
  pending_[index] = Pending{0, digest};
  Drain();
}

void Blkhash::AddZeroBlocks(uint64_t first_index, uint64_t count) {
  if (count == 0) return;
  MutexLock lock(mutex_);
  pending_[first_index] = Pending{count, {}};
  Drain();
}

void Blkhash::Drain() {
  for (auto it = pending_.begin(); it != pending_.end() && it->first == next_index_;
       it = pending_.erase(it)) {
    if (it->second.zero_count > 0) {
      FeedZeroes(it->second.zero_count);
      next_index_ += it->second.zero_count;
    } else {
      const Digest& digest = it->second.digest;
      if (digest.size != digest_size_ ||
          evp_.DigestUpdate(outer_, digest.bytes.data(), digest.size) != 1) {
        failed_ = true;
      }
      ++next_index_;
    }
  }
}

void Blkhash::FeedZeroes(uint64_t count) {
  // Feed many copies per call: a 16 GiB hole is 262144 digests.
  constexpr uint64_t kBatch = 256;
  std::vector<unsigned char> batch;
  batch.reserve(kBatch * digest_size_);
  for (uint64_t i = 0; i < std::min(count, kBatch); ++i) {
    batch.insert(batch.end(), zero_digest_.bytes.begin(),
                 zero_digest_.bytes.begin() + zero_digest_.size);
  }
  while (count > 0) {
    uint64_t n = std::min(count, kBatch);
    if (evp_.DigestUpdate(outer_, batch.data(), n * digest_size_) != 1) failed_ = true;
    count -= n;
  }
}

Result<std::string> Blkhash::Finish(uint64_t length) {
  MutexLock lock(mutex_);
  uint64_t blocks = (length + block_size_ - 1) / block_size_;
  if (failed_) return Status::Error("--blkhash: the digest computation failed");
  if (next_index_ != blocks || !pending_.empty()) {
    return Status::Error("--blkhash: internal error: blocks missing from the checksum");
  }
  unsigned char tail[8];
  for (int i = 0; i < 8; ++i) tail[i] = static_cast<unsigned char>(length >> (8 * i));
  unsigned char result[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (evp_.DigestUpdate(outer_, tail, sizeof tail) != 1 ||
      evp_.DigestFinal_ex(outer_, result, &size) != 1) {
    return Status::Error("--blkhash: cannot finish the digest");
  }
  return LowercaseHex(result, size);
}

void SequentialBlkhash::Data(std::span<const std::byte> data) {
  const uint64_t block = hash_.block_size();
  length_ += data.size();
  if (!partial_.empty()) {
    size_t n = std::min<size_t>(block - partial_.size(), data.size());
    // resize + copy rather than insert(end, first, last): GCC 14 -O2 reports
    // a false -Wstringop-overflow in vector's range insert here.
    const size_t held = partial_.size();
    partial_.resize(held + n);
    std::copy_n(data.begin(), n, partial_.begin() + static_cast<std::ptrdiff_t>(held));
    data = data.subspan(n);
    if (partial_.size() < block) return;
    hash_.AddData(next_index_++, partial_);
    partial_.clear();
  }
  size_t whole = data.size() / block * block;
  hash_.AddData(next_index_, data.first(whole));
  next_index_ += whole / block;
  partial_.assign(data.begin() + whole, data.end());
}

void SequentialBlkhash::Zeroes(uint64_t length) {
  const uint64_t block = hash_.block_size();
  if (!partial_.empty()) {
    uint64_t n = std::min<uint64_t>(block - partial_.size(), length);
    std::vector<std::byte> zeroes(n);
    Data(zeroes);
    length -= n;
    if (length == 0) return;
  }
  hash_.AddZeroBlocks(next_index_, length / block);
  next_index_ += length / block;
  length_ += length / block * block;
  partial_.assign(length % block, std::byte{0});
  length_ += length % block;
}

Result<std::string> SequentialBlkhash::Finish() {
  if (!partial_.empty()) hash_.AddDigest(next_index_++, hash_.BlockDigest(partial_));
  partial_.clear();
  return hash_.Finish(length_);
}

}  // namespace nbdcopy
