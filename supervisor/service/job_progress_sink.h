// What a spool job's progress reports do in the service, on the job's thread: pass on the
// service's stop and a cancel (the job's `cancel` marker) as the job's stop, and, at most once a
// second, write active/<id>/progress.json and tell systemd a STATUS= line. Each report passes
// the supervisor's seam for tests (job/supervisor_hooks.h OnJobProgress).
//
// Not thread-safe: one job's thread calls Report; the job reads job_stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/report/job_result.h"

namespace framemill {

class JobProgressSink {
 public:
  // Job `id` in `dir` (active/<id>/), started at `start_ms` (monotonic) on the service `gpus`
  // (none: empty); `service_stop` is the service's stop, `job_stop` the job's own (RunningJob's:
  // the loop may set it too), which a report sets on the service's stop or a cancel.
  JobProgressSink(std::string id, std::string dir, std::vector<int> gpus, uint64_t start_ms,
                  const std::atomic<bool>& service_stop, std::atomic<bool>& job_stop);
  // The submitter, who may read progress.json whatever the service's umask.
  void set_reader(uint32_t uid) { reader_uid_ = uid; }

  void Report(const JobProgress& p);
  const std::atomic<bool>& job_stop() const { return job_stop_; }  // the job's stop
  bool cancelled() const { return cancelled_; }  // a cancel stopped it

 private:
  const std::string id_, dir_;
  const std::vector<int> gpus_;
  const uint64_t start_ms_;
  const std::atomic<bool>& service_stop_;
  std::atomic<bool>& job_stop_;
  bool cancelled_ = false;
  uint64_t last_write_ms_ = 0;
  uint32_t reader_uid_ = UINT32_MAX;
};

}  // namespace framemill
