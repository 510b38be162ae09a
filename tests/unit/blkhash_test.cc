#include "hash/blkhash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

namespace nbdcopy {
namespace {

std::vector<std::byte> Bytes(const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  return bytes;
}

std::vector<std::byte> Repeat(char c, size_t n) { return Bytes(std::string(n, c)); }

void Append(std::vector<std::byte>* to, const std::vector<std::byte>& more) {
  to->insert(to->end(), more.begin(), more.end());
}

std::string Digest(const std::vector<std::byte>& image, std::string algorithm = "sha256",
                   uint64_t block_size = 65536) {
  auto hash = Blkhash::Create(BlkhashSpec{algorithm, block_size});
  EXPECT_TRUE(hash.ok());
  (*hash)->AddData(0, image);
  auto hex = (*hash)->Finish(image.size());
  EXPECT_TRUE(hex.ok()) << hex.status().message();
  return hex.ok() ? *hex : "";
}

// The known digests of ../shared/reference/blkhash.md.
TEST(BlkhashTest, KnownDigests) {
  const auto kZero = std::byte{0};
  EXPECT_EQ(Digest({}), "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
  EXPECT_EQ(Digest(Repeat('A', 65536)),
            "2e3a5f57d5e726ee5de62db1a85ff816f4fa6ea4627807d9a51bdc4c883e165e");
  EXPECT_EQ(Digest(std::vector<std::byte>(65536, kZero)),
            "8ab067ab7939a3d4f40cbb118956c07c06aeae2d075d6e0a2ebbb94bd42832af");
  EXPECT_EQ(Digest(Repeat('A', 32768)),
            "9467334d6d7668a2f06898185b5cddc78cdfbd962f50c6bf250101f03a0e54dc");
  EXPECT_EQ(Digest(std::vector<std::byte>(32768, kZero)),
            "842d185f0ff348b0d689e184bddc47f69a19032a6934c89b879479f1e86f9d56");
  EXPECT_EQ(Digest(std::vector<std::byte>(8 * 65536, kZero)),
            "722ac11a3a81034edf196aa3ee68d1a2e345cd0838b0c78c2ce2fb015d4d817d");
  EXPECT_EQ(Digest(std::vector<std::byte>(8 * 65536 + 32768, kZero)),
            "e623a5702b1feb08fbb3d18e35bbb7ec10146b8cd1bcff811200a3948c78c55c");
  std::vector<std::byte> letters;
  for (char c : std::string("ABCDEF")) Append(&letters, Repeat(c, 32768));
  EXPECT_EQ(Digest(letters), "4ab1586084326f5beb911621282e9557cd26856105eff7f78cace5986af4738b");
  letters.resize(5 * 32768);
  EXPECT_EQ(Digest(letters), "2cad558b3a2a8d87435e80fe7bae69fa664d92eaa1b9411f573b9fbb412a4d43");
  std::vector<std::byte> mixed;
  for (char c : std::string("A000E000")) {
    Append(&mixed, c == '0' ? std::vector<std::byte>(32768, kZero) : Repeat(c, 32768));
  }
  EXPECT_EQ(Digest(mixed), "4b2b5acd96f8105f4fb26abaf35c7c5756338ef9ccce19ffe7714c9ad94b4398");
  mixed.resize(7 * 32768);
  EXPECT_EQ(Digest(mixed), "2510ac29c7103f2e68c672d728cbd43db4ed3dc809a24cde96e62dc5862a0f57");
  EXPECT_EQ(Digest(Bytes("hello")),
            "337355feb53a5309d5aba92796223c2c84ffab930e706c01fef573a2722545e6");
  EXPECT_EQ(Digest(Bytes("hello"), "md5"), "f741ac9ce55f5325906bb14e9c05d467");
  EXPECT_EQ(Digest(Bytes("hello"), "md5", 4), "8262896de34125dec173722c920e8bd0");
  EXPECT_EQ(Digest(Bytes("hello"), "sha512"),
            "eca04a593cf12ec4132993da709048e25a2f1be3526e132fb521ec9d41f023ec4018b3fd07b014a33e36bb"
            "5fa145b36991f431e62f9e1a93bebea6c9565682c1");
  auto sparse = Bytes("hello");
  sparse.resize(1048576, kZero);
  Append(&sparse, Bytes("goodbye"));
  EXPECT_EQ(Digest(sparse), "61b8f3a8cea76e16eeff7ce27f1b7711c1f1e437f5038cec17773772a4bded28");
  std::string eights;
  while (eights.size() < 1048576) eights += "12345678";
  EXPECT_EQ(Digest(Bytes(eights)),
            "cbb388edd25e567b85f504c7b345497f9fb4f6bbf4e39768809184b9f9e678f8");
  EXPECT_EQ(Digest(Bytes(eights), "md5"), "84fc21ac2f49ac283ff399378d834d1a");
}

TEST(BlkhashTest, OneGibOfZeroesWithoutReading) {
  auto hash = Blkhash::Create(BlkhashSpec{"sha256", 65536});
  ASSERT_TRUE(hash.ok());
  (*hash)->AddZeroBlocks(0, 16384);
  EXPECT_EQ(*(*hash)->Finish(1ULL << 30),
            "c6d6562c3074a2caa0ceea3e1f460f3af678c792ed05e64157eb51e68ae5260d");
}

TEST(BlkhashTest, OrderOfArrivalDoesNotMatter) {
  std::mt19937 rng(3);
  std::vector<std::byte> image(40 * 4096 + 100);
  for (size_t i = 0; i < image.size(); ++i) {
    image[i] = (i / 4096) % 3 == 0 ? std::byte{0} : std::byte(rng());
  }
  std::string expected = Digest(image, "sha1", 4096);
  auto hash = Blkhash::Create(BlkhashSpec{"sha1", 4096});
  std::vector<uint64_t> order(41);
  for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (uint64_t block : order) {
    size_t begin = block * 4096;
    size_t size = std::min<size_t>(4096, image.size() - begin);
    (*hash)->AddData(block, std::span(image.data() + begin, size));
  }
  EXPECT_EQ(*(*hash)->Finish(image.size()), expected);
}

TEST(BlkhashTest, MissingBlocksAreAnError) {
  auto hash = Blkhash::Create(BlkhashSpec{"sha256", 4096});
  (*hash)->AddZeroBlocks(1, 1);
  EXPECT_FALSE((*hash)->Finish(8192).ok());
}

}  // namespace
}  // namespace nbdcopy

namespace nbdcopy {
namespace {

TEST(BlkhashSequentialTest, PiecesOfAnySizeGiveTheSameDigest) {
  std::mt19937 rng(5);
  std::vector<std::byte> image(10 * 4096 + 1234);
  for (size_t i = 0; i < image.size(); ++i) {
    image[i] = (i / 3000) % 2 == 0 ? std::byte{0} : std::byte(rng());
  }
  std::string expected = Digest(image, "sha256", 4096);
  for (size_t piece : {1u, 100u, 4096u, 5000u, 70000u}) {
    auto hash = Blkhash::Create(BlkhashSpec{"sha256", 4096});
    SequentialBlkhash sequential(**hash);
    for (size_t offset = 0; offset < image.size(); offset += piece) {
      auto part = std::span(image).subspan(offset, std::min(piece, image.size() - offset));
      // Zero pieces go through Zeroes(), as zero extents do.
      if (std::all_of(part.begin(), part.end(), [](std::byte b) { return b == std::byte{0}; })) {
        sequential.Zeroes(part.size());
      } else {
        sequential.Data(part);
      }
    }
    EXPECT_EQ(*sequential.Finish(), expected) << "piece " << piece;
  }
}

}  // namespace
}  // namespace nbdcopy
