#include "supervisor/service/job_progress_sink.h"

#include <cstdio>
#include <cstdlib>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/json_fields.h"
#include "supervisor/job/supervisor_hooks.h"
#include "supervisor/service/systemd_notify.h"

namespace framemill {

JobProgressSink::JobProgressSink(std::string id, std::string dir, std::vector<int> gpus,
                                 uint64_t start_ms, const std::atomic<bool>& service_stop,
                                 std::atomic<bool>& job_stop)
    : id_(std::move(id)),
      dir_(std::move(dir)),
      gpus_(std::move(gpus)),
      start_ms_(start_ms),
      service_stop_(service_stop),
      job_stop_(job_stop) {}

void JobProgressSink::Report(const JobProgress& p) {
  InstalledSupervisorHooks().OnJobProgress(id_);
  if (service_stop_.load()) job_stop_.store(true);
  uint64_t now = MonotonicMs();
  if (!cancelled_ && PathExists(dir_ + "/cancel")) {
    cancelled_ = true;
    job_stop_.store(true);
  }
  if (now - last_write_ms_ < 1000) return;
  last_write_ms_ = now;
  double secs = static_cast<double>(now - start_ms_) / 1000.0;
  nlohmann::json progress = ProgressJson(id_, p, secs);
  const double fps = progress.value("fps", 0.0);
  if (!gpus_.empty()) progress["service_gpus"] = gpus_;
  (void)AtomicWriteFile(dir_ + "/progress.json", DumpJson(progress) + "\n", -1, reader_uid_);
  char status[256];
  if (!p.waiting.empty()) {
    std::snprintf(status, sizeof(status), "STATUS=job %s: waiting for disk space (%.0f s)",
                  id_.c_str(), p.waiting_s);
  } else {
    std::snprintf(status, sizeof(status), "STATUS=job %s: %lld/%lld frames written, %.1f fps",
                  id_.c_str(), static_cast<long long>(p.frames_written),
                  static_cast<long long>(p.frames_total), fps);
  }
  NotifySystemd(status);
}

}  // namespace framemill
