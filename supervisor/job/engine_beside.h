// The compiled engine built beside a running job (supervisor/engines/): the job starts on its
// TorchScript model, the engine is built on a thread of this object's, checked against the
// model on a batch of the job's own frames (a tenth into the video, decoded as the workers get
// them), kept in the engine cache, opened from it with its checks, and offered to the job's
// workers (Dispatcher::OfferModel), which move to it at their chunk boundaries
// (supervisor/workers/model_switch.h).
//
// A build that fails (no Python torch of the worker's version, no compiler, an export the
// script refuses, a package whose frames differ from the model's beyond the precision's
// tolerance) leaves the job on its model, with one line in the log saying why. A build still
// running when the job ends is stopped (its builder killed, its folder removed): it is the
// job's, and `framemill model compile` builds ahead of time instead.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/engines/engine_key.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/workers/model_switch.h"

namespace framemill {

struct EngineBesideSetup {
  EngineKey key;      // the engine the job wants (PreparedJob::engine_to_build)
  int model_fd = -1;  // the job's model (not owned: it outlives this object)
  std::string model_label;
  int gpu_index = 0;
  WorkerSandbox sandbox = WorkerSandbox::kAuto;
  std::string cache_dir;  // EngineCacheDir()
  // The check's frames: the job's source (not owned; outlives this object), ffmpeg, and where
  // ffmpeg's stderr goes.
  const PreparedJob* prepared = nullptr;
  std::string ffmpeg;
  std::string log_path;
  // A model file offered at once instead of a build (SupervisorHooks::EngineStandIn); "": none.
  std::string stand_in;
};

class EngineBeside {
 public:
  // Starts the build; `offer` is called once, on this object's thread, with the engine when it
  // is built and checked (never when the build fails or is stopped).
  EngineBeside(EngineBesideSetup setup, std::function<void(ModelOffer)> offer);
  // Stops a build still running and waits for the thread.
  ~EngineBeside();
  EngineBeside(const EngineBeside&) = delete;
  EngineBeside& operator=(const EngineBeside&) = delete;

 private:
  void Run();
  // `key.batch` frames of the job, raw rgb24, into `path`.
  Status WriteCheckFrames(const std::string& path) const;

  const EngineBesideSetup setup_;
  const std::function<void(ModelOffer)> offer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: started once the rest is made
};

}  // namespace framemill
