// The service's metrics (supervisor/service/service_metrics.h): live figures, totals, the file.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <unistd.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "supervisor/service/service_metrics.h"

using namespace framemill;

namespace {

std::string TempDir() {
  char dir[] = "/tmp/framemill-unit-service-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("service metrics: live frames, then the totals of the runs that ended") {
  ServiceMetrics m(4, [] { return SpoolCounts{}; });
  m.NoteGpusFree(3);
  JobProgress p;
  p.frames_total = 100;
  p.frames_resumed = 10;
  p.frames_done = 50;
  m.NoteProgress("a", p, MonotonicMs(), {});
  MetricsFigures f = m.Figures({2, 1, 0, 0, 0}, true);
  CHECK(f.frames_processed == 40);  // resumed frames do not count
  CHECK(f.jobs_incoming == 2);
  CHECK(f.gpus_free == 3);
  CHECK(f.gpus_busy == 1);
  m.EndRun("a", {}, /*finished=*/true);  // every frame of the plan, less the resumed
  f = m.Figures({}, false);
  CHECK(f.frames_processed == 90);
  CHECK_FALSE(f.up);
  DispatchStats crashed;
  crashed.crashes_by_reason["signal"] = 2;
  m.NoteProgress("b", p, MonotonicMs(), {crashed});  // an attempt of b ended
  m.EndRun("b", {crashed}, /*finished=*/false);       // b failed: its frames so far count
  f = m.Figures({}, true);
  CHECK(f.frames_processed == 130);
  CHECK(f.worker_events[WorkerEvent::kCrash]["signal"] == 2);
}

TEST_CASE("service metrics: the file, written where the config says") {
  const std::string root = TempDir();
  ServiceMetrics m(0, [] { return SpoolCounts{1, 0, 0, 0, 0}; });
  m.Start("metrics/framemill.prom", root);
  CHECK(Slurp(root + "/metrics/framemill.prom").find("\nframemill_up 1\n") != std::string::npos);
  m.Write(/*up=*/false);
  CHECK(Slurp(root + "/metrics/framemill.prom").find("\nframemill_up 0\n") != std::string::npos);
  (void)RemoveTree(root);
}
