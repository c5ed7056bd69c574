// framemill-night's loop: the service's life (started, signalled, restarted as systemd would),
// the faults drawn from the seed and injected, the queue fed and drained, then every check
// (bench/README.md). Single-threaded; the caller owns the signal flag.
#pragma once

#include <csignal>
#include <string>
#include <vector>

#include "bench/night_jobs.h"

namespace framemill::night {

// The faults, each drawn as a Poisson process of its own rate (per minute of the fault phase).
enum class Fault {
  kWorkerKill,
  kWorkerStop,
  kServiceKill,
  kServiceTerm,
  kDecoderKill,
  kEncoderKill,
  kMuxKill,
  kOutputFull,
  kSpoolFull,
  kShmFull,
  kCount
};
constexpr const char* kFaultNames[] = {
    "worker-kills",  "worker-stops", "service-kills", "service-terms", "decoder-kills",
    "encoder-kills", "mux-kills",    "output-full",   "spool-full",    "shm-full"};
constexpr int kFaults = static_cast<int>(Fault::kCount);

struct Options {
  double minutes = 0.6;  // the fault phase; the drain after it is bounded by drain_minutes
  double drain_minutes = 1.5;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string dir;  // default: a new /tmp/framemill-night-XXXXXX, kept for its logs
  MixOptions mix;
  // Per minute. The short form's defaults; the 10-minute night raises them (BENCHMARKS.md).
  double rates[kFaults] = {12, 2, 2, 1, 3, 3, 3, 1.5, 1.5, 1.5};
  int cancels = 1;  // cancels sent (each followed by a retry, which must be refused)
  double hold_min_s = 1, hold_max_s = 4;  // how long a filesystem stays full
  double restart_delay_s = 0.5;           // the unit's RestartSec, shortened for the soak
  int no_space_wait_s = 120;  // > 0: the config key no_space_wait_s; 0: the night retries (an operator)
  std::string device = "cpu";
  bool stop_any_worker = false;  // SIGSTOP also workers not yet ready (see Night::Signal)
};

// Runs the night on `site` with `jobs` (the service is started here): the fault phase, the drain,
// the service's stop and the checks; prints as it goes. Returns 0 when every check passed, else
// 1. `*stop` set (by a signal handler) ends the fault phase and the drain early.
int RunNight(const Options& o, const Site& site, std::vector<NightJob> jobs,
             const volatile std::sig_atomic_t* stop);

}  // namespace framemill::night
