// Test-only fault injection, switched on by the environment variable FRAMEMILL_TEST_FAULT in the
// worker's environment (never by anything in a job file):
//
//   FRAMEMILL_TEST_FAULT=crash@N          abort() when the worker reaches source frame N
//   FRAMEMILL_TEST_FAULT=hang@N           stop (no heartbeat, SIGTERM ignored) at frame N
//   FRAMEMILL_TEST_FAULT=exit:K@N         _exit(K) at frame N
//   ...,once=PATH                         only if PATH does not exist; it is created first, so
//                                         the fault fires once across all workers of a job
//
// "Reaches frame N" means: the batch about to run holds frame N.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace framemill {

struct Fault {
  enum class Kind { kNone, kCrash, kHang, kExit };
  Kind kind = Kind::kNone;
  int64_t frame = -1;
  int exit_code = 0;
  std::string once_path;
};

inline constexpr const char* kFaultEnvVar = "FRAMEMILL_TEST_FAULT";

// Parses a spec as above; "" gives kNone.
Result<Fault> ParseFault(const std::string& spec);

// Fires the fault if frame `fault.frame` is in [first, first + count).
void MaybeInjectFault(const Fault& fault, int64_t first, int64_t count);

}  // namespace framemill
