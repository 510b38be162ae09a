#include "hash/ordered_checksum.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/hex.h"
#include "hash/digest_library.h"

namespace nbdcopy {
namespace {

std::vector<std::byte> Bytes(const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

std::vector<std::byte> Random(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
  return bytes;
}

// libcrypto's one-shot digest of the whole image: what sha256sum prints.
std::string Reference(const std::vector<std::byte>& image, const std::string& algorithm) {
  const DigestLibrary& evp = **LoadDigestLibrary();
  EVP_MD* md = evp.MD_fetch(nullptr, algorithm.c_str(), nullptr);
  EVP_MD_CTX* context = evp.MD_CTX_new();
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  evp.DigestInit_ex2(context, md, nullptr);
  evp.DigestUpdate(context, image.data(), image.size());
  evp.DigestFinal_ex(context, out, &size);
  evp.MD_CTX_free(context);
  evp.MD_free(md);
  return LowercaseHex(out, size);
}

std::unique_ptr<OrderedChecksum> Make(const std::string& algorithm = "sha256") {
  auto created = OrderedChecksum::Create(algorithm);
  EXPECT_TRUE(created.ok()) << created.status().message();
  return std::move(created).value();
}

// Waits (poll, no timing) until `want` tags came back.
std::vector<uint64_t> TakeTags(OrderedChecksum::Returns& returns, size_t want) {
  std::vector<Completion> completions;
  while (completions.size() < want) {
    pollfd fd{returns.fd(), POLLIN, 0};
    EXPECT_EQ(poll(&fd, 1, -1), 1);
    returns.Take(&completions);
  }
  std::vector<uint64_t> tags;
  for (const Completion& completion : completions) {
    EXPECT_TRUE(completion.status.ok());
    tags.push_back(completion.tag);
  }
  return tags;
}

TEST(OrderedChecksumTest, KnownDigestsInOrder) {
  // sha256sum, md5sum, sha1sum and sha512sum of "hello".
  const std::vector<std::pair<std::string, std::string>> known = {
      {"sha256", "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
      {"md5", "5d41402abc4b2a76b9719d911017c592"},
      {"sha1", "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"},
      {"sha512",
       "9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca72323c3d99ba5c11d7c7acc6e14b8c"
       "5da0c4663475c2e5c3adef46f73bcdec043"}};
  const std::vector<std::byte> hello = Bytes("hello");
  for (const auto& [algorithm, digest] : known) {
    auto checksum = Make(algorithm);
    checksum->AddData(0, std::span(hello).first(2), nullptr, 0);
    checksum->AddData(2, std::span(hello).subspan(2), nullptr, 0);
    EXPECT_EQ(*checksum->Finish(5), digest) << algorithm;
  }
  auto empty = Make();
  EXPECT_EQ(*empty->Finish(0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(OrderedChecksumTest, ZeroesAreHashedAsZeroBytes) {
  // Zero runs longer than the zero block, and odd lengths.
  std::vector<std::byte> image = Random(1000, 1);
  image.resize(1000 + 3 * 256 * 1024 + 7, std::byte{0});
  const std::vector<std::byte> tail = Random(513, 2);
  image.insert(image.end(), tail.begin(), tail.end());
  image.resize(image.size() + 4096 + 1, std::byte{0});  // ends in zeroes
  auto checksum = Make("sha512");
  OrderedChecksum::Returns returns;
  const uint64_t zeroes_end = 1000 + 3 * 256 * 1024 + 7;
  checksum->AddZeroes(zeroes_end + 513, 4097);
  checksum->AddData(zeroes_end, std::span(image).subspan(zeroes_end, 513), &returns, 1);
  checksum->AddZeroes(1000, zeroes_end - 1000);
  checksum->AddData(0, std::span(image).first(1000), &returns, 0);
  EXPECT_EQ(TakeTags(returns, 2).size(), 2u);
  EXPECT_EQ(*checksum->Finish(image.size()), Reference(image, "sha512"));
}

TEST(OrderedChecksumTest, OutOfOrderBuffersComeBackOnlyOnceHashed) {
  const std::vector<std::byte> image = Random(64 * 1000 + 17, 3);
  // Pieces of uneven lengths, added in a shuffled order.
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  for (uint64_t offset = 0, n = 1; offset < image.size(); ++n) {
    const uint64_t length = std::min<uint64_t>(image.size() - offset, 1000 * (n % 7 + 1) + n);
    pieces.emplace_back(offset, length);
    offset += length;
  }
  std::mt19937 rng(4);
  std::vector<size_t> order(pieces.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  // The first piece comes last: nothing can be hashed, so nothing comes back.
  std::iter_swap(std::find(order.begin(), order.end(), 0u), order.end() - 1);

  auto checksum = Make();
  OrderedChecksum::Returns returns;
  for (size_t k = 0; k + 1 < order.size(); ++k) {
    const auto [offset, length] = pieces[order[k]];
    checksum->AddData(offset, std::span(image).subspan(offset, length), &returns, order[k]);
  }
  std::vector<Completion> early;
  returns.Take(&early);
  EXPECT_TRUE(early.empty()) << "a buffer came back before the bytes before it were added";
  const auto [offset, length] = pieces[0];
  checksum->AddData(offset, std::span(image).subspan(offset, length), &returns, 0);
  std::vector<uint64_t> tags = TakeTags(returns, pieces.size());
  std::sort(tags.begin(), tags.end());
  for (size_t i = 0; i < tags.size(); ++i) EXPECT_EQ(tags[i], i);
  EXPECT_EQ(*checksum->Finish(image.size()), Reference(image, "sha256"));
}

TEST(OrderedChecksumTest, AbandonGivesEveryBufferBack) {
  const std::vector<std::byte> image = Random(3000, 5);
  auto checksum = Make();
  OrderedChecksum::Returns returns;
  checksum->AddData(1000, std::span(image).subspan(1000, 1000), &returns, 1);
  checksum->AddData(2000, std::span(image).subspan(2000, 1000), &returns, 2);
  checksum->Abandon();
  std::vector<uint64_t> tags = TakeTags(returns, 2);
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(tags, (std::vector<uint64_t>{1, 2}));
  // Later ones come back at once; the digest is refused.
  checksum->AddData(0, std::span(image).first(1000), &returns, 0);
  EXPECT_EQ(TakeTags(returns, 1), std::vector<uint64_t>{0});
  Result<std::string> digest = checksum->Finish(3000);
  ASSERT_FALSE(digest.ok());
  EXPECT_EQ(digest.status().message(), "--checksum: internal error: bytes missing from the checksum");
}

TEST(OrderedChecksumTest, MissingOrRepeatedBytesFailInsteadOfHanging) {
  const std::vector<std::byte> image = Random(3000, 6);
  auto gap = Make();
  gap->AddData(0, std::span(image).first(1000), nullptr, 0);
  gap->AddZeroes(2000, 1000);
  Result<std::string> missing = gap->Finish(3000);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "--checksum: internal error: bytes missing from the checksum");

  auto twice = Make();
  twice->AddData(0, std::span(image).first(2000), nullptr, 0);
  twice->AddZeroes(1000, 2000);  // overlaps what is hashed
  Result<std::string> repeated = twice->Finish(3000);
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().message(), "--checksum: the digest computation failed");
}

TEST(OrderedChecksumTest, UnknownAlgorithmIsRefused) {
  auto created = OrderedChecksum::Create("sha3-999");
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().message(), "--checksum: unknown algorithm 'sha3-999'");
}

}  // namespace
}  // namespace nbdcopy
