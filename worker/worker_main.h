// The worker program's main (worker/worker_main.cpp says what it does), with the tests' seam
// (worker/worker_hooks.h) as a parameter: framemill-worker (worker/main.cpp) passes hooks that do
// nothing; the tests' framemill-worker-faults (tests/faults/) passes its faults.
#pragma once

namespace framemill {

class WorkerHooks;

// The whole program: parses argv, puts the sandbox on, runs the worker. Returns the exit code
// (worker/worker_loop.h, kWorkerExit*).
int WorkerMain(int argc, char** argv, WorkerHooks& hooks);

}  // namespace framemill
