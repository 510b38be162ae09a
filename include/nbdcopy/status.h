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
  // "<what>: <strerror(error_number)>", remembering error_number.
  static Status FromErrno(const std::string& what, int error_number);
  // A message that ends in the OS's or server's reason, remembering its
  // errno (what --salvage asks of a failed read).
  static Status ErrorWithErrno(std::string message, int error_number) {
    Status status(std::move(message));
    status.error_number_ = error_number;
    return status;
  }
  // The copy ended, but its digest is not the one expected
  // (--checksum=ALGO:HEX): an exit status of its own (kExitDigestMismatch).
  static Status DigestMismatch(std::string message) {
    Status status(std::move(message));
    status.digest_mismatch_ = true;
    return status;
  }

  bool ok() const { return !failed_; }
  bool digest_mismatch() const { return digest_mismatch_; }
  // The copy ended with every byte written, but some of the source could
  // not be read and was written as zeroes (--salvage): an exit status of
  // its own (kExitUnreadable).
  static Status Unreadable(std::string message) {
    Status status(std::move(message));
    status.unreadable_ = true;
    return status;
  }
  bool unreadable() const { return unreadable_; }
  // The errno of a failure that came from the OS or a server (0: none known).
  int error_number() const { return error_number_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<prefix>: <message>".
  Status WithPrefix(const std::string& prefix) const;

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}

  bool failed_ = false;
  bool digest_mismatch_ = false;
  bool unreadable_ = false;
  int error_number_ = 0;
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
