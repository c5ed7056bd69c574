// The on_job_end hooks off the service's loop (supervisor/service/job_end_hook.h JobEndHooks):
// Post returns at once, hooks run in order on their own thread, a burst beyond the bound drops.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "supervisor/service/job_end_hook.h"

using namespace framemill;
namespace fs = std::filesystem;

TEST_CASE("job end hooks: posted at once, run in order off the caller, a burst beyond the bound dropped") {
  const std::string dir =
      (fs::temp_directory_path() / ("fm_hooks_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string seen = dir + "/seen";
  // Each hook says it started, waits for `go`, then appends the job's id to `seen`.
  JobEndHook hook{{"/bin/sh", "-c",
                   "touch " + dir + "/started-$FRAMEMILL_JOB_ID; while [ ! -e " + dir +
                       "/go ]; do sleep 0.02; done; echo \"$FRAMEMILL_JOB_ID\" >> " + seen},
                  10};
  {
    JobEndHooks hooks(hook, /*max_waiting=*/3);
    for (int i = 0; i < 6; ++i) {
      const std::string id = "j" + std::to_string(i);
      fs::create_directories(dir + "/" + id);
      hooks.Post({id, SpoolState::kDone, dir + "/" + id});
      if (i == 0) {  // j0 runs (and waits for go) before the others are posted
        for (int t = 0; t < 500 && !fs::exists(dir + "/started-j0"); ++t) ::usleep(10'000);
        REQUIRE(fs::exists(dir + "/started-j0"));
      }
    }
    CHECK(hooks.dropped() == 2);  // j1..j3 wait; j4 and j5 found three waiting
    // Post never waited for a hook: j0's still waits for `go`, made only now.
    CHECK_FALSE(fs::exists(seen));
    std::ofstream(dir + "/go") << "";
    hooks.WaitIdle();
  }
  std::ifstream in(seen);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "j0\nj1\nj2\nj3\n");
  fs::remove_all(dir);
}
