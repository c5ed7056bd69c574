#include "supervisor/job/job_workers.h"

#include <algorithm>

#include "common/checked_file.h"
#include "common/clock.h"
#include "common/log.h"
#include "supervisor/job/early_spare.h"
#include "supervisor/workers/worker_pool.h"

namespace framemill {

JobWorkers::~JobWorkers() {
  if (retiring_.joinable()) retiring_.join();
}

std::string JobWorkers::WarmKey() const {
  // The probe's shape comes from the model's card, a file of its own: a card added, changed or
  // removed beside the same model file must not hand over workers probed at another shape.
  const ProbeShape& probe = prepared_.probe_in;
  const int model = files_.engine.valid() ? files_.engine.get() : files_.model.get();
  return framemill::WarmKey(options_.output_reader_uid, IdentifyFile(model), job_.settings,
                            LogDirKey(options_.worker_log_dir, IdentifyFile(files_.dir.get()))) +
         "|probe " + std::to_string(probe.width) + "x" + std::to_string(probe.height) + "x" +
         std::to_string(probe.batch);
}

WarmChoice JobWorkers::ChooseWarmPool() const {
  const WarmWorkers* warm = options_.warm;
  const bool offered = warm != nullptr && warm->pool != nullptr;
  return ChooseWarm(offered, offered ? warm->key : "", offered ? WarmKey() : "");
}

Result<std::unique_ptr<WorkerPool>> JobWorkers::NewPool(const std::string& scratch) const {
  const JobSettings& settings = job_.settings;
  WorkerOptions opts =
      SpawnOptions(config_, JobLaunch(settings),
                   options_.worker_log_dir.empty() ? scratch : options_.worker_log_dir);
  // The file as opened and checked: the pool hands the descriptor to the workers; where it
  // reads a name, it gets the real path resolved at the check, not the job's symlink.
  // With model_optimization compile, the compiled engine when the job has one.
  opts.model_fd = files_.engine.valid() ? files_.engine.get() : files_.model.get();
  opts.model = FdRealPath(opts.model_fd);
  opts.launch.probe_width = static_cast<int>(prepared_.probe_in.width);
  opts.launch.probe_height = static_cast<int>(prepared_.probe_in.height);
  opts.launch.probe_batch = static_cast<int>(prepared_.probe_in.batch);
  // Twice the channels of the workers wanted: room for a warm standby beside each one.
  const int channels = std::min<int>(2 * settings.workers, static_cast<int>(kMaxWorkerChannels));
  return WorkerPool::Create(opts, channels);
}

Result<StartedWorkers> JobWorkers::Start(WarmChoice choice, Timeline* timeline,
                                         const std::string& scratch,
                                         const std::atomic<bool>& stop,
                                         std::atomic<Dispatcher*>* wake,
                                         const std::function<void()>& beat) {
  const uint64_t t_wait = MonotonicUs();
  std::unique_ptr<WorkerPool> pool;
  WarmWorkers* warm = options_.warm;
  // The previous job's idle workers, of another model or settings, exit on a thread of their own
  // while this job's workers start: a CUDA worker's exit (its context torn down, 0.4-0.8 s on the
  // H200 machine) is otherwise waited for first. Joined when the job ends, not here: a spare that
  // loads the model in 0.3 s is ready before the old workers are gone, and the job then waited
  // for them (measured: 0.48 s of a 0.8 s start). The two hold the GPU's memory at once for that
  // while.
  switch (choice) {
    case WarmChoice::kReuse:
      pool = std::move(warm->pool);
      spdlog::info("reusing the loaded workers of the previous job");
      break;
    case WarmChoice::kReplace:
      if (retiring_.joinable()) retiring_.join();
      retiring_ = std::thread([old = std::move(warm->pool)]() mutable {
        const uint64_t t0 = MonotonicMs();
        old->StopAll(5000);
        old.reset();
        spdlog::info("the previous job's workers stopped in {} ms, beside this job's start",
                     MonotonicMs() - t0);
      });  // (its arena went with the run's TakeKeptArena)
      break;
    case WarmChoice::kStartFresh:
      break;
  }
  if (pool == nullptr) {
    Result<std::unique_ptr<WorkerPool>> created = NewPool(scratch);
    if (!created.ok()) return created.status();
    pool = std::move(*created);
  }
  dispatcher_ =
      std::make_unique<Dispatcher>(prepared_.plan, job_.settings, std::move(pool), timeline,
                                   static_cast<uint64_t>(config_.worker_start_timeout_s * 1000));
  wake->store(dispatcher_.get(), std::memory_order_release);
  dispatcher_->OfferSpares(options_.spares, options_.on_spare_taken);
  Result<FirstWorker> first = dispatcher_->Start(stop, beat);
  if (!first.ok()) return first.status();
  StartedWorkers started;
  started.first = *first;
  started.wait_s = static_cast<double>(MonotonicUs() - t_wait) / 1e6;
  if (WorkerSandboxDegraded(first->sandbox)) {
    // Once per job, and loud: the job runs, but its model can reach what the service can.
    spdlog::warn(
        "WORKERS ARE NOT SANDBOXED as they should be: {} (worker_sandbox \"auto\"; "
        "\"required\" refuses to run so)",
        first->sandbox);
  } else {
    spdlog::info("worker sandbox: {}", first->sandbox);
  }
  spdlog::info("model maps {}x{} to {}x{} on {}", prepared_.probe_in.width,
               prepared_.probe_in.height, first->probe_w, first->probe_h, first->device);
  return started;
}

}  // namespace framemill
