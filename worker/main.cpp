// framemill-worker: the product's worker program (worker/worker_main.h), with no test hooks.
#include "worker/worker_hooks.h"
#include "worker/worker_main.h"

int main(int argc, char** argv) {
  framemill::WorkerHooks none;
  return framemill::WorkerMain(argc, argv, none);
}
