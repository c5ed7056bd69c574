// The service's admission (supervisor/service/admission.h): when a job may be claimed, the head's
// fate, a job's settings on its share of the GPUs, the share itself.
#include <doctest/doctest.h>

#include <fstream>
#include <unistd.h>

#include "common/file_util.h"
#include "supervisor/service/admission.h"

using namespace framemill;

namespace {

std::string TempDir() {
  char dir[] = "/tmp/framemill-unit-service-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

QueuedJob GpuJob(std::vector<int> gpus = {}, bool alone = false) {
  QueuedJob q;
  q.id = "j";
  q.needs_gpus = true;
  q.alone = alone;
  q.ask = GpuAsk{std::move(gpus), "m.pt"};
  return q;
}

using Kind = HeadDecision::Kind;
const auto kOne = [] { return 1; };

}  // namespace

TEST_CASE("admission: when the loop may claim a job") {
  CHECK(MayClaim(false, false, {}));
  CHECK_FALSE(MayClaim(false, false, {1, false, false}));   // no GPU set: one at a time
  CHECK(MayClaim(true, true, {3, false, true}));            // a GPU is free
  CHECK(MayClaim(true, false, {3, false, false}));          // none free, but a CPU job could run
  CHECK_FALSE(MayClaim(true, false, {3, false, true}));     // nothing could start
  CHECK_FALSE(MayClaim(true, true, {1, true, false}));      // one runs alone
}

TEST_CASE("admission: the head's fate") {
  const std::vector<int> owned = {0, 1, 2, 3};
  // Without a GPU set: starts (MayClaim kept it to one at a time).
  HeadDecision d = DecideHead(GpuJob(), {}, {}, {}, kOne, {});
  CHECK(d.kind == Kind::kStart);
  CHECK(d.gpus.empty());
  CHECK_FALSE(d.cpu);
  // A GPU job alone in the queue takes every free GPU; with four waiting, one.
  CHECK(DecideHead(GpuJob(), owned, {1, 2}, {}, kOne, {}).gpus == std::vector<int>{1, 2});
  CHECK(DecideHead(GpuJob(), owned, {0, 1, 2, 3}, {}, [] { return 4; }, {}).gpus ==
        std::vector<int>{0});
  // Its named GPUs busy: it waits for them.
  CHECK(DecideHead(GpuJob({3}), owned, {0, 1}, {1, false, false}, kOne, {}).kind ==
        Kind::kWaitForGpus);
  // Naming a GPU the service does not own: starts with none, and its thread fails it.
  d = DecideHead(GpuJob({7}), owned, {0}, {}, kOne, {});
  CHECK(d.kind == Kind::kStart);
  CHECK(d.gpus.empty());
  // A CPU job beside GPU jobs: one at a time.
  QueuedJob cpu = GpuJob();
  cpu.needs_gpus = false;
  d = DecideHead(cpu, owned, {}, {2, false, false}, kOne, {});
  CHECK(d.kind == Kind::kStart);
  CHECK(d.cpu);
  CHECK(DecideHead(cpu, owned, {}, {2, false, true}, kOne, {}).kind == Kind::kWait);
  // A resumed job waits for the running ones, then takes every free GPU whatever waits.
  CHECK(DecideHead(GpuJob({}, true), owned, {0}, {1, false, false}, kOne, {}).kind ==
        Kind::kWait);
  CHECK(DecideHead(GpuJob({}, true), owned, std::set<int>{0, 1, 2, 3}, {}, [] { return 9; }, {}).gpus ==
        owned);
  // Nothing starts beside a job running alone.
  CHECK(DecideHead(GpuJob(), owned, {0}, {1, true, false}, kOne, {}).kind == Kind::kWait);
}

TEST_CASE("admission: a job's settings on its share of the GPUs") {
  JobSettings s;
  s.workers = 3;
  ShareSettings({}, false, &s);  // no share: unchanged
  CHECK(s.workers == 3);
  CHECK(s.gpus.empty());
  ShareSettings({2, 5}, false, &s);  // 3 workers over 2 GPUs: 2 each
  CHECK(s.workers == 4);
  CHECK(s.gpus == std::vector<int>{2, 5});
  CHECK(s.device.kind == DeviceKind::kCuda);
  JobSettings per;
  per.workers_per_gpu = 40;
  ShareSettings({0, 1}, false, &per);
  CHECK(per.workers == kMaxWorkers);
  JobSettings labels;
  labels.gpus = {1};
  ShareSettings({1}, true, &labels);  // labels only: where the job says
  CHECK(labels.gpus.empty());
  CHECK(labels.device.kind == DeviceKind::kAuto);
}

TEST_CASE("admission: the GPU share and a queued job's starts") {
  GpuShare share({0, 1, 2});
  share.Take({0, 2});
  CHECK(share.free() == std::set<int>{1});
  share.Give({2});
  CHECK(share.free() == std::set<int>{1, 2});

  const std::string dir = TempDir();
  Config config;
  CHECK_FALSE(ReadQueuedJob("a", dir, config, false).alone);  // no starts file: a first start
  std::ofstream(dir + "/starts") << "1\n";
  const QueuedJob q = ReadQueuedJob("a", dir, config, false);
  CHECK(q.alone);  // the supervisor died while it ran
  CHECK_FALSE(q.needs_gpus);  // no GPU set
  (void)RemoveTree(dir);
}
