// `framemill slurm submit` on a one-machine Slurm cluster (scripts/slurm-local.sh): the stitched
// output equals a one-machine run's, frame for frame, with its audio; a part requeued in the
// middle of its work resumes from its done-log.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "harness.h"
#include "parts_harness.h"
#include "service_harness.h"

using namespace framemill::test;

namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Starts the local cluster (idempotent) and points SLURM_CONF at it; skips where it cannot start.
void UseLocalSlurm() {
  const std::string script = std::string(FRAMEMILL_SOURCE_DIR) + "/scripts/slurm-local.sh";
  RunResult r = Shell(ShellQuote(script) + " start");
  if (r.exit_code != 0) SkipTest("the local Slurm cluster cannot start here: " + r.err + r.out);
  ::setenv("SLURM_CONF", Trim(Shell(ShellQuote(script) + " conf").out).c_str(), 1);
}

bool InQueue(const std::string& id) {
  return !Trim(Shell("squeue -h -j " + id + " -o %i 2>/dev/null").out).empty();
}

}  // namespace

TEST_CASE("slurm: 3 parts and a stitch equal the one-machine run, and a requeued part resumes") {
  UseLocalSlurm();
  const std::string dir = ScratchDir("slurm_three");
  const std::string clip = MakePartsClip(dir);
  WritePartsJob(dir, "whole", clip, dir + "/whole.mp4");
  RunResult whole = Framemill(dir, "run whole.json");
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);

  // Part 3 (segments 2 and 3, frames 64..119) hangs once at frame 100, after segment 2.
  WritePartsJob(dir, "job", clip, dir + "/out.mp4", {{"hang_timeout_s", 120}});
  const std::string once = dir + "/hang.once";
  RunResult submit = Framemill(dir, "slurm submit job.json --parts 3 -- --time=10",
                               "FRAMEMILL_TEST_FAULT=hang@100,once=" + once);
  REQUIRE_MESSAGE(submit.exit_code == 0, submit.err);
  std::istringstream ids(submit.out);
  std::string array_job, stitch_job;
  ids >> array_job >> stitch_job;
  REQUIRE_FALSE(array_job.empty());
  REQUIRE_FALSE(stitch_job.empty());

  const std::string part3 = dir + "/job.json.parts/part-3-of-3";
  const bool hung = WaitUntil(
      [&] {
        return std::filesystem::exists(once) &&
               ReadText(part3 + "/state.json").find("\"index\": 2") != std::string::npos;
      },
      120);
  REQUIRE_MESSAGE(hung, "part 3 did not reach its hang after segment 2");
  RunResult status = Framemill(dir, "slurm status job.json");
  CHECK(status.exit_code == 0);
  CHECK(status.out.find("part 3/3") != std::string::npos);
  CHECK(status.out.find("1/2 segments done") != std::string::npos);

  // What Slurm does to a task of a failed node: stop it and queue it again.
  RunResult requeue = Shell("scontrol requeue " + array_job + "_3");
  REQUIRE_MESSAGE(requeue.exit_code == 0, requeue.err);
  const bool finished = WaitUntil(
      [&] { return !InQueue(array_job) && !InQueue(stitch_job); }, 180);
  REQUIRE_MESSAGE(finished, Shell("squeue").out);

  const std::string logs = dir + "/job.json.slurm";
  const std::string part3_log = ReadText(logs + "/slurm-" + array_job + "_3.out");
  INFO(part3_log);
  CHECK(part3_log.find("resuming: 1 of 2 segments already finished") != std::string::npos);
  INFO(ReadText(logs + "/slurm-" + stitch_job + "-stitch.out"));
  REQUIRE(std::filesystem::exists(dir + "/out.mp4"));
  const std::vector<uint64_t> a =
      FrameHashes(dir + "/whole.mp4", kPartsClipWidth, kPartsClipHeight);
  const std::vector<uint64_t> b = FrameHashes(dir + "/out.mp4", kPartsClipWidth, kPartsClipHeight);
  CHECK(a.size() == static_cast<size_t>(kPartsClipFrames));
  CHECK(a == b);
  CHECK_FALSE(FirstStream(Probe(dir + "/out.mp4"), "audio").is_null());
}

TEST_CASE("slurm: the service with backend slurm files a submitted job in done/ with its output") {
  UseLocalSlurm();
  Service s = MakeService("slurm_service", {{"backend", "slurm"},
                                            {"slurm_parts", 2},
                                            {"slurm_poll_s", 0.2},
                                            {"slurm_options", {"--time=10"}}});
  const std::string clip = MakePartsClip(s.dir);
  const std::string model = ModelCopy("identity", s.dir);
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  Drop(s, "j1",
       nlohmann::json{{"input", clip},
                      {"output", s.dir + "/out.mp4"},
                      {"model", model},
                      {"workers", 1},
                      {"chunk_frames", 4},
                      {"segment_seconds", 1.0}}
           .dump());
  const std::string result = s.spool + "/done/j1/result.json";
  const bool done = WaitUntil([&] { return std::filesystem::exists(result); }, 180);
  INFO(ReadText(s.dir + "/serve.stderr"));
  REQUIRE(done);
  const nlohmann::json r = ReadJson(result);
  INFO(r.dump());
  CHECK(r["status"] == "done");
  CHECK(r["frames"] == kPartsClipFrames);
  CHECK(CountFrames(s.dir + "/out.mp4") == kPartsClipFrames);
  CHECK_FALSE(FirstStream(Probe(s.dir + "/out.mp4"), "audio").is_null());
  // Two parts ran as one Slurm array: their logs are beside the spool's copy of the job.
  const std::string logs = s.spool + "/done/j1/job.json.slurm";
  CHECK(ReadText(logs + "/slurm.json").find("\"parts\": 2") != std::string::npos);
}

TEST_CASE("slurm: resume runs again only the part whose task failed, then stitches") {
  UseLocalSlurm();
  const std::string dir = ScratchDir("slurm_resume");
  const std::string clip = MakePartsClip(dir);
  WritePartsJob(dir, "whole", clip, dir + "/whole.mp4");
  RunResult whole = Framemill(dir, "run whole.json");
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);

  // Part 2 (segment 1, frames 32..63) loses its worker once at frame 40; with one attempt per
  // chunk its `framemill run` fails, and the stitch's dependency can never be satisfied.
  WritePartsJob(dir, "job", clip, dir + "/out.mp4", {{"max_attempts", 1}});
  const std::string once = dir + "/exit.once";
  RunResult submit = Framemill(dir, "slurm submit job.json --parts 3 -- --time=10",
                               "FRAMEMILL_TEST_FAULT=exit:3@40,once=" + once);
  REQUIRE_MESSAGE(submit.exit_code == 0, submit.err);
  std::istringstream ids(submit.out);
  std::string array_job, stitch_job;
  ids >> array_job >> stitch_job;
  REQUIRE_FALSE(stitch_job.empty());

  // While the array's tasks are queued or running, resume refuses and names them.
  RunResult early = Framemill(dir, "slurm resume job.json");
  CHECK(early.exit_code != 0);
  CHECK(early.err.find("still has tasks queued or running") != std::string::npos);

  const bool stuck = WaitUntil(
      [&] {
        return Shell("squeue -h -j " + stitch_job + " -o %r 2>/dev/null")
                   .out.find("DependencyNeverSatisfied") != std::string::npos &&
               !InQueue(array_job);
      },
      120);
  REQUIRE_MESSAGE(stuck, Shell("squeue").out);
  REQUIRE(std::filesystem::exists(once));

  RunResult resume = Framemill(dir, "slurm resume job.json");
  REQUIRE_MESSAGE(resume.exit_code == 0, resume.err);
  std::istringstream new_ids(resume.out);
  std::string array2, stitch2;
  new_ids >> array2 >> stitch2;
  REQUIRE_FALSE(stitch2.empty());
  CHECK(array2 != array_job);
  CHECK(resume.err.find("part(s) 2 of") != std::string::npos);
  const bool finished = WaitUntil(
      [&] { return !InQueue(array2) && !InQueue(stitch2) && !InQueue(stitch_job); }, 180);
  REQUIRE_MESSAGE(finished, Shell("squeue").out);

  const std::string logs = dir + "/job.json.slurm";
  // Only part 2 ran again: parts 1 and 3 kept the segments their first tasks made.
  CHECK(std::filesystem::exists(logs + "/slurm-" + array2 + "_2.out"));
  CHECK_FALSE(std::filesystem::exists(logs + "/slurm-" + array2 + "_1.out"));
  CHECK_FALSE(std::filesystem::exists(logs + "/slurm-" + array2 + "_3.out"));
  const std::string record = ReadText(logs + "/slurm.json");
  CHECK(record.find("\"stitch_job\": \"" + stitch_job + "\"") != std::string::npos);  // history
  CHECK(record.find("\"array_job\": \"" + array2 + "\"") != std::string::npos);
  INFO(ReadText(logs + "/slurm-" + stitch2 + "-stitch.out"));
  REQUIRE(std::filesystem::exists(dir + "/out.mp4"));
  const std::vector<uint64_t> a =
      FrameHashes(dir + "/whole.mp4", kPartsClipWidth, kPartsClipHeight);
  const std::vector<uint64_t> b = FrameHashes(dir + "/out.mp4", kPartsClipWidth, kPartsClipHeight);
  CHECK(a.size() == static_cast<size_t>(kPartsClipFrames));
  CHECK(a == b);

  // Finished and stitched: nothing left to resume.
  RunResult again = Framemill(dir, "slurm resume job.json");
  CHECK(again.exit_code != 0);
  CHECK(again.err.find("nothing to resume") != std::string::npos);
}

TEST_CASE("slurm: the service resumes once a job whose part failed, and files it in done/") {
  UseLocalSlurm();
  Service s = MakeService("slurm_service_resume", {{"backend", "slurm"},
                                                   {"slurm_parts", 2},
                                                   {"slurm_poll_s", 0.2},
                                                   {"slurm_options", {"--time=10"}}});
  const std::string clip = MakePartsClip(s.dir);
  const std::string model = ModelCopy("identity", s.dir);
  // Part 1 (frames 0..63) loses its worker once at frame 40; one attempt per chunk fails it.
  BackgroundJob serve =
      Serve(s, {{"FRAMEMILL_TEST_FAULT", "exit:3@40,once=" + s.dir + "/exit.once"}});
  KillOnExit guard{serve};
  Drop(s, "j1",
       nlohmann::json{{"input", clip},
                      {"output", s.dir + "/out.mp4"},
                      {"model", model},
                      {"workers", 1},
                      {"max_attempts", 1},
                      {"chunk_frames", 4},
                      {"segment_seconds", 1.0}}
           .dump());
  const std::string result = s.spool + "/done/j1/result.json";
  const bool done = WaitUntil([&] { return std::filesystem::exists(result); }, 180);
  const std::string log = ReadText(s.dir + "/serve.stderr");
  INFO(log);
  REQUIRE(done);
  CHECK(std::filesystem::exists(s.dir + "/exit.once"));
  CHECK(log.find("resubmitted part(s)") != std::string::npos);
  CHECK(ReadJson(result)["status"] == "done");
  CHECK(CountFrames(s.dir + "/out.mp4") == kPartsClipFrames);
  const nlohmann::json record = ReadJson(s.spool + "/done/j1/job.json.slurm/slurm.json");
  CHECK(record["history"].size() == 1);
  CHECK(record["resumed_parts"] == nlohmann::json::array({1}));
}
