// Errors as values. A Status is either OK or carries a one-line message
// ("<what>: <why>"). Results must be looked at ([[nodiscard]]).
// Thread safety: values; copy freely.
#ifndef NBDCOPY_STATUS_H_
#define NBDCOPY_STATUS_H_

#include <string>
#include <utility>
#include <variant>

namespace nbdcopy {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }
  // "<what>: <strerror(error_number)>".
  static Status FromErrno(const std::string& what, int error_number);
  // The copy ended, but its digest is not the one expected
  // (--checksum=ALGO:HEX): an exit status of its own (kExitDigestMismatch).
  static Status DigestMismatch(std::string message) {
    Status status(std::move(message));
    status.digest_mismatch_ = true;
    return status;
  }

  bool ok() const { return !failed_; }
  bool digest_mismatch() const { return digest_mismatch_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<prefix>: <message>".
  Status WithPrefix(const std::string& prefix) const;

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}

  bool failed_ = false;
  bool digest_mismatch_ = false;
  std::string message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : value_(std::move(status)) {}  // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(value_); }
  // REQUIRES: !ok()
  const Status& status() const { return std::get<Status>(value_); }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace nbdcopy

#endif  // NBDCOPY_STATUS_H_
