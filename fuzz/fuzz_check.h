// A check for fuzz targets: on failure, print what broke and abort, which
// libFuzzer reports as a crash and saves the input as a reproducer.
#ifndef NBDCOPY_FUZZ_FUZZ_CHECK_H_
#define NBDCOPY_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                               \
  do {                                                                           \
    if (!(condition)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                                         \
      std::fputc('\n', stderr);                                                  \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

#endif  // NBDCOPY_FUZZ_FUZZ_CHECK_H_
