// The service's loop (supervisor/service/service.h) without jobs: what it refuses, and what it
// leaves when stopped. Jobs through the real binaries are tests/integration/service_test.cpp's.
#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "common/file_util.h"
#include "supervisor/service/service.h"

using namespace framemill;

TEST_CASE("service loop: refuses to serve without the roots jobs may use") {
  Config config;
  config.spool_dir = "/nonexistent/spool";  // refused before the spool is touched
  std::atomic<bool> stop{true};
  Service service(config, stop);
  Status s = service.Run();
  CHECK(s.code() == StatusCode::kInvalidConfig);
  CHECK(s.message().find("allowed_input_roots") != std::string::npos);
}

TEST_CASE("service loop: stopped before its first pass, it leaves the spool and a metrics file "
          "that says it is down") {
  char dir[] = "/tmp/framemill-unit-service-loop-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string root = dir;
  Config config;
  config.spool_dir = root;
  config.allow_any_path = true;
  config.spare_workers = false;
  std::atomic<bool> stop{true};
  {
    Service service(config, stop);
    REQUIRE(service.Run().ok());
  }
  CHECK(IsDirectory(root + "/incoming"));
  std::ifstream in(root + "/metrics/framemill.prom");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\nframemill_up 0\n") != std::string::npos);
  (void)RemoveTree(root);
}
