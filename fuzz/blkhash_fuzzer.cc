// Blkhash's combiner against a sequential reference computed here with
// one-shot OpenSSL calls: whatever order the blocks arrive in, and whether
// they come as data, single digests or runs of zero blocks, the digest is
// H(H(block_0) || ... || H(block_n-1) || LE64(length)). SequentialBlkhash,
// fed the same image in random pieces, must agree too.
//
// Input: [algorithm][block-size shift][zero mask][8-byte order seed][image].
// Blocks whose index modulo 8 is set in the zero mask are zeroed, so zero
// runs are common. At most 64 blocks: ordering needs no more, and speed
// matters more than size here.
#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "hash/blkhash.h"

namespace {

using nbdcopy::Blkhash;
using nbdcopy::BlkhashSpec;

constexpr const char* kAlgorithms[] = {"md5", "sha1", "sha256", "sha512"};

std::string ToHex(const unsigned char* bytes, size_t size) {
  std::string text;
  char two[3];
  for (size_t i = 0; i < size; ++i) {
    std::snprintf(two, sizeof two, "%02x", bytes[i]);
    text += two;
  }
  return text;
}

// The definition, written out plainly.
std::string ReferenceDigest(const char* algorithm, const std::vector<std::byte>& image,
                            size_t block) {
  // Fetched once per algorithm (an implicit fetch on every call is slow),
  // and kept reachable until exit so LeakSanitizer does not count them.
  static auto* fetched = new std::map<std::string, EVP_MD*>;
  EVP_MD*& md = (*fetched)[algorithm];
  if (md == nullptr) md = EVP_MD_fetch(nullptr, algorithm, nullptr);
  FUZZ_CHECK(md != nullptr, "no digest %s", algorithm);
  std::vector<unsigned char> outer_input;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  for (size_t offset = 0; offset < image.size(); offset += block) {
    size_t n = std::min(block, image.size() - offset);
    FUZZ_CHECK(EVP_Digest(image.data() + offset, n, digest, &size, md, nullptr) == 1, "EVP");
    outer_input.insert(outer_input.end(), digest, digest + size);
  }
  for (int i = 0; i < 8; ++i) outer_input.push_back(static_cast<unsigned char>(image.size() >> (8 * i)));
  FUZZ_CHECK(EVP_Digest(outer_input.data(), outer_input.size(), digest, &size, md, nullptr) == 1,
             "EVP");
  return ToHex(digest, size);
}

bool AllZero(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

// Runs of consecutive blocks, handed over in a shuffled order, each as one
// AddData call, one AddDigest per block, or AddZeroBlocks when it may.
std::string OutOfOrderDigest(const BlkhashSpec& spec, const std::vector<std::byte>& image,
                             std::mt19937_64& random) {
  auto hash = Blkhash::Create(spec);
  FUZZ_CHECK(hash.ok(), "Create: %s", hash.status().message().c_str());
  Blkhash& blkhash = **hash;
  const size_t block = spec.block_size;
  const uint64_t blocks = (image.size() + block - 1) / block;
  struct Run {
    uint64_t first, count;
  };
  std::vector<Run> runs;
  for (uint64_t first = 0; first < blocks;) {
    uint64_t count = std::min<uint64_t>(blocks - first, 1 + random() % 4);
    runs.push_back({first, count});
    first += count;
  }
  std::shuffle(runs.begin(), runs.end(), random);
  for (const Run& run : runs) {
    size_t offset = run.first * block;
    size_t length = std::min<size_t>(run.count * block, image.size() - offset);
    std::span<const std::byte> bytes(image.data() + offset, length);
    bool whole_zero_blocks = length == run.count * block && AllZero(bytes);
    switch (random() % 3) {
      case 0:
        if (whole_zero_blocks) {
          blkhash.AddZeroBlocks(run.first, run.count);
          break;
        }
        [[fallthrough]];
      case 1:
        blkhash.AddData(run.first, bytes);
        break;
      default:
        for (uint64_t i = 0; i < run.count; ++i) {
          auto one = bytes.subspan(i * block, std::min<size_t>(block, length - i * block));
          blkhash.AddDigest(run.first + i, blkhash.BlockDigest(one));
        }
    }
  }
  auto digest = blkhash.Finish(image.size());
  FUZZ_CHECK(digest.ok(), "Finish: %s", digest.status().message().c_str());
  return *digest;
}

// The image in random-sized pieces, front to back; all-zero pieces as Zeroes().
std::string SequentialDigest(const BlkhashSpec& spec, const std::vector<std::byte>& image,
                             std::mt19937_64& random) {
  auto hash = Blkhash::Create(spec);
  FUZZ_CHECK(hash.ok(), "Create: %s", hash.status().message().c_str());
  nbdcopy::SequentialBlkhash sequential(**hash);
  for (size_t offset = 0; offset < image.size();) {
    size_t n = std::min<size_t>(image.size() - offset, 1 + random() % (3 * spec.block_size));
    std::span<const std::byte> piece(image.data() + offset, n);
    if (AllZero(piece) && random() % 2 == 0) {
      sequential.Zeroes(n);
    } else {
      sequential.Data(piece);
    }
    offset += n;
  }
  auto digest = sequential.Finish();
  FUZZ_CHECK(digest.ok(), "Finish: %s", digest.status().message().c_str());
  return *digest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kHeader = 11;
  if (size < kHeader) return 0;
  BlkhashSpec spec;
  spec.algorithm = kAlgorithms[data[0] % 4];
  spec.block_size = uint64_t{1} << (data[1] % 10);  // 1 .. 512 bytes: many blocks per input
  const uint8_t zero_mask = data[2];
  uint64_t seed;
  std::memcpy(&seed, data + 3, sizeof seed);

  constexpr size_t kMaxBlocks = 64;
  const size_t length = std::min<size_t>(size - kHeader, kMaxBlocks * spec.block_size);
  std::vector<std::byte> image(reinterpret_cast<const std::byte*>(data + kHeader),
                               reinterpret_cast<const std::byte*>(data + kHeader + length));
  for (size_t offset = 0; offset < image.size(); offset += spec.block_size) {
    if (zero_mask & (1u << ((offset / spec.block_size) % 8))) {
      size_t n = std::min<size_t>(spec.block_size, image.size() - offset);
      std::fill_n(image.begin() + offset, n, std::byte{0});
    }
  }

  const std::string expected = ReferenceDigest(spec.algorithm.c_str(), image, spec.block_size);
  std::mt19937_64 random(seed);
  const std::string out_of_order = OutOfOrderDigest(spec, image, random);
  FUZZ_CHECK(out_of_order == expected, "out of order: %s, expected %s (%s/%llu, %zu bytes)",
             out_of_order.c_str(), expected.c_str(), spec.algorithm.c_str(),
             static_cast<unsigned long long>(spec.block_size), image.size());
  const std::string sequential = SequentialDigest(spec, image, random);
  FUZZ_CHECK(sequential == expected, "sequential: %s, expected %s (%s/%llu, %zu bytes)",
             sequential.c_str(), expected.c_str(), spec.algorithm.c_str(),
             static_cast<unsigned long long>(spec.block_size), image.size());
  return 0;
}
