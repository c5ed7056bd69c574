#include <doctest/doctest.h>

#include <algorithm>

#include "supervisor/cluster/slurm_commands.h"

using namespace framemill;

namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

SlurmPaths Paths(const std::string& job, const std::string& config, const std::string& logs,
                 const std::string& submitter = "") {
  SlurmPaths p;
  p.job = job;
  p.config = config;
  p.logs_dir = logs;
  p.submitter = submitter;
  return p;
}

}  // namespace

TEST_CASE("slurm: an array of parts, then a stitch after it, the GPU options to the parts only") {
  JobSpec job;
  job.settings.device.kind = DeviceKind::kCuda;
  const std::vector<std::string> extra = {"--partition=gpu", "--gpus-per-task=2"};
  const std::vector<std::string> a =
      SbatchArrayArgs("/opt/fm/framemill",
                      Paths("/shared/it's.json", "/etc/fm.json", "/shared/logs"), 3, job, extra);
  CHECK(a.front() == "sbatch");
  CHECK(Has(a, "--parsable"));
  CHECK(Has(a, "--requeue"));
  CHECK(Has(a, "--array=1-3"));
  CHECK(Has(a, "--partition=gpu"));
  CHECK(Has(a, "--gpus-per-task=2"));
  CHECK_FALSE(Has(a, "--gres=gpu:1"));  // the options name GPUs already
  CHECK(Has(a, "--output=/shared/logs/slurm-%A_%a.out"));
  CHECK(a.back() ==
        "--wrap=exec '/opt/fm/framemill' --config '/etc/fm.json' run '/shared/it'\\''s.json' "
        "--part \"$SLURM_ARRAY_TASK_ID/3\"");

  const std::vector<std::string> s = SbatchStitchArgs(
      "/opt/fm/framemill", Paths("/shared/j.json", "", "/shared/logs"), "77", extra);
  CHECK(Has(s, "--dependency=afterok:77"));
  CHECK(Has(s, "--partition=gpu"));
  CHECK_FALSE(Has(s, "--gpus-per-task=2"));
  CHECK(s.back() == "--wrap=exec '/opt/fm/framemill' stitch '/shared/j.json'");

  // A CUDA job without GPU options asks for one per task (as many as its `gpus`).
  job.settings.gpus = {0, 1};
  CHECK(Has(SbatchArrayArgs("f", Paths("/j.json", "", "/l"), 2, job, {}), "--gres=gpu:2"));
  job.settings.device.kind = DeviceKind::kCpu;
  for (const std::string& arg : SbatchArrayArgs("f", Paths("/j.json", "", "/l"), 2, job, {})) {
    CHECK(arg.rfind("--gres", 0) != 0);
  }
}

TEST_CASE("slurm: a resume's array runs the named parts only, and a stitch alone has no dependency") {
  JobSpec job;
  const std::vector<std::string> a =
      SbatchArrayArgs("f", Paths("/j.json", "", "/l"), 4, job, {"--time=10"}, {2, 4});
  CHECK(Has(a, "--array=2,4"));
  CHECK_FALSE(Has(a, "--array=1-4"));
  // The task id is the part's index among all 4, not among those run again.
  CHECK(a.back() == "--wrap=exec 'f' run '/j.json' --part \"$SLURM_ARRAY_TASK_ID/4\"");
  const std::vector<std::string> s =
      SbatchStitchArgs("f", Paths("/j.json", "", "/l"), "", {"--time=10"});
  for (const std::string& arg : s) CHECK(arg.rfind("--dependency", 0) != 0);
  CHECK(Has(s, "--time=10"));
}

TEST_CASE("slurm: a spool job's parts and stitch carry its submitter, whose rights they check") {
  JobSpec job;
  const SlurmPaths paths = Paths("/spool/active/j1/job.json", "", "/l", "1001:1001");
  CHECK(SbatchArrayArgs("f", paths, 2, job, {}).back() ==
        "--wrap=exec 'f' run '/spool/active/j1/job.json' --part \"$SLURM_ARRAY_TASK_ID/2\" "
        "--submitter '1001:1001'");
  CHECK(SbatchStitchArgs("f", paths, "7", {}).back() ==
        "--wrap=exec 'f' stitch '/spool/active/j1/job.json' --submitter '1001:1001'");
}

TEST_CASE("slurm: the job id of sbatch --parsable, with or without a cluster name") {
  CHECK(*ParseParsableId("1234\n") == "1234");
  CHECK(*ParseParsableId("1234;cluster\n") == "1234");
  CHECK_FALSE(ParseParsableId("sbatch: error\n").ok());
  CHECK_FALSE(ParseParsableId("").ok());
}
