// framemill-worker-faults: the tests' build of framemill-worker. The same program (worker/
// worker_main.h, the same library), with the faults that FRAMEMILL_TEST_FAULT names in its
// environment (tests/faults/fault_injection.h) reaching it through the worker's seam
// (worker/worker_hooks.h). A test runs it with the config key worker_binary; it is built with the
// tests and never installed.
#include <cstdio>
#include <cstdlib>

#include "common/status.h"
#include "tests/faults/fault_injection.h"
#include "worker/worker_loop.h"
#include "worker/worker_main.h"

int main(int argc, char** argv) {
  using namespace framemill;
  const char* spec = std::getenv(kFaultEnvVar);
  Result<Fault> fault = ParseFault(spec == nullptr ? "" : spec);
  if (!fault.ok()) {
    std::fprintf(stderr, "framemill-worker-faults: %s\n", fault.status().message().c_str());
    return kWorkerExitUsage;
  }
  FaultHooks hooks(*fault);
  return WorkerMain(argc, argv, hooks);
}
