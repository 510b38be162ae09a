#include "nbdcopy/status.h"

#include <cstring>

namespace nbdcopy {

Status Status::FromErrno(const std::string& what, int error_number) {
  return ErrorWithErrno(what + ": " + std::strerror(error_number), error_number);
}

Status Status::WithPrefix(const std::string& prefix) const {
  if (ok()) return *this;
  Status prefixed(prefix + ": " + message_);
  prefixed.digest_mismatch_ = digest_mismatch_;
  prefixed.unreadable_ = unreadable_;
  prefixed.error_number_ = error_number_;
  return prefixed;
}

}  // namespace nbdcopy
