#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "supervisor/report/metrics.h"
#include "supervisor/spool/spool.h"

using framemill::MetricsFigures;
using framemill::WorkerEvent;

namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool HasLine(const std::string& text, const std::string& line) {
  for (const std::string& l : Lines(text)) {
    if (l == line) return true;
  }
  return false;
}

int CountPrefix(const std::string& text, const std::string& prefix) {
  int n = 0;
  for (const std::string& l : Lines(text)) n += l.rfind(prefix, 0) == 0;
  return n;
}

std::string TempDir() {
  char dir[] = "/tmp/framemill-unit-metrics-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

}  // namespace

TEST_CASE("metrics: label values are escaped as the text format requires") {
  CHECK(framemill::EscapeLabelValue("cuda:0") == "cuda:0");
  CHECK(framemill::EscapeLabelValue("a\\b") == "a\\\\b");
  CHECK(framemill::EscapeLabelValue("say \"hi\"") == "say \\\"hi\\\"");
  CHECK(framemill::EscapeLabelValue("two\nlines") == "two\\nlines");
  CHECK(framemill::EscapeLabelValue("\xff\t") == "\xff\t");  // other bytes pass as they are

  MetricsFigures f;
  f.version = "1.0 \"beta\"\n";
  f.workers.push_back({0, "dev\\ice", 1, 2});
  std::string text = framemill::RenderMetrics(f);
  CHECK(HasLine(text, "framemill_build_info{version=\"1.0 \\\"beta\\\"\\n\"} 1"));
  CHECK(HasLine(text, "framemill_worker_rss_bytes{worker=\"0\",device=\"dev\\\\ice\"} 1"));
}

TEST_CASE("metrics: an idle service writes every spool state and every event reason, at 0") {
  MetricsFigures f;
  std::string text = framemill::RenderMetrics(f);
  for (const char* state : {"incoming", "active", "done", "failed"}) {
    CHECK(HasLine(text, std::string("framemill_jobs{state=\"") + state + "\"} 0"));
  }
  CHECK(HasLine(text, "framemill_service_gpus{state=\"busy\"} 0"));
  CHECK(HasLine(text, "framemill_service_gpus{state=\"free\"} 0"));
  f.gpus_busy = 3;
  f.gpus_free = 5;
  const std::string busy = framemill::RenderMetrics(f);
  CHECK(HasLine(busy, "framemill_service_gpus{state=\"busy\"} 3"));
  CHECK(HasLine(busy, "framemill_service_gpus{state=\"free\"} 5"));
  CHECK(HasLine(text, "framemill_spare_workers 0"));
  f.spare_workers = 2;
  CHECK(HasLine(framemill::RenderMetrics(f), "framemill_spare_workers 2"));
  CHECK(HasLine(text, "framemill_jobs_waiting_for_space 0"));
  CHECK(HasLine(text, "framemill_spool_full 0"));
  f.jobs_waiting_for_space = 1;
  f.spool_full = true;
  CHECK(HasLine(framemill::RenderMetrics(f), "framemill_jobs_waiting_for_space 1"));
  CHECK(HasLine(framemill::RenderMetrics(f), "framemill_spool_full 1"));
  int pairs = 0;
  for (WorkerEvent e : {WorkerEvent::kRecycle, WorkerEvent::kCrash, WorkerEvent::kKill}) {
    for (const std::string& reason : framemill::WorkerEventReasons(e)) {
      CHECK(HasLine(text, std::string("framemill_worker_events_total{event=\"") +
                              framemill::Name(e) + "\",reason=\"" + reason + "\"} 0"));
      ++pairs;
    }
  }
  CHECK(CountPrefix(text, "framemill_worker_events_total{") == pairs);
  CHECK(HasLine(text, "framemill_up 1"));
  CHECK(HasLine(text, "framemill_queue_length 0"));
  CHECK(HasLine(text, "framemill_frames_processed_total 0"));
  CHECK(CountPrefix(text, "framemill_worker_rss_bytes{") == 0);
  CHECK(CountPrefix(text, "framemill_gpu_reserved_bytes{") == 0);
  // Every metric is introduced by its HELP and TYPE lines, once, before its samples.
  std::string last_type;
  for (const std::string& l : Lines(text)) {
    if (l.rfind("# HELP ", 0) == 0) continue;
    if (l.rfind("# TYPE ", 0) == 0) {
      last_type = l.substr(7, l.find(' ', 7) - 7);
      CHECK(CountPrefix(text, "# TYPE " + last_type + " ") == 1);
      CHECK(CountPrefix(text, "# HELP " + last_type + " ") == 1);
      continue;
    }
    CAPTURE(l);
    std::string name = l.substr(0, l.find_first_of("{ "));
    CHECK(name == last_type);
  }
}

TEST_CASE("metrics: worker events are counted by event and reason, unknown reasons as other") {
  MetricsFigures f;
  f.worker_events[WorkerEvent::kRecycle]["max_chunks"] = 7;
  f.worker_events[WorkerEvent::kRecycle]["rss"] = 2;
  f.worker_events[WorkerEvent::kKill]["hang"] = 1;
  f.worker_events[WorkerEvent::kCrash]["signal"] = 3;
  f.worker_events[WorkerEvent::kCrash]["a reason nobody listed"] = 4;
  f.worker_events[WorkerEvent::kCrash]["another one"] = 1;
  std::string text = framemill::RenderMetrics(f);
  CHECK(HasLine(text, "framemill_worker_events_total{event=\"recycle\",reason=\"max_chunks\"} 7"));
  CHECK(HasLine(text, "framemill_worker_events_total{event=\"recycle\",reason=\"rss\"} 2"));
  CHECK(HasLine(text, "framemill_worker_events_total{event=\"recycle\",reason=\"gpu\"} 0"));
  CHECK(HasLine(text, "framemill_worker_events_total{event=\"kill\",reason=\"hang\"} 1"));
  CHECK(HasLine(text, "framemill_worker_events_total{event=\"crash\",reason=\"signal\"} 3"));
  CHECK(HasLine(text, "framemill_worker_events_total{event=\"crash\",reason=\"other\"} 5"));
  CHECK(text.find("nobody listed") == std::string::npos);
}

TEST_CASE("metrics: figures of jobs, the queue and the workers, with per-GPU sums") {
  MetricsFigures f;
  f.jobs_incoming = 3;
  f.jobs_done = 12;
  f.oldest_waiting_age_s = 42.5;
  f.frames_processed = 78;
  f.job_fps = 12.25;
  f.start_time_s = 1764584263.5;
  f.workers = {{0, "cuda:0", 100, 1000},
               {1, "cuda:0", 200, 2000},
               {2, "cuda:1", 300, 4000},
               {3, "cpu", 400, 0}};
  std::string text = framemill::RenderMetrics(f);
  CHECK(HasLine(text, "framemill_jobs{state=\"incoming\"} 3"));
  CHECK(HasLine(text, "framemill_jobs{state=\"done\"} 12"));
  CHECK(HasLine(text, "framemill_queue_length 3"));
  CHECK(HasLine(text, "framemill_queue_oldest_age_seconds 42.5"));
  CHECK(HasLine(text, "framemill_frames_processed_total 78"));
  CHECK(HasLine(text, "framemill_job_fps 12.25"));
  CHECK(HasLine(text, "framemill_start_time_seconds 1764584263.5"));
  CHECK(HasLine(text, "framemill_worker_gpu_reserved_bytes{worker=\"1\",device=\"cuda:0\"} 2000"));
  CHECK(HasLine(text, "framemill_worker_rss_bytes{worker=\"3\",device=\"cpu\"} 400"));
  CHECK(HasLine(text, "framemill_gpu_reserved_bytes{device=\"cuda:0\"} 3000"));
  CHECK(HasLine(text, "framemill_gpu_reserved_bytes{device=\"cuda:1\"} 4000"));
  CHECK(CountPrefix(text, "framemill_gpu_reserved_bytes{") == 2);  // no "cpu" GPU
  f.up = false;
  CHECK(HasLine(framemill::RenderMetrics(f), "framemill_up 0"));
}

TEST_CASE("metrics: the file is replaced atomically, mode 0644 whatever the umask") {
  std::string dir = TempDir();
  std::string path = dir + "/framemill.prom";
  mode_t old = ::umask(077);
  REQUIRE(framemill::WriteMetricsFile(path, "first\n").ok());
  REQUIRE(framemill::WriteMetricsFile(path, "second\n").ok());
  ::umask(old);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "second\n");
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.exists();
  CHECK(entries == 1);  // no temp file left beside it
  CHECK_FALSE(framemill::WriteMetricsFile(dir + "/absent/framemill.prom", "x").ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("metrics: the spool's counts by state and the oldest waiting job's arrival, not its mtime") {
  std::string root = TempDir();
  framemill::Spool spool(root);
  REQUIRE(spool.Prepare().ok());
  CHECK(spool.Count().incoming == 0);
  CHECK(spool.Count().oldest_incoming_ns == 0);
  for (const char* name : {"a.json", "b.json", "notes.txt"}) {
    std::ofstream(root + "/incoming/" + name) << "{}";
  }
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = 1000000000;  // 2001
  times[0].tv_nsec = times[1].tv_nsec = 0;
  REQUIRE(::utimensat(AT_FDCWD, (root + "/incoming/b.json").c_str(), times, 0) == 0);
  std::filesystem::create_directories(root + "/done/j1");
  std::filesystem::create_directories(root + "/done/j2");
  std::filesystem::create_directories(root + "/failed/j3");
  framemill::SpoolCounts c = spool.Count();
  CHECK(c.incoming == 2);  // as Incoming() sees them: .json files only
  CHECK(c.active == 0);
  CHECK(c.done == 2);
  CHECK(c.failed == 1);
  // b.json's mtime says 2001, but it came now: its ctime, which no user can date back, counts
  // (a back-dated file would otherwise claim the queue's oldest age).
  const int64_t now_ns = static_cast<int64_t>(std::time(nullptr)) * 1000000000;
  CHECK(c.oldest_incoming_ns > now_ns - int64_t{600} * 1000000000);
  CHECK(c.oldest_incoming_ns <= now_ns + int64_t{1000000000});
  std::filesystem::remove_all(root);
}
