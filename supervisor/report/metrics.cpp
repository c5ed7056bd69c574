#include "supervisor/report/metrics.h"

#include <cmath>
#include <cstdio>

#include "common/file_util.h"

namespace framemill {
namespace {

// One metric's HELP and TYPE lines.
void Header(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

// A sample value as the format writes floats: shortest round trip, NaN and infinities named.
std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  double back = 0;
  for (int precision = 1; precision <= 17; ++precision) {  // the shortest text that reads back
    char shorter[32];
    std::snprintf(shorter, sizeof(shorter), "%.*g", precision, v);
    if (std::sscanf(shorter, "%lf", &back) == 1 && back == v) return shorter;
  }
  return buf;
}

using Labels = std::vector<std::pair<const char*, std::string>>;

void Sample(std::string* out, const char* name, const Labels& labels, const std::string& value) {
  *out += name;
  if (!labels.empty()) {
    *out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) *out += ',';
      *out += labels[i].first;
      *out += "=\"";
      *out += EscapeLabelValue(labels[i].second);
      *out += '"';
    }
    *out += '}';
  }
  *out += ' ';
  *out += value;
  *out += '\n';
}

void Sample(std::string* out, const char* name, const Labels& labels, double value) {
  Sample(out, name, labels, Number(value));
}

void Sample(std::string* out, const char* name, const Labels& labels, int64_t value) {
  Sample(out, name, labels, std::to_string(value));
}

void Sample(std::string* out, const char* name, const Labels& labels, uint64_t value) {
  Sample(out, name, labels, std::to_string(value));
}

// `counts` with every known reason present and every unknown one folded into "other".
std::map<std::string, int64_t> ClosedReasons(WorkerEvent event,
                                             const std::map<std::string, int64_t>* counts) {
  std::map<std::string, int64_t> closed;
  for (const std::string& reason : WorkerEventReasons(event)) closed[reason] = 0;
  if (counts == nullptr) return closed;
  for (const auto& [reason, n] : *counts) {
    auto it = closed.find(reason);
    if (it != closed.end()) {
      it->second += n;
    } else {
      closed["other"] += n;
    }
  }
  return closed;
}

}  // namespace

const char* Name(WorkerEvent event) {
  switch (event) {
    case WorkerEvent::kRecycle:
      return "recycle";
    case WorkerEvent::kCrash:
      return "crash";
    case WorkerEvent::kKill:
      return "kill";
  }
  return "unknown";
}

const std::vector<std::string>& WorkerEventReasons(WorkerEvent event) {
  static const std::vector<std::string> kRecycle = {"rss", "gpu", "max_chunks"};
  static const std::vector<std::string> kCrash = {"signal", "exit"};
  static const std::vector<std::string> kKill = {"rss", "gpu", "hang", "start_timeout", "protocol"};
  switch (event) {
    case WorkerEvent::kRecycle:
      return kRecycle;
    case WorkerEvent::kCrash:
      return kCrash;
    case WorkerEvent::kKill:
      return kKill;
  }
  return kKill;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderMetrics(const MetricsFigures& f) {
  std::string out;
  out.reserve(4096);
  Header(&out, "framemill_up", "gauge", "1 while the service runs; 0 in the file it leaves.");
  Sample(&out, "framemill_up", {}, int64_t{f.up ? 1 : 0});
  Header(&out, "framemill_build_info", "gauge", "Always 1; the framemill version as a label.");
  Sample(&out, "framemill_build_info", {{"version", f.version}}, int64_t{1});
  Header(&out, "framemill_start_time_seconds", "gauge",
         "When the service started, in seconds since the Unix epoch.");
  Sample(&out, "framemill_start_time_seconds", {}, f.start_time_s);

  Header(&out, "framemill_jobs", "gauge", "Jobs in the spool by state.");
  const std::pair<const char*, int64_t> states[] = {{"incoming", f.jobs_incoming},
                                                    {"active", f.jobs_active},
                                                    {"done", f.jobs_done},
                                                    {"failed", f.jobs_failed}};
  for (const auto& [state, n] : states) Sample(&out, "framemill_jobs", {{"state", state}}, n);
  Header(&out, "framemill_queue_length", "gauge", "Jobs waiting in incoming/.");
  Sample(&out, "framemill_queue_length", {}, f.jobs_incoming);
  Header(&out, "framemill_queue_oldest_age_seconds", "gauge",
         "Age of the oldest waiting job (since its job file was written); 0 when none waits.");
  Sample(&out, "framemill_queue_oldest_age_seconds", {}, f.oldest_waiting_age_s);

  Header(&out, "framemill_service_gpus", "gauge",
         "The service's GPUs (config service_gpus) held by running jobs and free; 0 without.");
  Sample(&out, "framemill_service_gpus", {{"state", "busy"}}, f.gpus_busy);
  Sample(&out, "framemill_service_gpus", {{"state", "free"}}, f.gpus_free);
  Header(&out, "framemill_spare_workers", "gauge",
         "Spare workers started without a model and waiting for a job (config spare_workers).");
  Sample(&out, "framemill_spare_workers", {}, f.spare_workers);

  Header(&out, "framemill_jobs_waiting_for_space", "gauge",
         "Running jobs paused on a full output, scratch or shared-memory file system "
         "(config no_space_wait_s).");
  Sample(&out, "framemill_jobs_waiting_for_space", {}, f.jobs_waiting_for_space);
  Header(&out, "framemill_spool_full", "gauge",
         "1 while the spool's own file system is full and the service claims no job.");
  Sample(&out, "framemill_spool_full", {}, int64_t{f.spool_full ? 1 : 0});

  Header(&out, "framemill_frames_processed_total", "counter",
         "Frames through the model since the service started (resumed frames not counted).");
  Sample(&out, "framemill_frames_processed_total", {}, f.frames_processed);
  Header(&out, "framemill_job_fps", "gauge",
         "Frames per second of the running jobs in this run, summed; 0 when no job runs.");
  Sample(&out, "framemill_job_fps", {}, f.job_fps);

  Header(&out, "framemill_worker_events_total", "counter",
         "Worker recycles, crashes and kills by reason since the service started.");
  for (WorkerEvent event : {WorkerEvent::kRecycle, WorkerEvent::kCrash, WorkerEvent::kKill}) {
    auto it = f.worker_events.find(event);
    const auto* counts = it != f.worker_events.end() ? &it->second : nullptr;
    for (const auto& [reason, n] : ClosedReasons(event, counts)) {
      Sample(&out, "framemill_worker_events_total", {{"event", Name(event)}, {"reason", reason}},
             n);
    }
  }

  Header(&out, "framemill_worker_rss_bytes", "gauge",
         "Host resident memory of each live worker of the running jobs.");
  for (const WorkerMemory& w : f.workers) {
    Sample(&out, "framemill_worker_rss_bytes",
           {{"worker", std::to_string(w.slot)}, {"device", w.device}}, w.rss_bytes);
  }
  Header(&out, "framemill_worker_gpu_reserved_bytes", "gauge",
         "GPU memory reserved by each live worker's CUDA caching allocator.");
  for (const WorkerMemory& w : f.workers) {
    Sample(&out, "framemill_worker_gpu_reserved_bytes",
           {{"worker", std::to_string(w.slot)}, {"device", w.device}}, w.gpu_reserved_bytes);
  }
  Header(&out, "framemill_gpu_reserved_bytes", "gauge",
         "GPU memory reserved by the live workers on each GPU, summed.");
  std::map<std::string, uint64_t> by_gpu;
  for (const WorkerMemory& w : f.workers) {
    if (w.device.rfind("cuda", 0) == 0) by_gpu[w.device] += w.gpu_reserved_bytes;
  }
  for (const auto& [device, bytes] : by_gpu) {
    Sample(&out, "framemill_gpu_reserved_bytes", {{"device", device}}, bytes);
  }
  return out;
}

Status WriteMetricsFile(const std::string& path, const std::string& text) {
  return AtomicWriteFile(path, text, 0644);
}

}  // namespace framemill
