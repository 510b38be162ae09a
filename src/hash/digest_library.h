// libcrypto's digest functions, loaded when the first checksum is made.
//
// A copy without --blkhash or --verify never maps libcrypto. Linked in, its
// loading cost every start of nbdcopy about 120 page faults and 8 ms of CPU
// on a two-core VM (perf stat, 2026-12-05: `nbdcopy --version` made 504
// page faults in 15.1 ms, libnbd's nbdcopy 340 in 10.7 ms; libnbd's
// nbdcopy with libcrypto preloaded 462 faults), which callers that run many
// short copies, and the test suite, paid at each start.
//
// Thread safety: LoadDigestLibrary may be called from any thread; the
// functions are libcrypto's own.
#ifndef NBDCOPY_DIGEST_LIBRARY_H_
#define NBDCOPY_DIGEST_LIBRARY_H_

#include <openssl/evp.h>

#include "nbdcopy/status.h"

namespace nbdcopy {

// The EVP functions the checksums use, under libcrypto's names less "EVP_".
struct DigestLibrary {
  decltype(&EVP_MD_fetch) MD_fetch = nullptr;
  decltype(&EVP_MD_free) MD_free = nullptr;
  decltype(&EVP_MD_get_size) MD_get_size = nullptr;
  decltype(&EVP_MD_CTX_new) MD_CTX_new = nullptr;
  decltype(&EVP_MD_CTX_free) MD_CTX_free = nullptr;
  decltype(&EVP_DigestInit_ex2) DigestInit_ex2 = nullptr;
  decltype(&EVP_DigestUpdate) DigestUpdate = nullptr;
  decltype(&EVP_DigestFinal_ex) DigestFinal_ex = nullptr;
};

// libcrypto (the version the build's headers name), loaded on the first
// call and kept; an error names the library and why it could not be loaded.
Result<const DigestLibrary*> LoadDigestLibrary();

}  // namespace nbdcopy

#endif  // NBDCOPY_DIGEST_LIBRARY_H_
