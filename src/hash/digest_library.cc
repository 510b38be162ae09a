#include "hash/digest_library.h"

#include <dlfcn.h>
#include <openssl/opensslv.h>

#include <string>

namespace nbdcopy {

namespace {

#define NBDCOPY_STRINGIFY2(x) #x
#define NBDCOPY_STRINGIFY(x) NBDCOPY_STRINGIFY2(x)
// The soname of the libcrypto whose headers we were built with.
constexpr const char kLibrary[] = "libcrypto.so." NBDCOPY_STRINGIFY(OPENSSL_SHLIB_VERSION);

// Sets *out to the function `name`; the first one missing is left in *missing.
template <typename Function>
void Find(void* handle, const char* name, Function* out, std::string* missing) {
  *out = reinterpret_cast<Function>(dlsym(handle, name));
  if (*out == nullptr && missing->empty()) *missing = name;
}

Result<const DigestLibrary*> Load() {
  // Never closed: the digests' contexts live until the process ends.
  void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::Error(std::string("cannot load ") + kLibrary + ": " + (why ? why : "unknown"));
  }
  static DigestLibrary library;
  std::string missing;
  Find(handle, "EVP_MD_fetch", &library.MD_fetch, &missing);
  Find(handle, "EVP_MD_free", &library.MD_free, &missing);
  Find(handle, "EVP_MD_get_size", &library.MD_get_size, &missing);
  Find(handle, "EVP_MD_CTX_new", &library.MD_CTX_new, &missing);
  Find(handle, "EVP_MD_CTX_free", &library.MD_CTX_free, &missing);
  Find(handle, "EVP_DigestInit_ex2", &library.DigestInit_ex2, &missing);
  Find(handle, "EVP_DigestUpdate", &library.DigestUpdate, &missing);
  Find(handle, "EVP_DigestFinal_ex", &library.DigestFinal_ex, &missing);
  if (!missing.empty()) {
    return Status::Error(std::string(kLibrary) + ": no function " + missing);
  }
  return &library;
}

}  // namespace

Result<const DigestLibrary*> LoadDigestLibrary() {
  static const Result<const DigestLibrary*> loaded = Load();  // once, thread-safe
  return loaded;
}

}  // namespace nbdcopy
