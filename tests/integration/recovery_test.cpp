// Workers that cannot take a job down: memory-threshold recycling, crashes, SIGKILL storms,
// hangs, poison chunks, and a supervisor killed mid-job. Every test checks the output frame by
// frame and that nothing is left behind.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <utility>
#include <unistd.h>

#include "fault_harness.h"
#include "harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr int kW = 320, kH = 240, kFps = 25;

// An index video shared by the tests of one binary run (made once, read-only afterwards).
std::string IndexVideo(int frames) {
  std::string dir = std::string(FRAMEMILL_TEST_SCRATCH) + "/videos";
  fs::create_directories(dir);
  std::string path = dir + "/indexed-" + std::to_string(frames) + ".mp4";
  if (!fs::exists(path)) {
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + ".mp4";
    MakeIndexVideo(tmp, frames, kW, kH, kFps, /*tone_hz=*/330);
    fs::rename(tmp, path);
  }
  return path;
}

nlohmann::json Job(const std::string& dir, const std::string& input, const std::string& model,
                   const std::string& output_name) {
  return {{"input", input},
          {"output", dir + "/" + output_name},
          {"model", ModelCopy(model, dir)},
          {"workers", 2},
          {"chunk_frames", 32},
          {"segment_seconds", 20},
          {"device", TestDevice()},
          {"overwrite", true}};
}

int CountEvents(const std::vector<nlohmann::json>& timeline, const std::string& event) {
  return static_cast<int>(std::count_if(timeline.begin(), timeline.end(),
                                        [&](const auto& r) { return r["event"] == event; }));
}

void CheckNothingLeft(const std::string& dir) {
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(dir).empty());
}

}  // namespace

TEST_CASE("recovery: a leaking model is recycled by its memory limit and the output stays exact") {
  const std::string dir = ScratchDir("leak");
  // About 120 frames a worker's life on the CPU (3,000 frames made 17 recycles): 1,200 make 7 or
  // so, well above the 3 checked below.
  const int kFrames = 1200;
  nlohmann::json job = Job(dir, IndexVideo(kFrames), "leak", "out.mp4");
  // The leak keeps every input batch: 320x240 float RGB = 0.92 MB a frame, 29.5 MB a chunk.
  // The soft limit is a few chunks above a fresh worker; the hard limit far above the soft one.
  const bool cuda = TestDevice() != "cpu";
  const char* key = cuda ? "gpu_reserved_mb" : "rss_mb";
  const int soft = cuda ? 200 : 400, hard = cuda ? 500 : 800;
  job["recycle"] = {{key, soft}};
  job["kill"] = {{key, hard}};
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);

  std::vector<nlohmann::json> timeline = ReadTimeline(dir + "/out.mp4");
  CHECK(CountEvents(timeline, "recycle") >= 3);
  CHECK(CountEvents(timeline, "stop") >= 3);  // recycled workers leave cleanly
  CHECK(CountEvents(timeline, "kill") == 0);
  CHECK(CountEvents(timeline, "crash") == 0);
  double peak = 0;
  for (const auto& row : timeline) {
    peak = std::max(peak, row[cuda ? "gpu_reserved_mb" : "rss_mb"].get<double>());
  }
  INFO("peak " << key << " " << peak);
  CHECK(peak < hard);
  CHECK(peak > soft * 0.9 * 0.8);  // the leak really grew: the limit, not luck, recycled them
  CHECK(r.out.find("recycled") != std::string::npos);
  CheckNothingLeft(dir);
}

TEST_CASE(
    "recovery: max_chunks with warm standby: a standby where the limit comes, none at the end") {
  const std::string dir = ScratchDir("standby_end");
  // 19 chunks, one worker, 10 chunks a worker (no jitter): the first worker's standby loads while
  // it runs and takes over at its 10th chunk; the second runs the last 9 chunks and never reaches
  // its limit, so no standby is started for it (one started at its standby point would load a
  // model while the job's last chunk ran, for nothing).
  const int kFrames = 1000;
  nlohmann::json job = Job(dir, IndexVideo(kFrames), "identity", "out.mp4");
  job["workers"] = 1;
  job["chunk_frames"] = 53;  // 18 chunks of 53 and one of 46
  job["recycle"] = {{"max_chunks", 10}, {"jitter", 0.0}, {"warm_standby", true}};
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  std::vector<nlohmann::json> timeline = ReadTimeline(dir + "/out.mp4");
  CHECK(CountEvents(timeline, "start") == 2);
  CHECK(CountEvents(timeline, "recycle") == 1);
  CHECK(CountEvents(timeline, "crash") == 0);
  for (const auto& row : timeline) {
    if (row["event"] == "recycle") CHECK(row["reason"] == "ran 10 chunks (max_chunks 10)");
  }
  // Every worker started ran chunks: the standby took over, and nothing loaded for nothing.
  std::map<int, int64_t> frames_by_gen;
  for (const auto& row : timeline) {
    int64_t& f = frames_by_gen[row["gen"].get<int>()];
    f = std::max<int64_t>(f, row["frames"].get<int64_t>());
  }
  for (const auto& [gen, frames] : frames_by_gen) {
    INFO("gen " << gen);
    CHECK(frames > 0);
  }
  CheckNothingLeft(dir);
}

TEST_CASE("recovery: a worker that crashes mid-chunk is replaced and the output is unchanged") {
  const std::string dir = ScratchDir("crash");
  const int kFrames = 1000;
  const std::string input = IndexVideo(kFrames);
  RunResult ref = RunJob(dir, Job(dir, input, "identity", "reference.mp4"));
  REQUIRE(ref.exit_code == 0);

  nlohmann::json job = Job(dir, input, "identity", "out.mp4");
  RunResult r = WaitJob(StartJob(
      dir, job, {{"FRAMEMILL_TEST_FAULT", "crash@517,once=" + dir + "/crashed"}}, WithFaultWorker()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(FaultFired(dir + "/crashed"));
  CHECK(r.err.find("died") != std::string::npos);
  CHECK(r.out.find("crashed 1") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  CHECK(FrameHashes(dir + "/out.mp4", kW, kH) == FrameHashes(dir + "/reference.mp4", kW, kH));
  std::vector<nlohmann::json> timeline = ReadTimeline(dir + "/out.mp4");
  CHECK(CountEvents(timeline, "crash") == 1);
  CheckNothingLeft(dir);
}

TEST_CASE("recovery: a chunk held while the worker starts the next is sent again when it crashes") {
  // Chunks back to back (worker/batch/batch_runner.h): a worker reports a chunk only once the next
  // one's first batch is queued. FRAMEMILL_WORKER_OVERLAP_CHUNKS=always makes the worker hold
  // every result on the CPU too. One worker, 32-frame chunks: the crash at frame 544, the first
  // of chunk 17, finds chunk 16 done but held. The supervisor must send it again (and chunk 17),
  // and not chunk 18: the held chunk counts among the worker's chunks in flight.
  const std::string dir = ScratchDir("crash_held");
  const int kFrames = 1000;
  nlohmann::json job = Job(dir, IndexVideo(kFrames), "identity", "out.mp4");
  job["workers"] = 1;
  // On CUDA the held chunk's last download may really be running (a page-locked arena).
  job["page_lock_arena"] = "on";
  RunResult r = WaitJob(StartJob(dir, job,
                                 {{"FRAMEMILL_WORKER_OVERLAP_CHUNKS", "always"},
                                  {"FRAMEMILL_TEST_FAULT", "crash@544,once=" + dir + "/crashed"}},
                                 WithFaultWorker()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(FaultFired(dir + "/crashed"));
  CHECK(r.err.find("chunk 16 (frames 512-543) failed") != std::string::npos);
  CHECK(r.err.find("chunk 17 (frames 544-575) failed") != std::string::npos);
  CHECK(r.err.find("chunk 18 (") == std::string::npos);
  CHECK(r.out.find("chunks retried 2") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  CheckNothingLeft(dir);
}

namespace {

// The workers of a running job that have loaded their model and not ended, read from the job's
// live timeline (a line still being written is skipped).
std::set<int> ReadyWorkers(const std::string& output) {
  std::set<int> ready;
  std::ifstream in(output + ".timeline.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!row.is_object() || !row.contains("pid") || !row.contains("event")) continue;
    const int pid = row["pid"].get<int>();
    const std::string event = row["event"].get<std::string>();
    if (event == "ready" || event == "chunk") ready.insert(pid);
    if (event == "crash" || event == "exit" || event == "kill" || event == "stop") ready.erase(pid);
  }
  return ready;
}

}  // namespace

TEST_CASE("recovery: 20 SIGKILLs of random workers at random moments change nothing") {
  const std::string dir = ScratchDir("sigkill_storm");
  // Every kill hits a worker that has loaded its model, so at work or between chunks (a kill
  // while a worker loads is the start's business, tested by the crash tests): the job makes
  // progress only between kills, and it must not end first. Its pace is set, not the machine's:
  // every batch of 4 sleeps 60 ms (slowbatch), so each of the two workers works 22 s or more,
  // where the storm takes about 12 s (a fast 2-core machine ran the identity's 3,000 frames
  // through in 1.5 s between 13 kills). On a GPU, where a worker takes longer to load, twice the
  // frames.
  const int kFrames = TestDevice() == "cpu" ? 3000 : 6000;
  const std::string input = IndexVideo(kFrames);
  RunResult ref = RunJob(dir, Job(dir, input, "identity", "reference.mp4"));
  REQUIRE(ref.exit_code == 0);

  nlohmann::json job = Job(dir, input, "identity", "out.mp4");
  job["max_attempts"] = 100;  // one chunk may be hit by several kills in a row
  job["batch"] = 4;
  BackgroundJob bg = StartJob(dir, job, {{"FRAMEMILL_TEST_FAULT", "slowbatch:60"}},
                              WithFaultWorker());
  KillOnExit guard{bg};
  std::mt19937 rng(20261130);
  int kills = 0;
  std::set<int> victims;
  while (kills < 20) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<>(50, 300)(rng)));
    int status = 0;
    if (::waitpid(bg.pid, &status, WNOHANG) == bg.pid) {
      FAIL("the job ended after only " << kills << " kills: make the video longer");
    }
    const std::set<int> ready = ReadyWorkers(dir + "/out.mp4");
    std::vector<int> pids;
    // Not one already killed: until the supervisor reaps it and writes its crash, it still looks
    // ready, and a second SIGKILL to the dying process would count as a kill of its own.
    for (int pid : WorkerPids(dir)) {
      if (ready.count(pid) != 0 && victims.count(pid) == 0) pids.push_back(pid);
    }
    if (pids.empty()) continue;
    int victim = pids[std::uniform_int_distribution<size_t>(0, pids.size() - 1)(rng)];
    if (::kill(victim, SIGKILL) == 0) {
      ++kills;
      victims.insert(victim);
    }
  }
  RunResult r = WaitJob(bg, 600);  // the supervisor never blocks: it must finish
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(kills == 20);
  // Every kill was of a worker past its load: the timeline names 20 crashes of workers (by
  // channel and generation) that were ready, each with the pid that was killed.
  int ready_crashes = 0;
  std::set<int> crashed_pids;
  std::set<std::pair<int, int>> ready;
  for (const nlohmann::json& row : ReadTimeline(dir + "/out.mp4")) {
    const std::pair<int, int> worker{row["worker"].get<int>(), row["gen"].get<int>()};
    if (row["event"] == "ready") ready.insert(worker);
    if (row["event"] != "crash") continue;
    if (ready.count(worker) != 0) ++ready_crashes;
    crashed_pids.insert(row["pid"].get<int>());
  }
  CHECK(ready_crashes == 20);
  CHECK(crashed_pids == victims);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  CHECK(FrameHashes(dir + "/out.mp4", kW, kH) == FrameHashes(dir + "/reference.mp4", kW, kH));
  CheckNothingLeft(dir);
}

TEST_CASE("recovery: a worker that stops its heartbeat is killed after hang_timeout_s + grace") {
  const std::string dir = ScratchDir("hang");
  const int kFrames = 1000;
  nlohmann::json job = Job(dir, IndexVideo(kFrames), "identity", "out.mp4");
  const double kHangTimeout = 2.0, kGrace = 1.0;
  job["hang_timeout_s"] = kHangTimeout;
  job["kill"] = {{"grace_s", kGrace}};
  RunResult r = WaitJob(StartJob(
      dir, job, {{"FRAMEMILL_TEST_FAULT", "hang@300,once=" + dir + "/hung"}}, WithFaultWorker()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);

  std::vector<nlohmann::json> timeline = ReadTimeline(dir + "/out.mp4");
  auto kill = std::find_if(timeline.begin(), timeline.end(),
                           [](const auto& row) { return row["event"] == "kill"; });
  REQUIRE(kill != timeline.end());
  CHECK((*kill)["reason"].get<std::string>().find("no heartbeat") != std::string::npos);
  int worker = (*kill)["worker"], gen = (*kill)["gen"];
  double last_sign = 0, exit_t = -1;
  for (const auto& row : timeline) {
    if (row["worker"] != worker || row["gen"] != gen) continue;
    if (row["event"] == "exit")
      exit_t = row["t"];
    else if (row["event"] != "kill")
      last_sign = row["t"];
  }
  REQUIRE(exit_t > 0);
  // It ignores SIGTERM, so it dies by SIGKILL after the grace period, within timeout + grace of
  // its last sign of life (plus the supervisor's 50 ms polling and scheduling slack).
  CHECK(exit_t - (*kill)["t"].get<double>() >= kGrace - 0.1);
  CHECK(exit_t - last_sign <= kHangTimeout + kGrace + 1.5);
  CheckNothingLeft(dir);
}

TEST_CASE("recovery: a chunk that always crashes its worker fails the job with its frame range") {
  const std::string dir = ScratchDir("poison");
  const int kFrames = 1000;
  nlohmann::json job = Job(dir, IndexVideo(kFrames), "identity", "out.mp4");
  job["max_attempts"] = 3;
  RunResult r =
      WaitJob(StartJob(dir, job, {{"FRAMEMILL_TEST_FAULT", "crash@500"}}, WithFaultWorker()));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("worker_failed") != std::string::npos);
  CHECK(r.err.find("frames 480-511") != std::string::npos);  // chunk 15 holds frame 500
  CHECK(r.err.find("failed 3 times") != std::string::npos);
  CHECK(r.err.find("signal 6") != std::string::npos);  // the workers' exit status
  CHECK_FALSE(fs::exists(dir + "/out.mp4"));
  CHECK(PartialOutputs(dir) == 0);  // nor the live mux's partial output
  CheckNothingLeft(dir);

  // The next job runs as if nothing happened.
  RunResult next = RunJob(dir, Job(dir, IndexVideo(kFrames), "identity", "next.mp4"));
  INFO("stderr: " << next.err);
  CHECK(next.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/next.mp4", kW, kH), kFrames) == 0);
  CheckNothingLeft(dir);
}

TEST_CASE(
    "recovery: a supervisor killed mid-job leaves no workers, and the next one clears its "
    "shared memory") {
  const std::string dir = ScratchDir("stale");
  nlohmann::json job = Job(dir, IndexVideo(4000), "identity", "out.mp4");
  job["batch"] = 2;
  BackgroundJob bg = StartJob(dir, job);
  KillOnExit guard{bg};
  // Wait until it is in full swing: workers up and its shared memory in place.
  auto mine = [&] { return SharedMemoryObjectsOf(bg.pid); };  // the objects of this supervisor
  for (int i = 0; i < 400 && (WorkerPids(dir).size() < 2 || mine().size() < 2); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  REQUIRE(WorkerPids(dir).size() >= 1);
  std::vector<std::string> left = mine();
  REQUIRE(left.size() >= 2);  // control block and arena
  ::kill(bg.pid, SIGKILL);
  RunResult killed = WaitJob(bg, 10);
  CHECK(killed.exit_code == 128 + SIGKILL);

  // Its workers die with it (PR_SET_PDEATHSIG) ...
  for (int i = 0; i < 200 && !WorkerPids(dir).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  CHECK(WorkerPids(dir).empty());
  // ... but its shared memory stays until another supervisor starts.
  std::vector<std::string> stale = SharedMemoryObjects();
  for (const std::string& n : left) {
    CHECK(std::find(stale.begin(), stale.end(), n) != stale.end());
  }
  RunResult next = RunJob(dir, Job(dir, IndexVideo(1000), "identity", "next.mp4"));
  INFO("stderr: " << next.err);
  CHECK(next.exit_code == 0);
  CHECK(next.err.find("left by dead supervisors") != std::string::npos);
  CheckNothingLeft(dir);
}

TEST_CASE("recovery: workers get PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF from the config") {
  const std::string dir = ScratchDir("alloc_conf");
  // Long enough that a worker is there to be looked at: it is, from its start to the job's end.
  nlohmann::json job = Job(dir, IndexVideo(1000), "identity", "out.mp4");
  job["batch"] = 2;
  BackgroundJob bg = StartJob(dir, job, {}, {{"pytorch_alloc_conf", "expandable_segments:True"}});
  KillOnExit guard{bg};
  std::vector<int> pids;
  for (int i = 0; i < 400 && pids.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    pids = WorkerPids(dir);
  }
  REQUIRE_FALSE(pids.empty());
  std::ifstream in("/proc/" + std::to_string(pids.front()) + "/environ", std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(env.find(std::string("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") + '\0') !=
        std::string::npos);
  CHECK(env.find(std::string("PYTORCH_ALLOC_CONF=expandable_segments:True") + '\0') !=
        std::string::npos);
  RunResult r = WaitJob(bg, 300);
  CHECK(r.exit_code == 0);
}

TEST_CASE(
    "recovery: a worker binary that cannot be started for a moment delays the replacement, "
    "and the job finishes") {
  const std::string dir = ScratchDir("spawn_retry");
  const int kFrames = 2500;
  const std::string input = IndexVideo(kFrames);
  // A copy of the worker binary (the tests' build, for its crash) that the test can make
  // unexecutable, as an upgrade replacing it would for a moment.
  const std::string bin = dir + "/framemill-worker";
  fs::copy_file(FaultWorkerBinary(), bin, fs::copy_options::overwrite_existing);
  nlohmann::json job = Job(dir, input, "sharpen", "out.mp4");
  job["workers"] = 1;
  job["batch"] = 2;
  BackgroundJob bg =
      StartJob(dir, job, {{"FRAMEMILL_TEST_FAULT", "crash@1800,once=" + dir + "/crashed"}},
               {{"worker_binary", bin}});
  KillOnExit guard{bg};
  auto stderr_has = [&](const std::string& text) {
    std::ifstream in(bg.err_path);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    return all.find(text) != std::string::npos;
  };
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 6000 && !stderr_has(text); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return stderr_has(text);
  };
  // Once the first worker runs, its binary stops being executable; the crash at frame 1800
  // then needs a replacement that cannot start.
  REQUIRE(wait_for("ready on "));  // cpu or cuda:N
  fs::permissions(bin, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::remove);
  CHECK(wait_for("trying again"));
  fs::permissions(bin, fs::perms::owner_exec, fs::perm_options::add);
  RunResult r = WaitJob(bg);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(FaultFired(dir + "/crashed"));
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  CheckNothingLeft(dir);
}

namespace {

// Rows of `event` whose reason begins with `reason`.
int CountEventsWhy(const std::vector<nlohmann::json>& timeline, const std::string& event,
                   const std::string& reason) {
  return static_cast<int>(std::count_if(timeline.begin(), timeline.end(), [&](const auto& r) {
    return r["event"] == event && r.value("reason", "").rfind(reason, 0) == 0;
  }));
}

// A `compile` job of `input` (identity, two workers, batch 8) in dir/out.mp4 whose framemill-faults
// offers `stand_in` as its compiled engine the moment its first worker is ready, as a finished
// build would (supervisor/job/engine_beside.h). Every batch sleeps 50 ms (slowbatch), so each
// worker works 3 s or more on 1,000 frames: standbys on the stand-in load long before the end.
RunResult RunWithStandIn(const std::string& dir, const std::string& input,
                         const std::string& stand_in) {
  nlohmann::json job = Job(dir, input, "identity", "out.mp4");
  job["model_optimization"] = "compile";
  job["batch"] = 8;
  return WaitJob(StartJob(
      dir, job,
      {{"FRAMEMILL_TEST_FAULT", "slowbatch:50"}, {"FRAMEMILL_FAULT_ENGINE_STAND_IN", stand_in}},
      WithFaultWorker()));
}

}  // namespace

TEST_CASE(
    "recovery: the workers move to an engine offered mid-job, each at a chunk boundary, a bad one "
    "dropped") {
  // The stand-in is the identity model again, so the output must be every frame once, in place.
  const std::string dir = ScratchDir("engine_move");
  const int kFrames = 1000;
  const std::string input = IndexVideo(kFrames);
  const std::string engine = ModelPath("identity");
  RunResult r = RunWithStandIn(dir, input, engine);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("the workers move to the stand-in engine " + engine) != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  std::vector<nlohmann::json> timeline = ReadTimeline(dir + "/out.mp4");
  // Both first workers retired for the move, each replaced by its standby; nothing crashed.
  CHECK(CountEventsWhy(timeline, "recycle", "moved to the stand-in engine") == 2);
  CHECK(CountEventsWhy(timeline, "stop", "moved to the stand-in engine") == 2);
  CHECK(CountEvents(timeline, "start") == 4);
  CHECK(CountEvents(timeline, "crash") == 0);
  std::map<int, int64_t> frames_by_gen;  // every worker ran frames, before and after the move
  for (const auto& row : timeline) {
    int64_t& f = frames_by_gen[row["gen"].get<int>()];
    f = std::max<int64_t>(f, row["frames"].get<int64_t>());
  }
  CHECK(frames_by_gen.size() == 4);
  for (const auto& [gen, frames] : frames_by_gen) {
    INFO("gen " << gen);
    CHECK(frames > 0);
  }

  // An engine that does not scale the frame as the model does (x2 for the identity's x1) is
  // dropped when its first worker probes it; the job ends on its model, every frame in place.
  const std::string dropped_dir = ScratchDir("engine_dropped");
  const std::string x2 = ModelPath("upscale2x");
  RunResult d = RunWithStandIn(dropped_dir, input, x2);
  INFO("stderr: " << d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(d.err.find("the stand-in engine " + x2 + " dropped: it gives 640x480 for a 320x240 " +
                   "frame, not the model's scale") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dropped_dir + "/out.mp4", kW, kH), kFrames) == 0);
  std::vector<nlohmann::json> kept = ReadTimeline(dropped_dir + "/out.mp4");
  CHECK(CountEventsWhy(kept, "recycle", "moved to") == 0);
  CHECK(CountEvents(kept, "crash") == 0);

  // An engine no worker can load (here not a model at all) is dropped at the first worker that
  // dies on it, never counted against the job's start: both standbys die, the job goes on.
  const std::string broken_dir = ScratchDir("engine_broken");
  const std::string broken = broken_dir + "/broken.pt2";
  std::ofstream(broken) << "not a compiled engine";
  RunResult b = RunWithStandIn(broken_dir, input, broken);
  INFO("stderr: " << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(b.err.find("the stand-in engine " + broken + " dropped: worker ") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(broken_dir + "/out.mp4", kW, kH), kFrames) == 0);
  CHECK(CountEventsWhy(ReadTimeline(broken_dir + "/out.mp4"), "recycle", "moved to") == 0);
  CheckNothingLeft(dir);
}
