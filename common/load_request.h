// The load request: what the supervisor sends a spare worker when a job takes it.
//
// A spare worker (framemill-worker --await-model on) is started before any job wants it: it loads
// its libraries, puts its sandbox on and makes its device ready (the CUDA context), then waits on
// its wake socket. The job that takes it sends one message there: the worker's model arguments
// (the command-line arguments a worker started for the job would have had, but those fixed at
// spawn) and two descriptors, the model file and the job's log for the worker's output
// (SCM_RIGHTS). The worker then goes on as if started with them (worker/worker_main.cpp).
//
// The arguments are the launch's model part and device (common/worker_launch.h,
// EncodeLoadRequest), parsed back as LaunchPart::kLoadRequest.
//
// On the socket: "FMLR", the payload's length (uint32, host order: both ends are one machine),
// then the payload, NUL-separated strings. The descriptors come with the first byte. Anything
// else first (a wake-up byte: the supervisor asked it to stop) ends the wait as a stop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/worker_launch.h"

namespace framemill {

inline constexpr char kLoadRequestMagic[4] = {'F', 'M', 'L', 'R'};
inline constexpr uint32_t kMaxLoadRequestBytes = 64 * 1024;
inline constexpr int kLoadRequestFds = 2;  // the model, the log

// Sends `arguments` and exactly kLoadRequestFds descriptors over the (non-blocking) socket `sock`,
// whole or not at all: kIo when the socket cannot take the message at once, kInternal when it is
// too long.
Status SendLoadRequest(int sock, const std::vector<std::string>& arguments,
                       const std::vector<int>& fds);

// SendLoadRequest of `launch`, encoded as a load request (EncodeLoadRequest).
Status SendLaunchRequest(int sock, const WorkerLaunch& launch, const std::vector<int>& fds);

struct LoadRequest {
  bool stop = false;  // the supervisor asked the spare to stop instead
  std::vector<std::string> arguments;
  std::vector<int> fds;  // close-on-exec, owned by the caller
};

// Waits on `sock` for a load request. `keep_waiting` is asked about every `poll_ms` while nothing
// comes: false ends the wait (kCancelled). Once the first byte has come, the rest must follow
// within a few seconds. A malformed request (its descriptors closed) or a closed socket is kIo.
Result<LoadRequest> ReceiveLoadRequest(int sock, const std::function<bool()>& keep_waiting,
                                       int poll_ms = 200);

}  // namespace framemill
