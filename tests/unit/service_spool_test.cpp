// The spool as the service shares it (supervisor/service/service_spool.h).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "supervisor/service/service_spool.h"

using namespace framemill;

namespace {

std::string TempDir() {
  char dir[] = "/tmp/framemill-unit-service-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}

}  // namespace

TEST_CASE("service spool: an entry set aside ends after the lock is let go") {
  const std::string root = TempDir();
  Config config;
  config.spool_dir = root;
  ServiceSpool* self = nullptr;
  int ended = 0;
  SpoolCounts seen;
  // The end rewrites the metrics, which count the spool: the lock must be free by then.
  ServiceSpool spool(config, [&] {
    ++ended;
    seen = self->Count();
  });
  self = &spool;
  REQUIRE(spool.Open().ok());
  REQUIRE(::mkfifo((root + "/incoming/f.json").c_str(), 0644) == 0);  // no job file
  CHECK(spool.ClaimNext({}).empty());
  CHECK(ended == 1);
  CHECK(seen.failed == 1);
  CHECK(spool.CountWaiting("h", {}) == 1);
  (void)RemoveTree(root);
}
