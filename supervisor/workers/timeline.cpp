#include "supervisor/workers/timeline.h"

#include <cstdint>
#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/json_fields.h"

namespace framemill {
namespace {
double Mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
}  // namespace

const char* Name(TimelineEventKind kind) {
  switch (kind) {
    case TimelineEventKind::kStart:
      return "start";
    case TimelineEventKind::kReady:
      return "ready";
    case TimelineEventKind::kChunk:
      return "chunk";
    case TimelineEventKind::kRecycle:
      return "recycle";
    case TimelineEventKind::kStop:
      return "stop";
    case TimelineEventKind::kExit:
      return "exit";
    case TimelineEventKind::kCrash:
      return "crash";
    case TimelineEventKind::kKill:
      return "kill";
  }
  return "unknown";
}

Timeline::~Timeline() {
  if (file_ != nullptr) std::fclose(file_);
}

Status Timeline::Open(const std::string& path, uint64_t start_ms) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    return Status(StatusCode::kIo, "cannot write timeline " + path + ": " + std::strerror(errno));
  }
  path_ = path;
  start_ms_ = start_ms;
  return Status::Ok();
}

Status Timeline::Adopt(int fd, const std::string& path, uint64_t start_ms) {
  file_ = ::fdopen(fd, "w");
  if (file_ == nullptr) {
    ::close(fd);
    return Status(StatusCode::kIo, "cannot write timeline " + path + ": " + std::strerror(errno));
  }
  path_ = path;
  start_ms_ = start_ms;
  return Status::Ok();
}

void Timeline::Record(const TimelineEvent& e, uint64_t now_ms) {
  if (file_ == nullptr) return;
  const double t_s = static_cast<double>(now_ms - start_ms_) / 1000.0;
  records_.push_back({t_s, e});
  nlohmann::json j = {{"t", t_s},
                      {"worker", e.worker},
                      {"gen", e.generation},
                      {"pid", e.pid},
                      {"event", Name(e.kind)},
                      {"frames", e.frames},
                      {"rss_mb", Mib(e.rss_bytes)},
                      {"gpu_allocated_mb", Mib(e.gpu_allocated_bytes)},
                      {"gpu_reserved_mb", Mib(e.gpu_reserved_bytes)},
                      {"gpu_process_mb", Mib(e.gpu_process_bytes)}};
  if (!e.reason.empty()) j["reason"] = e.reason;
  std::string line = DumpJson(j) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

TimelineEvent WorkerTimelineEvent(int worker, uint64_t generation, int pid, TimelineEventKind kind,
                                  const TelemetrySnapshot& t, const std::string& reason) {
  TimelineEvent e;
  e.worker = worker;
  e.generation = generation;
  e.pid = pid;
  e.kind = kind;
  e.frames = t.frames_done;
  e.rss_bytes = t.rss_bytes;
  e.gpu_allocated_bytes = t.gpu_allocated_bytes;
  e.gpu_reserved_bytes = t.gpu_reserved_bytes;
  e.gpu_process_bytes = t.gpu_process_bytes;
  e.reason = reason;
  return e;
}

}  // namespace framemill
