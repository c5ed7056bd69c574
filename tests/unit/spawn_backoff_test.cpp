// What the dispatcher keeps of its workers' starts without a process: when a replacement may be
// started again after starts failed (supervisor/workers/spawn_backoff.h), and what the first
// ready worker found of the model (supervisor/workers/model_probe.h).
#include <doctest/doctest.h>

#include "supervisor/workers/model_probe.h"
#include "supervisor/workers/spawn_backoff.h"

using namespace framemill;

TEST_CASE("spawn backoff: tries again 1, 2, 4, 8 s after failures in a row, then gives up") {
  SpawnBackoff backoff;
  CHECK(backoff.Due(0));
  CHECK(backoff.Failed(100) == 1000);
  CHECK_FALSE(backoff.Due(1099));
  CHECK(backoff.Due(1100));
  CHECK(backoff.Failed(1100) == 2000);
  CHECK(backoff.Failed(3100) == 4000);
  CHECK(backoff.Failed(7100) == 8000);
  CHECK_FALSE(backoff.Failed(15100));  // the fifth in a row
  CHECK(backoff.failures() == SpawnBackoff::kSpawnTries);
  backoff.Started();
  CHECK(backoff.failures() == 0);
  CHECK(backoff.Failed(20000) == 1000);  // a start between: counted from one again
}

TEST_CASE("model probe: later workers must agree on the output size, and the device is labelled") {
  DeviceSetting configured;  // auto
  ModelProbe probe;
  CHECK(probe.Device(-1, configured) == Name(configured));  // before any worker was ready
  ProbeReport first;
  first.width = 256;
  first.height = 256;
  first.device = "cuda:0";
  probe.Take(first, 64, 64, configured);
  CHECK(probe.Device(-1, configured) == "cuda:0");
  CHECK(probe.Device(3, configured) == "cuda:3");  // pinned: its own GPU
  ProbeReport later = first;
  later.device = "cpu";
  CHECK(probe.Agrees(later, 64, 64));
  // A compiled engine probed at the job's frame: the same x4 scale agrees, another does not.
  ProbeReport engine;
  engine.width = 7680;
  engine.height = 4320;
  CHECK(probe.Agrees(engine, 1920, 1080));
  engine.height = 2160;
  CHECK_FALSE(probe.Agrees(engine, 1920, 1080));
  later.height = 128;
  CHECK_FALSE(probe.Agrees(later, 64, 64));
  first.device = "cuda:0 (A100)";  // not a label's form: the configured device is named
  probe.Take(first, 64, 64, configured);
  CHECK(probe.Device(-1, configured) == Name(configured));
}

TEST_CASE("model probe: a label is cpu or cuda:N") {
  CHECK(PlainDevice("cpu"));
  CHECK(PlainDevice("cuda:0"));
  CHECK(PlainDevice("cuda:123"));
  CHECK_FALSE(PlainDevice("cuda:"));
  CHECK_FALSE(PlainDevice("cuda:1234"));
  CHECK_FALSE(PlainDevice("cuda:x"));
  CHECK_FALSE(PlainDevice("mps"));
}
