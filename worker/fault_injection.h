// Test-only fault injection, switched on by the environment variable FRAMEMILL_TEST_FAULT in the
// worker's environment (never by anything in a job file):
//
//   FRAMEMILL_TEST_FAULT=crash@N          abort() when the worker reaches source frame N
//   FRAMEMILL_TEST_FAULT=hang@N           stop (no heartbeat, SIGTERM ignored) at frame N
//   FRAMEMILL_TEST_FAULT=exit:K@N         _exit(K) at frame N
//   FRAMEMILL_TEST_FAULT=scribble@N       at frame N, overwrite every byte of the worker's control
//                                         block and the arena's header page with garbage (random
//                                         bytes and 0xff), then carry on as if nothing happened:
//                                         a hostile worker, for the supervisor's checks
//   ...,once=PATH                         only if PATH does not exist; it is created first, so
//                                         the fault fires once across all workers of a job
//
// "Reaches frame N" means: the batch about to run holds frame N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

struct Fault {
  enum class Kind { kNone, kCrash, kHang, kExit, kScribble };
  Kind kind = Kind::kNone;
  int64_t frame = -1;
  int exit_code = 0;
  std::string once_path;
};

inline constexpr const char* kFaultEnvVar = "FRAMEMILL_TEST_FAULT";

// Parses a spec as above; "" gives kNone.
Result<Fault> ParseFault(const std::string& spec);

// Fires the fault if frame `fault.frame` is in [first, first + count). (kScribble: see below.)
void MaybeInjectFault(const Fault& fault, int64_t first, int64_t count);

// A span of shared memory a kScribble fault overwrites.
struct ScribbleRegion {
  void* data = nullptr;
  size_t bytes = 0;
};
// For a kScribble fault whose frame is in [first, first + count): overwrites every region with
// garbage and returns true. Otherwise does nothing and returns false.
bool MaybeScribble(const Fault& fault, int64_t first, int64_t count,
                   const std::vector<ScribbleRegion>& regions);

}  // namespace framemill
