#include "base/percent_encoding.h"

#include <gtest/gtest.h>

#include <string>

namespace nbdcopy {
namespace {

TEST(PercentEncodingTest, DecodesEscapes) {
  EXPECT_EQ(PercentDecode("a%20b%2fc%2F"), "a b/c/");
  EXPECT_EQ(PercentDecode("100%"), "100%") << "a lone '%' stays";
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
  EXPECT_EQ(PercentDecode(std::string("%00", 3)), std::string(1, '\0'));
}

TEST(PercentEncodingTest, EncodesAllButUnreserved) {
  EXPECT_EQ(PercentEncode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(PercentEncode("/a b'&;=%"), "%2Fa%20b%27%26%3B%3D%25");
  EXPECT_EQ(PercentEncode("/a b", "/"), "/a%20b");
  EXPECT_EQ(PercentEncode("\xff"), "%FF");
}

TEST(PercentEncodingTest, RoundTrips) {
  std::string every;
  for (int c = 0; c < 256; ++c) every += static_cast<char>(c);
  EXPECT_EQ(PercentDecode(PercentEncode(every)), every);
}

}  // namespace
}  // namespace nbdcopy
