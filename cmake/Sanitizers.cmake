# Instrumented builds, chosen at configure time (CMakePresets.json names them):
#   -DNBDCOPY_SANITIZE=address  AddressSanitizer + LeakSanitizer + UBSan
#   -DNBDCOPY_SANITIZE=thread   ThreadSanitizer
#   -DNBDCOPY_FUZZ=ON           libFuzzer targets in fuzz/ (clang only); the
#                               library gets coverage instrumentation too.
# Every report is fatal: UBSan does not recover, so a test sees a failure.
# scripts/sanitize.sh sets the runtime options and collects the reports.
set(NBDCOPY_SANITIZE "" CACHE STRING "Sanitizers: empty, address (ASan+UBSan) or thread (TSan)")
set_property(CACHE NBDCOPY_SANITIZE PROPERTY STRINGS "" address thread)
option(NBDCOPY_FUZZ "Build the libFuzzer targets (needs clang)" OFF)

set(_nbdcopy_sanitize_flags "")
if(NBDCOPY_SANITIZE STREQUAL "address")
  set(_nbdcopy_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=all)
elseif(NBDCOPY_SANITIZE STREQUAL "thread")
  set(_nbdcopy_sanitize_flags -fsanitize=thread)
elseif(NOT NBDCOPY_SANITIZE STREQUAL "")
  message(FATAL_ERROR "NBDCOPY_SANITIZE must be empty, address or thread, not ${NBDCOPY_SANITIZE}")
endif()
if(_nbdcopy_sanitize_flags)
  add_compile_options(${_nbdcopy_sanitize_flags} -fno-omit-frame-pointer)
  add_link_options(${_nbdcopy_sanitize_flags})
endif()

if(NBDCOPY_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NBDCOPY_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++-14)")
  endif()
  # Coverage feedback from the library; only the fuzz targets get libFuzzer's main().
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
