// Building a compiled engine (engine_key.h) for a TorchScript model: scripts/export-pt2.py run by
// the machine's Python torch, confined, into a build folder of the engine cache (engine_cache.h),
// which becomes the key's entry once the script has checked the package against the TorchScript
// model (frames within the precision's tolerance) and its sha256 is written down.
//
// What runs: `<python> export-pt2.py --torchscript model.pt engine.pt2 --shape WxH --batch N
// --precision P --device cuda` with CUDA_VISIBLE_DEVICES the key's GPU, its temporary files and
// Inductor's and Triton's caches inside the build folder, under framemill-confine --gpu
// (worker/sandbox/confine_main.cpp): an empty network namespace, a private root where the system
// is read-only, the Python's module paths and the script readable, the build folder alone
// writable; no_new_privs; Landlock's TCP rules. It executes a compiler on a model's code, so it
// is confined as a worker is (its file rules as a private root, as a CUDA worker's are), with the
// worker_sandbox mode: "required" refuses to build unconfined, "off" confines nothing.
//
// Why a machine cannot build (BuildEngine's error, before anything runs): no Python with torch, a
// torch other than the one framemill-worker is built against (a package loads only into its own
// torch), no C++ compiler, no export-pt2.py installed.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/engines/engine_key.h"

namespace framemill {

struct EngineBuildRequest {
  int model_fd = -1;        // the TorchScript file, open
  std::string model_label;  // its name in messages
  EngineKey key;
  int gpu_index = 0;
  WorkerSandbox sandbox = WorkerSandbox::kAuto;
  std::string python = "python3";
  // Writes a batch of the job's own frames (raw rgb24, key.batch frames of key.width x
  // key.height) to the path it is given, inside the build folder: the package is checked on
  // them rather than on a random batch. Empty: a random batch (`framemill model compile`).
  std::function<Status(const std::string& path)> write_check_frames;
  // Set: the build is stopped (the builder killed, its folder removed; kCancelled). May be null.
  const std::atomic<bool>* stop = nullptr;
};

// export-pt2.py installed beside framemill (<prefix>/share/framemill/), or in the source tree
// of a build folder (../scripts/); "" when neither is there.
std::string ExportScriptPath();

// Builds the engine and keeps it in `cache_dir`. kModelInvalid with the builder's last lines
// when it fails (the export, or the check against the TorchScript model). One build of a key
// runs at a time across processes (a lock file in `cache_dir`): another waits, then takes the
// entry the first one kept.
Result<CachedEngine> BuildEngine(const std::string& cache_dir, const EngineBuildRequest& request);

}  // namespace framemill
