#include "common/status.h"

namespace framemill {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidJob:
      return "invalid_job";
    case StatusCode::kInvalidConfig:
      return "invalid_config";
    case StatusCode::kInputMissing:
      return "input_missing";
    case StatusCode::kInputInvalid:
      return "input_invalid";
    case StatusCode::kModelInvalid:
      return "model_invalid";
    case StatusCode::kOutputInvalid:
      return "output_invalid";
    case StatusCode::kWorkerFailed:
      return "worker_failed";
    case StatusCode::kEncodeFailed:
      return "encode_failed";
    case StatusCode::kVerifyFailed:
      return "verify_failed";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kIo:
      return "io_error";
    case StatusCode::kPathNotAllowed:
      return "path_not_allowed";
    case StatusCode::kNoSpace:
      return "no_space";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kDecoderCrashed:
      return "decoder_crashed";
    case StatusCode::kEncoderCrashed:
      return "encoder_crashed";
    case StatusCode::kOutOfMemory:
      return "out_of_memory";
    case StatusCode::kTimedOut:
      return "timed_out";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace framemill
