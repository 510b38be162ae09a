#include "hash/ordered_checksum.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/hex.h"
#include "hash/digest_library.h"

namespace nbdcopy {

namespace {

// Zero runs are hashed from this block (never written: its pages stay the
// kernel's shared zero page).
constexpr size_t kZeroBlock = 256 * 1024;
std::byte zero_block[kZeroBlock];

}  // namespace

OrderedChecksum::Returns::Returns() : event_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

// Both under the mutex: a loop that saw its last tag may destroy this at
// once, so the tag is the last thing Post touches it for (the write comes
// first), and a Take that drains the counter also takes every tag posted
// before it (no wake-up lost).
void OrderedChecksum::Returns::Post(uint64_t tag) {
  MutexLock lock(mutex_);
  // The counter is non-zero exactly while tags wait: one write wakes the
  // loop for all of them (a syscall per buffer was one per request).
  if (tags_.empty()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t written = write(event_.get(), &one, sizeof one);
  }
  tags_.push_back(tag);
}

void OrderedChecksum::Returns::Take(std::vector<Completion>* completions) {
  MutexLock lock(mutex_);
  if (tags_.empty()) return;
  uint64_t count;
  [[maybe_unused]] ssize_t got = read(event_.get(), &count, sizeof count);
  for (uint64_t tag : tags_) completions->push_back(Completion{tag, Status::Ok()});
  tags_.clear();
}

Result<std::unique_ptr<OrderedChecksum>> OrderedChecksum::Create(const std::string& algorithm) {
  Result<const DigestLibrary*> evp = LoadDigestLibrary();
  if (!evp.ok()) return Status::Error("--checksum: " + evp.status().message());
  const DigestLibrary& library = **evp;
  EVP_MD* md = library.MD_fetch(nullptr, algorithm.c_str(), nullptr);
  if (md == nullptr) return Status::Error("--checksum: unknown algorithm '" + algorithm + "'");
  EVP_MD_CTX* context = library.MD_CTX_new();
  if (context == nullptr || library.DigestInit_ex2(context, md, nullptr) != 1) {
    library.MD_CTX_free(context);
    library.MD_free(md);
    return Status::Error("--checksum: cannot initialise " + algorithm);
  }
  return std::unique_ptr<OrderedChecksum>(new OrderedChecksum(library, md, context));
}

OrderedChecksum::OrderedChecksum(const DigestLibrary& evp, EVP_MD* md, EVP_MD_CTX* context)
    : evp_(evp), md_(md), context_(context), thread_([this] { HashInOrder(); }) {}

OrderedChecksum::~OrderedChecksum() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  changed_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  evp_.MD_CTX_free(context_);
  evp_.MD_free(md_);
}

void OrderedChecksum::AddData(uint64_t offset, std::span<const std::byte> data, Returns* returns,
                              uint64_t tag) {
  Add(offset, Stretch{data.data(), data.size(), returns, tag});
  if (returns != nullptr) return;
  MutexLock lock(mutex_);
  while (hashed_ < offset + data.size() && !abandoned_ && !failed_) changed_.Wait(mutex_);
}

void OrderedChecksum::AddZeroes(uint64_t offset, uint64_t length) {
  Add(offset, Stretch{nullptr, length, nullptr, 0});
}

void OrderedChecksum::Add(uint64_t offset, const Stretch& stretch) {
  if (stretch.length == 0) {
    GiveBack(stretch);
    return;
  }
  {
    MutexLock lock(mutex_);
    if (!abandoned_) {
      if (offset >= hashed_) {
        auto [at, added] = waiting_.emplace(offset, stretch);
        if (added) {
          // Only a new first stretch can be the one the thread waits for.
          if (at == waiting_.begin()) changed_.NotifyAll();
          return;
        }
      }
      // A byte added twice would make another stream: fail, never guess.
      failed_ = true;
      changed_.NotifyAll();
    }
  }
  GiveBack(stretch);
}

void OrderedChecksum::Abandon() {
  std::map<uint64_t, Stretch> held;
  {
    MutexLock lock(mutex_);
    if (abandoned_) return;
    abandoned_ = true;
    held.swap(waiting_);
  }
  changed_.NotifyAll();
  for (const auto& [offset, stretch] : held) GiveBack(stretch);
}

void OrderedChecksum::GiveBack(const Stretch& stretch) {
  if (stretch.returns != nullptr) stretch.returns->Post(stretch.tag);
}

void OrderedChecksum::HashInOrder() {
  for (;;) {
    Stretch next;
    {
      MutexLock lock(mutex_);
      while (!stop_ && !abandoned_ &&
             (waiting_.empty() || waiting_.begin()->first != hashed_)) {
        // A stretch that begins before hashed_ overlaps what is hashed.
        if (!waiting_.empty() && waiting_.begin()->first < hashed_) break;
        changed_.Wait(mutex_);
      }
      if (stop_ || abandoned_) return;
      auto first = waiting_.begin();
      if (first->first != hashed_) {
        failed_ = true;  // overlapping stretches: no stream to hash
        changed_.NotifyAll();
        return;
      }
      next = first->second;
      waiting_.erase(first);
      hashing_ = true;
    }
    const bool ok = Hash(next);
    GiveBack(next);
    {
      MutexLock lock(mutex_);
      hashed_ += next.length;
      hashing_ = false;
      if (!ok) failed_ = true;
    }
    changed_.NotifyAll();
  }
}

bool OrderedChecksum::Hash(const Stretch& stretch) {
  if (stretch.data != nullptr) {
    return evp_.DigestUpdate(context_, stretch.data, stretch.length) == 1;
  }
  for (uint64_t left = stretch.length; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kZeroBlock));
    if (evp_.DigestUpdate(context_, zero_block, n) != 1) return false;
    left -= n;
  }
  return true;
}

Result<std::string> OrderedChecksum::Finish(uint64_t length) {
  {
    MutexLock lock(mutex_);
    // Wait while the thread has work: a stretch being hashed, or the next one.
    while (hashed_ < length && !abandoned_ && !failed_ &&
           (hashing_ || (!waiting_.empty() && waiting_.begin()->first == hashed_))) {
      changed_.Wait(mutex_);
    }
    if (failed_) return Status::Error("--checksum: the digest computation failed");
    if (abandoned_ || hashed_ != length || !waiting_.empty()) {
      return Status::Error("--checksum: internal error: bytes missing from the checksum");
    }
    stop_ = true;
  }
  changed_.NotifyAll();
  thread_.join();
  unsigned char result[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (evp_.DigestFinal_ex(context_, result, &size) != 1) {
    return Status::Error("--checksum: cannot finish the digest");
  }
  return LowercaseHex(result, size);
}

}  // namespace nbdcopy
