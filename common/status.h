// Errors as values. A Status is ok or carries a code and a human message; Result<T> is a value or
// a Status. Exceptions from LibTorch, JSON or Boost are caught where they are thrown and turned
// into one of these with context; none crosses a thread, a process or shared memory.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace framemill {

// Machine-readable reason codes. They appear in logs and (later) in a job's result.json, so their
// spelling (StatusCodeName) is part of the interface: never renumber or rename.
enum class StatusCode {
  kOk = 0,
  kInvalidJob,      // the job file is malformed or has bad values
  kInvalidConfig,   // the config file is malformed or has bad values
  kInputMissing,    // the input path does not exist or cannot be read
  kInputInvalid,    // the input is not a video, is corrupt or truncated
  kModelInvalid,    // the model cannot be loaded or breaks its contract
  kOutputInvalid,   // the output path cannot be written (no directory, exists, ...)
  kWorkerFailed,    // a worker process died or misbehaved beyond the retry budget
  kEncodeFailed,    // ffmpeg failed to encode, join or mux
  kVerifyFailed,    // the output did not pass its checks
  kCancelled,       // the job was stopped by a signal or a user
  kIo,              // a file-system or system call failed
  kPathNotAllowed,  // a job's path resolves outside the config's allowed roots
  kNoSpace,         // the disk is (or would be) full
  kInternal,        // a broken invariant: a bug in framemill
  kDecoderCrashed,  // the decoding ffmpeg was killed by a signal (retried; the input may be fine)
  kEncoderCrashed,  // an encoding ffmpeg was killed by a signal (retried)
  kOutOfMemory,     // the model's device ran out of memory (a worker's model call; its fallbacks
                    // act on it, worker/model/tiled_model.h)
  kTimedOut,        // a helper program ran past child_timeout_s, or a job showed no life for
                    // job_stall_timeout_s: killed or stopped
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "code_name: message", for logs and error output.
  std::string ToString() const;

  // Returns a copy whose message is "context: message" (no-op on ok).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;  // not ok when value_ is empty
};

}  // namespace framemill

// Propagates a non-ok Status out of the calling function.
#define FM_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::framemill::Status fm_status_ = (expr); \
    if (!fm_status_.ok()) return fm_status_; \
  } while (0)
