// `framemill slurm submit` on a one-machine Slurm cluster (scripts/slurm-local.sh): the stitched
// output equals a one-machine run's, frame for frame, with its audio; a part requeued in the
// middle of its work resumes from its done-log.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "fault_harness.h"
#include "harness.h"
#include "parts_harness.h"
#include "service_harness.h"
#include "users_harness.h"

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

// dir/clip.mp4 (MakePartsClip) and dir/whole.mp4, its one-machine run to compare with.
std::string ClipAndWholeRun(const std::string& dir) {
  const std::string clip = MakePartsClip(dir);
  WritePartsJob(dir, "whole", clip, dir + "/whole.mp4");
  RunResult whole = Framemill(dir, "run whole.json");
  REQUIRE_MESSAGE(whole.exit_code == 0, whole.err);
  return clip;
}

// The ids `framemill slurm submit` (or resume) printed, one a line: array job, stitch job.
std::pair<std::string, std::string> PrintedIds(const RunResult& r) {
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  std::istringstream ids(r.out);
  std::pair<std::string, std::string> both;
  ids >> both.first >> both.second;
  REQUIRE_FALSE(both.first.empty());
  REQUIRE_FALSE(both.second.empty());
  return both;
}

// Writes dir/job.json (`clip` into dir/out.mp4, `extra` added) and submits it as 3 parts with
// FRAMEMILL_TEST_FAULT=`fault` in the tasks' environment and the tests' worker, which has the
// faults, in their config (dir/faults.config.json); the ids printed.
std::pair<std::string, std::string> SubmitThreeParts(const std::string& dir,
                                                     const std::string& clip,
                                                     const nlohmann::json& extra,
                                                     const std::string& fault) {
  WritePartsJob(dir, "job", clip, dir + "/out.mp4", extra);
  std::ofstream(dir + "/faults.config.json") << WithFaultWorker().dump(2);
  return PrintedIds(Framemill(dir,
                              "--config faults.config.json slurm submit job.json --parts 3 -- "
                              "--time=10",
                              "FRAMEMILL_TEST_FAULT=" + fault));
}

// Submits 3 parts of ClipAndWholeRun's clip whose part 3 (segments 2 and 3, frames 64..119)
// hangs once at frame 100, after finishing segment 2, and waits until it hangs there. Returns
// the array and stitch job ids.
std::pair<std::string, std::string> SubmitWithPart3Hung(const std::string& dir,
                                                        const std::string& clip) {
  const std::string once = dir + "/hang.once";
  std::pair<std::string, std::string> ids =
      SubmitThreeParts(dir, clip, {{"hang_timeout_s", 120}}, "hang@100,once=" + once);
  const std::string part3 = dir + "/job.json.parts/part-3-of-3";
  const bool hung = WaitUntil(
      [&] {
        return FaultFired(once) &&
               ReadText(part3 + "/state.json").find("\"index\": 2") != std::string::npos;
      },
      120);
  REQUIRE_MESSAGE(hung, "part 3 did not reach its hang after segment 2");
  return ids;
}

// A service with backend slurm (2 parts a job, squeue asked every 0.2 s), `extra` added.
Service SlurmService(const std::string& name,
                     const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json config = {{"backend", "slurm"},
                           {"slurm_parts", 2},
                           {"slurm_poll_s", 0.2},
                           {"slurm_options", {"--time=10"}}};
  config.update(extra);
  return MakeService(name, config);
}

// Drops job j1: MakePartsClip through the identity model into s.dir/out.mp4 on one worker, in
// chunks of 4 frames and segments of a second, `extra` added.
void DropPartsJob(const Service& s, const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json job = {{"input", MakePartsClip(s.dir)},
                        {"output", s.dir + "/out.mp4"},
                        {"model", ModelCopy("identity", s.dir)},
                        {"workers", 1},
                        {"chunk_frames", 4},
                        {"segment_seconds", 1.0}};
  job.update(extra);
  Drop(s, "j1", job.dump());
}

// dir/out.mp4 equals dir/whole.mp4 frame for frame.
void CheckSameAsWholeRun(const std::string& dir) {
  REQUIRE(std::filesystem::exists(dir + "/out.mp4"));
  const std::vector<uint64_t> a =
      FrameHashes(dir + "/whole.mp4", kPartsClipWidth, kPartsClipHeight);
  const std::vector<uint64_t> b = FrameHashes(dir + "/out.mp4", kPartsClipWidth, kPartsClipHeight);
  CHECK(a.size() == static_cast<size_t>(kPartsClipFrames));
  CHECK(a == b);
}

}  // namespace

TEST_CASE("slurm: 3 parts and a stitch equal the one-machine run, and a requeued part resumes") {
  UseLocalSlurm();
  const std::string dir = ScratchDir("slurm_three");
  const std::string clip = ClipAndWholeRun(dir);

  std::string array_job, stitch_job;
  std::tie(array_job, stitch_job) = SubmitWithPart3Hung(dir, clip);
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
  CheckSameAsWholeRun(dir);
  CHECK_FALSE(FirstStream(Probe(dir + "/out.mp4"), "audio").is_null());
}

TEST_CASE("slurm: the service with backend slurm files a submitted job in done/ with its output") {
  UseLocalSlurm();
  Service s = SlurmService("slurm_service");
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  DropPartsJob(s);
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

TEST_CASE("slurm: a task cancelled mid-part is run again by resume, from its own done-log") {
  UseLocalSlurm();
  const std::string dir = ScratchDir("slurm_resume");
  const std::string clip = ClipAndWholeRun(dir);

  // Part 3 hangs after its first segment; then its task is cancelled, and the stitch's afterok
  // dependency can never be satisfied.
  std::string array_job, stitch_job;
  std::tie(array_job, stitch_job) = SubmitWithPart3Hung(dir, clip);

  // While the array's tasks are queued or running, resume refuses and names them.
  RunResult early = Framemill(dir, "slurm resume job.json");
  CHECK(early.exit_code != 0);
  CHECK(early.err.find("still has tasks queued or running") != std::string::npos);

  RunResult cancel = Shell("scancel " + array_job + "_3");
  REQUIRE_MESSAGE(cancel.exit_code == 0, cancel.err);
  const bool stuck = WaitUntil(
      [&] {
        return Shell("squeue -h -j " + stitch_job + " -o %r 2>/dev/null")
                       .out.find("DependencyNeverSatisfied") != std::string::npos &&
               !InQueue(array_job);
      },
      120);
  REQUIRE_MESSAGE(stuck, Shell("squeue").out);
  // The status names the stuck part, the stitch's reason, and the command that mends them.
  RunResult shown = Framemill(dir, "slurm status job.json");
  INFO(shown.out);
  CHECK(shown.out.find("part 3/3 is neither done nor queued") != std::string::npos);
  CHECK(shown.out.find("DependencyNeverSatisfied") != std::string::npos);
  CHECK(shown.out.find("`framemill slurm resume job.json`") != std::string::npos);
  const nlohmann::json stuck_json =
      nlohmann::json::parse(Framemill(dir, "slurm status job.json --json").out);
  CHECK(stuck_json["mend"] == "framemill slurm resume job.json");
  CHECK(stuck_json["stitched"] == false);

  RunResult resume = Framemill(dir, "slurm resume job.json");
  std::string array2, stitch2;
  std::tie(array2, stitch2) = PrintedIds(resume);
  CHECK(array2 != array_job);
  CHECK(resume.err.find("part(s) 3 of") != std::string::npos);
  const bool finished =
      WaitUntil([&] { return !InQueue(array2) && !InQueue(stitch2) && !InQueue(stitch_job); }, 180);
  REQUIRE_MESSAGE(finished, Shell("squeue").out);

  const std::string logs = dir + "/job.json.slurm";
  // Only part 3 ran again, and it kept the segment it had finished before it was cancelled.
  const std::string part3_log = ReadText(logs + "/slurm-" + array2 + "_3.out");
  INFO(part3_log);
  CHECK(part3_log.find("resuming: 1 of 2 segments already finished") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(logs + "/slurm-" + array2 + "_1.out"));
  CHECK_FALSE(std::filesystem::exists(logs + "/slurm-" + array2 + "_2.out"));
  const std::string record = ReadText(logs + "/slurm.json");
  CHECK(record.find("\"stitch_job\": \"" + stitch_job + "\"") != std::string::npos);  // history
  CHECK(record.find("\"array_job\": \"" + array2 + "\"") != std::string::npos);
  INFO(ReadText(logs + "/slurm-" + stitch2 + "-stitch.out"));
  CheckSameAsWholeRun(dir);

  // Stitched: `status --json` is still one JSON document (a script polling it reads the end).
  const nlohmann::json done = nlohmann::json::parse(Framemill(dir, "slurm status job.json --json").out);
  CHECK(done["stitched"] == true);
  CHECK(done["output_exists"] == true);

  // Finished and stitched: nothing left to resume.
  RunResult again = Framemill(dir, "slurm resume job.json");
  CHECK(again.exit_code != 0);
  CHECK(again.err.find("nothing to resume") != std::string::npos);
}

TEST_CASE("slurm: the service resumes once a job whose part failed, and files it in done/") {
  UseLocalSlurm();
  Service s = SlurmService("slurm_service_resume", WithFaultWorker());
  // Part 1 (frames 0..63) loses its worker once at frame 40; one attempt per chunk fails it.
  BackgroundJob serve =
      Serve(s, {{"FRAMEMILL_TEST_FAULT", "exit:3@40,once=" + s.dir + "/exit.once"}});
  KillOnExit guard{serve};
  DropPartsJob(s, {{"max_attempts", 1}});
  const std::string result = s.spool + "/done/j1/result.json";
  const bool done = WaitUntil([&] { return std::filesystem::exists(result); }, 180);
  const std::string log = ReadText(s.dir + "/serve.stderr");
  INFO(log);
  REQUIRE(done);
  CHECK(FaultFired(s.dir + "/exit.once"));
  CHECK(log.find("resubmitted part(s)") != std::string::npos);
  CHECK(ReadJson(result)["status"] == "done");
  CHECK(CountFrames(s.dir + "/out.mp4") == kPartsClipFrames);
  const nlohmann::json record = ReadJson(s.spool + "/done/j1/job.json.slurm/slurm.json");
  CHECK(record["history"].size() == 1);
  CHECK(record["resumed_parts"] == nlohmann::json::array({1}));
}

// The window of the issue: a part opens the job's files when its task starts, maybe hours after
// the service checked them. User B submits a job on his own clip; while the parts wait in the
// queue (held here), B swaps the clip's folder for a link to A's folder, where a clip of the same
// name is closed to B alone by an ACL entry. The parts check the file they open against B's rights
// (`--submitter`): refused, and nothing of A's reaches B's output.
TEST_CASE(
    "slurm: a part opens the job's files with its submitter's rights, a folder swapped while "
    "it was queued is refused") {
  UseLocalSlurm();
  RequireMultiUser();
  Service s = SlurmService("slurm_submitter", {{"slurm_options", {"--time=10", "--hold"}}});
  OwnedDir(s.spool, 0, 0755);
  OwnedDir(s.spool + "/incoming", 0, 01777);
  OwnedDir(s.spool + "/tmp", 0, 01733);
  const std::string a = OwnedDir(s.dir + "/a", kUserA, 0755);
  const std::string b = OwnedDir(s.dir + "/b", kUserB, 0755);
  const std::string clip = MakePartsClip(OwnedDir(b + "/in", kUserB, 0755));
  const std::string model = ModelCopy("identity", b);
  const std::string secret = a + "/" + std::filesystem::path(clip).filename().string();
  std::filesystem::copy_file(clip, secret);
  if (!DenyReadTo(secret, kUserB)) {
    SkipTest("this file system keeps no POSIX ACLs (" + s.dir + ")");
  }
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return std::filesystem::exists(s.spool + "/requests"); }, 20));
  RunResult submitted =
      Cli(s,
          "submit " + ShellQuote(clip) + " --model " + ShellQuote(model) + " --output " +
              ShellQuote(b + "/out.mp4") + " workers=1 chunk_frames=4 segment_seconds=1.0",
          As(kUserB));
  REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  const std::string id = Trim(submitted.out.substr(0, submitted.out.find('\n')));
  const std::string logs = s.spool + "/active/" + id + "/job.json.slurm";
  REQUIRE_MESSAGE(WaitUntil([&] { return std::filesystem::exists(logs + "/slurm.json"); }, 60),
                  ReadText(s.dir + "/serve.stderr"));
  CHECK(ReadJson(logs + "/slurm.json")["submitter"] == "4343:4343");
  // B swaps his folder while the parts wait; then every held task is let go, resumed ones too.
  RunResult swap = Shell(As(kUserB) + " sh -c " +
                         ShellQuote("mv " + ShellQuote(b + "/in") + " " + ShellQuote(b + "/old") +
                                    " && ln -s " + ShellQuote(a) + " " + ShellQuote(b + "/in")));
  REQUIRE_MESSAGE(swap.exit_code == 0, swap.err);
  const std::string release =
      "squeue -h -t PD -o '%F %r' | awk '$2==\"JobHeldUser\"{print $1}' | sort -u | "
      "xargs -r -n1 scontrol release";
  const std::string result = s.spool + "/failed/" + id + "/result.json";
  const bool filed = WaitUntil(
      [&] {
        (void)Shell(release);
        return std::filesystem::exists(result) || std::filesystem::exists(s.spool + "/done/" + id);
      },
      180);
  INFO(ReadText(s.dir + "/serve.stderr"));
  REQUIRE(filed);
  CHECK(std::filesystem::exists(result));
  CHECK_FALSE(std::filesystem::exists(b + "/out.mp4"));
  // The parts' logs say why (the job is filed: its folder moved to failed/).
  std::string part_logs;
  const std::string filed_logs = s.spool + "/failed/" + id + "/job.json.slurm";
  if (std::filesystem::is_directory(filed_logs)) {
    for (const auto& e : std::filesystem::directory_iterator(filed_logs)) {
      part_logs += ReadText(e.path().string());
    }
  }
  INFO(part_logs);
  CHECK(part_logs.find("input: the submitter, uid 4343, may not read " + secret) !=
        std::string::npos);
}
