// framemill serve's metrics file (supervisor/report/metrics.h) on a real job: accepted by Prometheus's
// own checker (promtool), its figures read back, and never seen half-written by a reader.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "fault_harness.h"
#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

// The metrics a complete file has (each with its TYPE line), the last one last.
constexpr int kMetrics = 16;
constexpr const char* kLastType = "# TYPE framemill_gpu_reserved_bytes gauge";

// The value of the sample `series` (name and labels as written), or -1 when it is absent.
double Value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// Whether `text` is a whole exposition as the service writes it: every metric's TYPE line, the
// last metric's samples last, and a final newline (a torn file lacks one or the other).
bool Complete(const std::string& text) {
  if (text.empty() || text.back() != '\n') return false;
  int types = 0;
  bool after_last = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) ++types;
    if (line == kLastType) {
      after_last = true;
    } else if (after_last && line.rfind("framemill_gpu_reserved_bytes{", 0) != 0) {
      return false;
    }
  }
  return types == kMetrics && after_last;
}

RunResult Promtool(const std::string& path) {
  return Shell(std::string("'") + FRAMEMILL_TEST_PROMTOOL + "' check metrics < '" + path + "'");
}

// A service whose jobs run with 2 workers and 8-frame chunks (`defaults` added), its metrics
// file, and a copy of the identity model.
struct MetricsService {
  Service s;
  std::string metrics, model;
};

MetricsService MakeMetricsService(const std::string& name, nlohmann::json defaults,
                                  nlohmann::json extra = nlohmann::json::object()) {
  defaults["workers"] = 2;
  defaults["chunk_frames"] = 8;
  defaults["device"] = TestDevice();
  extra["defaults"] = defaults;
  MetricsService m{MakeService(name, extra), "", ""};
  m.metrics = m.s.spool + "/metrics/framemill.prom";
  m.model = ModelCopy("identity", m.s.dir);
  fs::create_directories(m.s.dir + "/out");
  return m;
}

// Submits job d0: d0.mp4 (78 frames) through the identity model.
void DropD0(const MetricsService& m) {
  Drop(m.s, "d0",
       nlohmann::json{
           {"input", TestClip("d0.mp4")}, {"output", m.s.dir + "/out/d0.mp4"}, {"model", m.model}}
           .dump());
}

// Waits until the metrics file counts one job in `state`.
bool WaitForOne(const MetricsService& m, const std::string& state) {
  const std::string series = "framemill_jobs{state=\"" + state + "\"}";
  return WaitUntil([&] { return Value(ReadText(m.metrics), series) == 1; }, 120);
}

}  // namespace

TEST_CASE("service metrics: a real job's states, frames and recycles, checked by promtool") {
  // Workers recycled every two chunks or so: the job has recycles to count.
  MetricsService m =
      MakeMetricsService("svc_metrics", {{"recycle", {{"max_chunks", 3}, {"jitter", 0.1}}}});
  const Service& s = m.s;
  const std::string& metrics = m.metrics;
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  // The first file is written at start, before any job: every state there, at 0.
  REQUIRE(WaitUntil([&] { return Complete(ReadText(metrics)); }, 30));
  std::string idle = ReadText(metrics);
  CHECK(Value(idle, "framemill_up") == 1);
  CHECK(Value(idle, "framemill_jobs{state=\"done\"}") == 0);
  CHECK(Value(idle, "framemill_frames_processed_total") == 0);
  struct stat st {};
  REQUIRE(::stat(metrics.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
  REQUIRE(::stat(fs::path(metrics).parent_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);

  // A reader that takes the file as the node exporter would, every 200 us while the job runs
  // (without hogging a core the job needs): every read must be a whole file.
  std::atomic<bool> stop_reading{false};
  int reads = 0, torn = 0;
  double frames_seen = 0;
  std::thread reader([&] {
    while (!stop_reading.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::string text = ReadText(metrics);
      ++reads;
      if (!Complete(text)) {
        ++torn;
        continue;
      }
      frames_seen = std::max(frames_seen, Value(text, "framemill_frames_processed_total"));
    }
  });
  DropD0(m);
  bool done = WaitForOne(m, "done");
  stop_reading.store(true);
  reader.join();
  REQUIRE(done);
  nlohmann::json result = ReadJson(s.spool + "/done/d0/result.json");
  REQUIRE(result.is_object());
  CHECK(torn == 0);
  CHECK(reads > 1);
  MESSAGE("reads of the metrics file during the job: " << reads);

  std::string after = ReadText(metrics);
  RunResult check = Promtool(metrics);
  CHECK_MESSAGE(check.exit_code == 0, check.out, check.err);
  CHECK(Value(after, "framemill_jobs{state=\"done\"}") == 1);
  CHECK(Value(after, "framemill_jobs{state=\"failed\"}") == 0);
  CHECK(Value(after, "framemill_jobs{state=\"active\"}") == 0);
  CHECK(Value(after, "framemill_jobs{state=\"incoming\"}") == 0);
  CHECK(Value(after, "framemill_queue_length") == 0);
  CHECK(Value(after, "framemill_queue_oldest_age_seconds") == 0);
  CHECK(Value(after, "framemill_job_fps") == 0);  // no job runs
  CHECK(Value(after, "framemill_service_gpus{state=\"busy\"}") == 0);  // no service_gpus
  // d0.mp4 has 78 frames (shared/testdata/SOURCES.md); every one went through the model once.
  CHECK(result["frames"] == 78);
  CHECK(Value(after, "framemill_frames_processed_total") == 78);
  CHECK(frames_seen <= 78);
  const int recycles = result["recycles"].get<int>();
  CHECK(recycles > 0);
  double counted = 0;
  for (const char* reason : {"rss", "gpu", "max_chunks"}) {
    counted +=
        Value(after, std::string("framemill_worker_events_total{event=\"recycle\",reason=\"") +
                         reason + "\"}");
  }
  CHECK(counted == recycles);
  CHECK(Value(after, "framemill_worker_events_total{event=\"recycle\",reason=\"max_chunks\"}") ==
        recycles);
  CHECK(Value(after, "framemill_worker_events_total{event=\"crash\",reason=\"signal\"}") +
            Value(after, "framemill_worker_events_total{event=\"crash\",reason=\"exit\"}") ==
        result["crashes"].get<int>());

  // A stopping service leaves framemill_up 0 in a file that is still valid.
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  std::string last = ReadText(metrics);
  CHECK(Value(last, "framemill_up") == 0);
  CHECK(Value(last, "framemill_frames_processed_total") == 78);
  check = Promtool(metrics);
  CHECK_MESSAGE(check.exit_code == 0, check.out, check.err);
}

TEST_CASE("service metrics: a chunk that crashes every worker: the crashes and the failed job") {
  MetricsService m =
      MakeMetricsService("svc_metrics_crash", {{"max_attempts", 3}}, WithFaultWorker());
  const Service& s = m.s;
  const std::string& metrics = m.metrics;
  // Every worker that reaches frame 40 aborts (SIGABRT): the chunk fails its third worker.
  BackgroundJob serve = Serve(s, {{"FRAMEMILL_TEST_FAULT", "crash@40"}});
  KillOnExit guard_serve{serve};
  DropD0(m);
  REQUIRE(WaitForOne(m, "failed"));
  nlohmann::json result = ReadJson(s.spool + "/failed/d0/result.json");
  REQUIRE(result.is_object());
  CHECK(result["reason"]["code"] == "worker_failed");
  std::string text = ReadText(metrics);
  RunResult check = Promtool(metrics);
  CHECK_MESSAGE(check.exit_code == 0, check.out, check.err);
  CHECK(Value(text, "framemill_jobs{state=\"done\"}") == 0);
  CHECK(Value(text, "framemill_jobs{state=\"active\"}") == 0);
  // The job failed on the chunk's third crash, each one counted, the last one too.
  CHECK(Value(text, "framemill_worker_events_total{event=\"crash\",reason=\"signal\"}") == 3);
  CHECK(Value(text, "framemill_worker_events_total{event=\"crash\",reason=\"exit\"}") == 0);
  CHECK(Value(text, "framemill_frames_processed_total") < 78);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}

TEST_CASE("service metrics: a job run again after a decoder crash counts both runs' workers") {
  // The decoder is killed once before frame 40 and not restarted within the job: the job runs
  // again (crash_retries). Its result.json counts the last run's recycles; the metrics both.
  MetricsService m =
      MakeMetricsService("svc_metrics_retry", {{"recycle", {{"max_chunks", 2}, {"jitter", 0.1}}}},
                         {{"decoder_restarts", 0}, {"crash_retries", 1}});
  const Service& s = m.s;
  const std::string& metrics = m.metrics;
  BackgroundJob serve = Serve(s, {{"FRAMEMILL_FAULT_KILL_DECODER_AT_FRAME", "40"}});
  KillOnExit guard_serve{serve};
  DropD0(m);
  REQUIRE(WaitForOne(m, "done"));
  nlohmann::json result = ReadJson(s.spool + "/done/d0/result.json");
  REQUIRE(result.is_object());
  REQUIRE(result["faults"]["attempts"] == 2);  // the fault did fire
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  std::string text = ReadText(metrics);
  // Every recycle of both runs, as the supervisor logged them ("worker K (gen G) retiring: ...").
  const int retired = CountLines(ReadText(s.dir + "/serve.stderr"), ") retiring: ");
  INFO("recycles in result.json (last run): " << result["recycles"]);
  CHECK(retired >= result["recycles"].get<int>());
  CHECK(Value(text, "framemill_worker_events_total{event=\"recycle\",reason=\"max_chunks\"}") ==
        retired);
  // The first run finished no segment (one segment holds the clip): each frame counted once.
  CHECK(Value(text, "framemill_frames_processed_total") == 78);
}

TEST_CASE("service metrics: \"metrics_textfile\": \"\" writes no file") {
  Service s = MakeService("svc_metrics_off", {{"metrics_textfile", ""}});
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/incoming"); }, 30));
  Drop(s, "bad", "{");  // a state change: failed/ gets it
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/bad/result.json"); }, 30));
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  CHECK_FALSE(fs::exists(s.spool + "/metrics"));
}
