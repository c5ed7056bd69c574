#include "supervisor/service/job_end_hook.h"

#include <chrono>
#include <thread>

#include <boost/process.hpp>

#include "common/clock.h"
#include "supervisor/process/child_fds.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace bp = boost::process;

Status RunJobEndHook(const JobEndHook& hook, const JobEnd& end) {
  if (hook.argv.empty()) return Status::Ok();
  const std::string& program = hook.argv.front();
  std::vector<std::string> args(hook.argv.begin() + 1, hook.argv.end());
  args.push_back(end.job_dir + "/result.json");
  bp::environment env = boost::this_process::environment();
  env["FRAMEMILL_JOB_ID"] = end.id;
  env["FRAMEMILL_JOB_STATE"] = Name(end.state);
  const std::string log = end.job_dir + "/on_job_end.log";
  bp::child child;
  try {
    child = bp::child(bp::exe = program, bp::args = args, env, bp::std_in.close(),
                      (bp::std_out & bp::std_err) > log, ChildFds({}));
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, "on_job_end: cannot start " + program + ": " + e.what());
  }
  ReapOnExit reap(child);
  const uint64_t deadline = MonotonicMs() + static_cast<uint64_t>(hook.timeout_s * 1000.0);
  std::error_code ec;
  while (child.running(ec) && !ec) {
    if (MonotonicMs() >= deadline) {
      KillAndReap(child);
      return Status(StatusCode::kIo, "on_job_end: " + program + " still ran after " +
                                         std::to_string(hook.timeout_s) + " s: killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  child.wait(ec);
  CommandOutput exit;
  SetExitStatus(child.native_exit_code(), &exit);
  if (exit.exit_code == 0) return Status::Ok();
  return Status(StatusCode::kIo, "on_job_end: " + program + " ended with " + DescribeExit(exit) +
                                     ": " + LastLinesOfFile(log, 3));
}

}  // namespace framemill
