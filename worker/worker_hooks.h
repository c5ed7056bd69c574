// The worker's seam for tests: the points where a test build of the worker (tests/faults/, the
// program framemill-worker-faults) may step into the worker's life, as leveldb's tests wrap its
// Env. The product's framemill-worker passes WorkerHooks itself, whose every hook does nothing:
// nothing in a job file, the config or the environment reaches a hook in the product.
//
// Called on the worker's main thread only, in this order: BeforeSandbox and AdjustSandbox once
// (before the sandbox goes on, before the model is read), WrapModel once, BeforeReady once, then for every chunk
// BeforeChunk and for every batch of it BeforeBatch. Frames are numbered as in the source video.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "worker/model/frame_model.h"
#include "worker/sandbox/sandbox.h"

namespace framemill {

// A span of shared memory this worker can write.
struct SharedSpan {
  void* data = nullptr;
  size_t bytes = 0;
};

class WorkerHooks {
 public:
  virtual ~WorkerHooks() = default;

  // Still outside the sandbox, single-threaded: the descriptors the hook opened and needs later
  // (the sandbox closes every other one above 2). An error ends the worker with a usage error,
  // its message on stderr.
  virtual Result<std::vector<int>> BeforeSandbox() { return std::vector<int>{}; }
  // The sandbox about to go on: may name layers to take as missing from this machine
  // (SandboxOptions::landlock_absent, mount_namespace_absent).
  virtual void AdjustSandbox(SandboxOptions& options) { (void)options; }
  // The model as loaded, before the worker puts its tiling and out-of-memory fallbacks
  // (worker/model/tiled_model.h) around it: returns the model the worker runs.
  virtual std::unique_ptr<FrameModel> WrapModel(std::unique_ptr<FrameModel> model) { return model; }
  // The model is loaded and probed; the worker reports ready when this returns.
  virtual void BeforeReady() {}
  // The chunk of source frames [first, first + count) is about to run: an error fails the chunk
  // with its message (the worker goes on).
  virtual Status BeforeChunk(int64_t first, int64_t count) {
    (void)first;
    (void)count;
    return Status::Ok();
  }
  // A batch of source frames [first, first + count) is about to run. `shared`: the shared memory
  // the worker can write at that moment (its control block, the arena's header).
  virtual void BeforeBatch(int64_t first, int64_t count, const std::vector<SharedSpan>& shared) {
    (void)first;
    (void)count;
    (void)shared;
  }
};

}  // namespace framemill
