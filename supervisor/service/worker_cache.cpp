#include "supervisor/service/worker_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/job/early_spare.h"

namespace framemill {

std::vector<WorkerPool*> WorkerLease::spares() const {
  std::vector<WorkerPool*> pools;
  for (const auto& lent : spares_) {
    if (lent.second != nullptr) pools.push_back(lent.second.get());
  }
  return pools;
}

void WorkerLease::SpareTaken(WorkerPool* from) {
  for (auto& lent : spares_) {
    if (lent.second.get() == from) lent.first->taken.store(true);
  }
}

std::string WorkerLogDir(const std::string& workers_dir, bool gpu_set,
                         const std::vector<int>& gpus, bool cpu) {
  std::string dir = workers_dir;
  if (!gpu_set) return dir;
  std::string name = cpu || gpus.empty() ? "cpu" : "gpus";
  for (int g : gpus) name += "-" + std::to_string(g);
  dir += "/" + name;
  if (!IsDirectory(dir)) {
    Status made = MakeDirectories(dir);
    if (made.ok() && ::chmod(dir.c_str(), 0750) != 0) {
      made = Status(StatusCode::kIo, std::string("chmod: ") + std::strerror(errno));
    }
    if (!made.ok()) spdlog::warn("cannot create {}: {}", dir, made.message());
  }
  return dir;
}

WorkerCache::WorkerCache(const Config& config, bool gpu_labels, std::string workers_dir)
    : config_(config), gpu_labels_(gpu_labels), workers_dir_(std::move(workers_dir)) {}

void WorkerCache::MakeSparePlaces() {
  if (!config_.spare_workers || config_.backend != Backend::kLocal) return;
  std::vector<int> labels = config_.service_gpus;
  if (labels.empty()) labels.push_back(-1);
  for (int label : labels) {
    SparePlace& place = spare_places_.emplace_back();
    place.gpu_label = label;
    place.gpu = gpu_labels_ ? -1 : label;
    const DeviceKind kind = config_.defaults.device.kind;
    place.cpu = place.gpu < 0 && (kind == DeviceKind::kCpu ||
                                  (kind == DeviceKind::kAuto && !HostHasNvidiaDriver()));
    place.log_dir = WorkerLogDir(workers_dir_, !config_.service_gpus.empty(),
                                 label >= 0 ? std::vector<int>{label} : std::vector<int>(), false);
  }
}

int64_t WorkerCache::Keep() {
  const uint64_t now = MonotonicMs();
  for (SparePlace& place : spare_places_) {
    // Lent to a job: left alone until the job has taken its spare; then the next one starts
    // (on the CPU, once the job has ended).
    if (place.held && place.pool == nullptr && (!place.taken.exchange(false) || place.cpu)) {
      continue;
    }
    if (place.pool != nullptr) {
      for (const WorkerExit& e : place.pool->ReapExited()) {
        const std::string tail = e.StderrLine();
        ++place.failures;
        const uint64_t pause_s = std::min<uint64_t>(600, 5ull << std::min(place.failures, 7));
        place.next_try_ms = now + pause_s * 1000;
        spdlog::warn("the spare worker{} exited: {}{}; the next in {} s",
                     place.gpu_label >= 0 ? " of GPU " + std::to_string(place.gpu_label) : "",
                     e.Describe(), tail.empty() ? "" : " (its log ends: " + tail + ")", pause_s);
      }
      if (place.pool->Alive(0)) continue;
    }
    if (now < place.next_try_ms) continue;
    if (place.pool == nullptr) {
      WorkerLaunch launch;
      launch.device = config_.defaults.device;
      Result<std::unique_ptr<WorkerPool>> pool = WorkerPool::CreateSpares(
          SpawnOptions(config_, launch, place.log_dir), 1, place.generations);
      if (!pool.ok()) {
        spdlog::warn("no spare worker: {}", pool.status().message());
        place.next_try_ms = now + 600 * 1000;
        continue;
      }
      place.pool = std::move(*pool);
    }
    Status started = place.pool->Spawn(0, place.gpu);
    if (!started.ok()) {
      spdlog::warn("cannot start a spare worker: {}", started.message());
      place.next_try_ms = now + 600 * 1000;
      continue;
    }
    place.generations = place.pool->Generation(0);
    spdlog::info("spare worker started{} (pid {}), its device made ready for the next job",
                 place.gpu_label >= 0 ? " for GPU " + std::to_string(place.gpu_label) : "",
                 place.pool->Pid(0));
  }
  int64_t waiting = 0;
  for (const SparePlace& place : spare_places_) {
    waiting += place.pool != nullptr && place.pool->Alive(0) ? 1 : 0;
  }
  return waiting;
}

WorkerLease WorkerCache::Take(const std::vector<int>& gpus, bool cpu, const std::string& model) {
  WarmSlot* mine = nullptr;
  for (auto it = warm_.begin(); it != warm_.end();) {
    WarmSlot& w = *it;
    const bool overlaps = std::any_of(gpus.begin(), gpus.end(), [&](int g) {
      return std::find(w.gpus.begin(), w.gpus.end(), g) != w.gpus.end();
    });
    if (!w.in_use && mine == nullptr && w.gpus == gpus) {
      mine = &w;
    } else if (!w.in_use && overlaps) {
      // Idle workers on GPUs this job takes: their memory is the job's now.
      if (w.warm.pool != nullptr) {
        spdlog::info("stopping the idle workers on GPUs {} for the next job", GpuListText(w.gpus));
        w.warm.Stop(5000);
      }
    }
    if (!w.in_use && &w != mine && w.warm.pool == nullptr) {
      it = warm_.erase(it);
    } else {
      ++it;
    }
  }
  if (mine == nullptr) {
    warm_.emplace_back();
    mine = &warm_.back();
    mine->gpus = gpus;
  }
  mine->model = model;
  mine->in_use = true;

  WorkerLease lease;
  lease.slot_ = mine;
  const bool gpu_set = !config_.service_gpus.empty();
  lease.log_dir_ = WorkerLogDir(workers_dir_, gpu_set, gpus, cpu);
  for (SparePlace& place : spare_places_) {
    const bool here = !gpu_set || (!cpu && std::find(gpus.begin(), gpus.end(),
                                                     place.gpu_label) != gpus.end());
    if (!here || place.held) continue;
    place.held = true;
    lease.spares_.emplace_back(&place, std::move(place.pool));
  }
  return lease;
}

void WorkerCache::Return(WorkerLease* lease, const std::string& job_id) {
  for (auto& [place, pool] : lease->spares_) {
    place->held = false;
    place->taken.store(false);
    if (place->pool != nullptr) {
      // The place has its next spare (started once the job took this one): the lent pool goes.
      if (pool != nullptr) pool->StopAll(2000);
      continue;
    }
    if (pool != nullptr && !pool->Alive(0)) {
      // Taken by the job (or exited: reaped and counted by Keep, as at the place).
      bool exited = false;
      for (const WorkerExit& e : pool->ReapExited()) {
        exited = true;
        spdlog::warn("a spare worker exited while lent to job {}: {}", job_id, e.Describe());
      }
      if (!exited) place->failures = 0;
    }
    place->pool = std::move(pool);
  }
  lease->spares_.clear();
  if (lease->slot_ != nullptr) lease->slot_->in_use = false;
}

std::vector<WarmPlace> WorkerCache::IdlePlaces() const {
  std::vector<WarmPlace> places;
  for (const WarmSlot& w : warm_) {
    if (!w.in_use && w.warm.pool != nullptr) places.push_back({w.gpus, w.model});
  }
  return places;
}

void WorkerCache::Stop() {
  for (WarmSlot& slot : warm_) slot.warm.Stop(5000);
  for (SparePlace& place : spare_places_) {
    if (place.pool != nullptr) place.pool->StopAll(2000);
  }
  spare_places_.clear();
}

}  // namespace framemill
