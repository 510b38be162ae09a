// URI percent-encoding (RFC 3986): "%2F" <-> "/".
// Thread safety: pure functions.
#ifndef NBDCOPY_BASE_PERCENT_ENCODING_H_
#define NBDCOPY_BASE_PERCENT_ENCODING_H_

#include <string>
#include <string_view>

namespace nbdcopy {

// "%2F" -> "/"; a '%' not followed by two hex digits stays as it is (as
// libxml2's xmlURIUnescapeString, which libnbd uses, leaves it).
std::string PercentDecode(std::string_view text);

// Every byte but the unreserved ones (letters, digits, "-._~") and those
// in keep as "%XX", so that any decoder reads back exactly text.
std::string PercentEncode(std::string_view text, std::string_view keep = "");

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_PERCENT_ENCODING_H_
