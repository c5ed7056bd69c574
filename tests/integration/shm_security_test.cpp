// Shared memory under attack: a worker that scribbles over everything it can reach, another
// local user trying to read a running job's frames, and files planted in /dev/shm to block jobs.
// Each job's output is checked frame by frame.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <cstdlib>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

#include "common/clock.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "fault_harness.h"
#include "harness.h"
#include "supervisor/workers/worker_pool.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr int kW = 320, kH = 240;
constexpr int kOtherUid = 4242;

nlohmann::json IndexJob(const std::string& dir, int frames, const std::string& output_name) {
  const std::string input = dir + "/indexed-" + std::to_string(frames) + ".mp4";
  if (!fs::exists(input)) MakeIndexVideo(input, frames, kW, kH, 25, 0);
  return {{"input", input},
          {"output", dir + "/" + output_name},
          {"model", ModelCopy("identity", dir)},
          {"workers", 2},
          {"chunk_frames", 32},
          {"device", TestDevice()},
          {"overwrite", true}};
}

// `command` run as uid/gid kOtherUid with no groups; its exit code.
int AsOtherUser(const std::string& command) {
  return Shell("setpriv --reuid=" + std::to_string(kOtherUid) + " --regid=" +
               std::to_string(kOtherUid) + " --clear-groups " + command + " 2>/dev/null")
      .exit_code;
}

void NeedRootAndSetpriv() {
  if (::geteuid() != 0) SkipTest("needs root, to act as another user with setpriv");
  if (Shell("command -v setpriv").exit_code != 0) SkipTest("setpriv (util-linux) is not installed");
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

}  // namespace

TEST_CASE(
    "shm security: a worker that scribbles over its whole control block and the arena header is "
    "killed and replaced, and the job is frame-exact") {
  const std::string dir = ScratchDir("shm_scribble");
  const int kFrames = 1000;
  nlohmann::json job = IndexJob(dir, kFrames, "out.mp4");
  BackgroundJob bg =
      StartJob(dir, job, {{"FRAMEMILL_TEST_FAULT", "scribble@517,once=" + dir + "/scribbled"}},
               WithFaultWorker());
  KillOnExit guard{bg};
  RunResult r = WaitJob(bg);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);              // the supervisor neither crashed nor gave up
  CHECK(FaultFired(dir + "/scribbled"));  // the fault did fire
  CHECK(r.err.find("protocol violation") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);

  std::vector<nlohmann::json> timeline = ReadTimeline(dir + "/out.mp4");
  auto kill = std::find_if(timeline.begin(), timeline.end(), [](const nlohmann::json& row) {
    return row["event"] == "kill" &&
           row.value("reason", "").find("protocol violation") != std::string::npos;
  });
  REQUIRE(kill != timeline.end());
  // Replaced: a worker started after the kill, and the killed one's exit was seen.
  CHECK(std::any_of(kill, timeline.end(), [](const auto& row) { return row["event"] == "start"; }));
  CHECK(std::any_of(kill, timeline.end(), [&](const auto& row) {
    return row["event"] == "exit" && row["worker"] == (*kill)["worker"] &&
           row["gen"] == (*kill)["gen"];
  }));
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(dir).empty());
}

TEST_CASE("shm security: another local user cannot read or enter a running job's shared memory") {
  NeedRootAndSetpriv();
  const std::string dir = ScratchDir("shm_private");
  nlohmann::json job = IndexJob(dir, 1500, "out.mp4");
  job["batch"] = 2;  // slow enough to look at it while it runs
  BackgroundJob bg = StartJob(dir, job);
  KillOnExit guard{bg};
  std::vector<std::string> objects;
  for (int i = 0; i < 800 && objects.size() < 2; ++i) {  // a control block and the arena
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    objects = SharedMemoryObjectsOf(bg.pid);
  }
  REQUIRE(objects.size() >= 2);
  const std::string shm_dir = objects[0].substr(0, objects[0].rfind('/'));
  CHECK(shm_dir.find(std::to_string(bg.pid)) == std::string::npos);  // nothing guessable
  CHECK(ModeOf(shm_dir) == 0700);
  int refused = 0;
  for (const std::string& object : objects) {
    INFO(object);
    CHECK(ModeOf(object) == 0600);
    // The service itself can read it (the file is there: the refusals below mean something) ...
    REQUIRE(Shell("cat " + object + " > /dev/null").exit_code == 0);
    // ... another user can read it neither with cat nor with dd.
    CHECK(AsOtherUser("cat " + object) != 0);
    CHECK(AsOtherUser("dd if=" + object + " of=/dev/null count=1") != 0);
    ++refused;
  }
  CHECK(AsOtherUser("ls " + shm_dir) != 0);
  CHECK(AsOtherUser("touch " + shm_dir + "/planted") != 0);
  CHECK_FALSE(fs::exists(shm_dir + "/planted"));
  MESSAGE("refused another user on " << refused << " objects and the directory");
  RunResult r = WaitJob(bg);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), 1500) == 0);
  CHECK_FALSE(fs::exists(shm_dir));
}

TEST_CASE("shm security: files planted in /dev/shm by another user do not block or touch a job") {
  NeedRootAndSetpriv();
  const std::string dir = ScratchDir("shm_planted");
  // The victim a planted symlink points at: must come out unchanged.
  const std::string victim = dir + "/victim.txt";
  std::ofstream(victim) << "precious";
  // What blocked jobs before: the flat names of the next supervisors' objects, pre-created for
  // the next 100 pids (and symlinks to the victim); and directories of the new shape, as
  // another user would pre-create them hoping that mkdtemp picks one.
  std::vector<std::string> planted;
  int next_pid = 0;
  std::ifstream("/proc/sys/kernel/ns_last_pid") >> next_pid;
  for (int pid = next_pid; pid < next_pid + 100; ++pid) {
    for (int n = 0; n < 4; ++n) {
      std::string base = "/dev/shm/framemill." + std::to_string(pid) + "." + std::to_string(n);
      std::ofstream(base + ".ctl") << "planted";
      REQUIRE(::chown((base + ".ctl").c_str(), kOtherUid, kOtherUid) == 0);
      (void)!::symlink(victim.c_str(), (base + ".arena").c_str());
      planted.push_back(base + ".ctl");
      planted.push_back(base + ".arena");
    }
  }
  std::mt19937 rng(std::random_device{}());
  const char* alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (int i = 0; i < 100; ++i) {
    std::string name = "/dev/shm/framemill-";
    for (int c = 0; c < 6; ++c) name += alphabet[std::uniform_int_distribution<>(0, 61)(rng)];
    if (::mkdir(name.c_str(), 0777) != 0) continue;
    ::chmod(name.c_str(), 0777);
    REQUIRE(::chown(name.c_str(), kOtherUid, kOtherUid) == 0);
    planted.push_back(name);
  }
  RunResult r = RunJob(dir, IndexJob(dir, 300, "out.mp4"));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), 300) == 0);
  // Nothing planted was followed or written, and no directory of the other user removed. (The
  // flat names are not counted: until every framemill on this machine has the private layout,
  // an older supervisor's clean-up removes them by their dead pid, which proves nothing here.)
  int intact = 0, dirs = 0;
  for (const std::string& p : planted) {
    if (p.find("/framemill-") == std::string::npos) continue;
    ++dirs;
    intact += fs::is_directory(fs::symlink_status(p)) ? 1 : 0;
  }
  CHECK(dirs > 0);
  CHECK(intact == dirs);
  std::string content;
  std::getline(std::ifstream(victim), content);
  CHECK(content == "precious");
  MESSAGE("planted " << planted.size() << " names; the job ran past all of them");
  for (const std::string& p : planted) {
    if (fs::is_directory(fs::symlink_status(p))) {
      ::rmdir(p.c_str());
    } else {
      ::unlink(p.c_str());
    }
  }
}

namespace {

// A job run by framemill-hostile-worker in `mode` (see hostile_worker.cpp), at most 120 s.
RunResult RunHostile(const std::string& dir, const std::string& mode, int frames) {
  nlohmann::json job = IndexJob(dir, frames, "out-" + mode + ".mp4");
  job["color_conversion"] = "accurate";  // rgb24 in the arena: the stand-in copies it through
  job["device"] = "cpu";
  BackgroundJob bg = StartJob(dir, job, {{"FRAMEMILL_HOSTILE", mode}},
                              {{"worker_binary", FRAMEMILL_HOSTILE_WORKER_BIN}}, mode);
  KillOnExit guard{bg};
  return WaitJob(bg, 120);
}

}  // namespace

TEST_CASE(
    "shm security: a worker that lies in its results, rings, state, heartbeat or probe is killed "
    "for it, and the job fails cleanly or stays frame-exact") {
  const std::string dir = ScratchDir("shm_hostile");
  // Each lie, and words the supervisor's log must give for it.
  const std::vector<std::pair<std::string, std::string>> lies = {
      {"foreign-chunk", "which the worker does not hold"},
      {"wrong-slot", "not its slot"},
      {"frames", "frames done of"},
      {"message", "unterminated message"},
      {"result-tail", "impossible tail index in the result ring"},
      {"request-head", "impossible head index in the request ring"},
      {"state", "worker state 77 is no state"},
      {"heartbeat", "ahead of the clock"},
      {"probe", "is outside 1.."}};
  for (const auto& [mode, words] : lies) {
    INFO("mode " << mode);
    RunResult r = RunHostile(dir, mode, 300);  // 10 chunks: requests go on after a lie
    INFO("stderr: " << r.err);
    CHECK(r.err.find("protocol violation: ") != std::string::npos);
    CHECK(r.err.find(words) != std::string::npos);
    // Failed cleanly (not crashed, not hung: -1, not killed by a signal), or, where the liar's
    // replacements got every chunk through before lying, finished with every frame in place.
    const std::string out = dir + "/out-" + mode + ".mp4";
    REQUIRE((r.exit_code == 0 || r.exit_code == 1));
    if (r.exit_code == 0) {
      CHECK(OutOfPlace(FrameIndices(out, kW, kH), 300) == 0);
    } else {
      CHECK_FALSE(fs::exists(out));
    }
  }
  MESSAGE(lies.size() << " kinds of lie, each caught");
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(dir).empty());
}

TEST_CASE(
    "shm security: a worker that floods or closes its wake-up socket neither blocks nor misleads "
    "the supervisor") {
  const std::string dir = ScratchDir("shm_socket");
  for (const std::string mode : {"flood", "closed-fd"}) {
    INFO("mode " << mode);
    RunResult r = RunHostile(dir, mode, 300);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("protocol violation") == std::string::npos);
    CHECK(OutOfPlace(FrameIndices(dir + "/out-" + mode + ".mp4", kW, kH), 300) == 0);
  }
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(dir).empty());
}

namespace {

// What a sandboxed snoop (hostile_worker.cpp, mode "snoop") may try, and the pools around it.
struct SnoopRun {
  std::string log;  // the snoop's stderr
  std::vector<std::string> targets;
};

framemill::ArenaGeometry SmallArena() {
  framemill::ArenaGeometry shape;
  shape.chunk_frames = 2;
  shape.in_width = shape.out_width = 64;
  shape.in_height = shape.out_height = 64;
  shape.in_format = shape.out_format = framemill::FrameFormat::kRgb24;
  framemill::ArenaDemand demand;
  demand.workers = 1;
  demand.encoders = 1;
  demand.chunks_per_segment = 1;
  demand.chunks = 4;
  demand.arena_mb = 64;
  framemill::Result<framemill::ArenaGeometry> g = framemill::SizeArena(shape, demand);
  REQUIRE(g.ok());
  return *g;
}

// Hands worker k of `pool` a warm-up request naming `arena` (linked into its scope by Send).
void SendArena(framemill::WorkerPool& pool, int k, const framemill::SharedMemory& arena,
               const framemill::ArenaGeometry& g) {
  framemill::ChunkRequest rq{};
  rq.kind = framemill::ChunkRequest::kWarmup;
  rq.batch = 1;
  rq.arena = g;
  framemill::CopyString(rq.arena_name, arena.name());
  REQUIRE(pool.Send(k, rq) == framemill::PushResult::kPushed);
}

// In one supervisor: a victim pool (another job: its worker's control block and its arena, by
// the arena's own name and by its name in the victim worker's scope) and the snoop's own pool
// (a sibling worker beside it, and its own arena). The snoop runs in `sandbox`, with `env` set
// while it starts, and tries them all.
SnoopRun RunSnoop(const std::string& dir, framemill::WorkerSandbox sandbox, const Env& env) {
  using namespace framemill;
  WorkerOptions o;
  o.worker_binary = FRAMEMILL_HOSTILE_WORKER_BIN;
  o.model = dir + "/model.pt";
  std::ofstream(o.model) << "not a model";
  o.log_dir = dir;
  o.launch.log_level = "info";
  o.launch.sandbox = sandbox;
  const ArenaGeometry g = SmallArena();

  Result<std::unique_ptr<WorkerPool>> victim = WorkerPool::Create(o, 1);
  REQUIRE(victim.ok());
  REQUIRE((*victim)->Spawn(0).ok());
  Result<SharedMemory> victim_arena = CreateFrameArena(g);
  REQUIRE(victim_arena.ok());
  SendArena(**victim, 0, *victim_arena, g);

  Result<std::unique_ptr<WorkerPool>> mine = WorkerPool::Create(o, 2);
  REQUIRE(mine.ok());
  REQUIRE((*mine)->Spawn(1).ok());  // the sibling, in the same job
  Result<SharedMemory> own_arena = CreateFrameArena(g);
  REQUIRE(own_arena.ok());

  SnoopRun run;
  const std::string victim_ctl = (*victim)->ControlPath(0);
  const std::string victim_scope = victim_ctl.substr(0, victim_ctl.rfind('/'));
  const std::string arena_base = victim_arena->name().substr(victim_arena->name().rfind('/'));
  run.targets = {victim_ctl, victim_arena->name(), victim_scope + arena_base,
                 (*mine)->ControlPath(1)};
  std::string list;
  for (const std::string& t : run.targets) list += (list.empty() ? "" : ":") + t;
  Env all = env;
  all.push_back({"FRAMEMILL_HOSTILE", "snoop"});
  all.push_back({"FRAMEMILL_HOSTILE_SNOOP", list});
  for (const auto& [k, v] : all) ::setenv(k.c_str(), v.c_str(), 1);
  Status spawned = (*mine)->Spawn(0);
  for (const auto& [k, v] : all) ::unsetenv(k.c_str());
  REQUIRE(spawned.ok());
  SendArena(**mine, 0, *own_arena, g);
  const uint64_t generation = (*mine)->Generation(0);
  bool exited = false;
  for (const uint64_t deadline = MonotonicMs() + 20000; !exited && MonotonicMs() < deadline;) {
    for (const WorkerExit& e : (*mine)->ReapExited()) exited = exited || e.channel == 0;
    (*mine)->WaitForWake(20);
  }
  CHECK(exited);
  run.log = ReadFile(dir + "/worker-0-" + std::to_string(generation) + ".log");
  (*mine)->StopAll(2000);
  (*victim)->StopAll(2000);
  return run;
}

int LandlockAbi() {
  long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1u /* VERSION */);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

}  // namespace

TEST_CASE(
    "shm security: a sandboxed worker can open its own control block and arena, and not another "
    "job's arena or control block, nor its sibling's") {
  const bool landlock = LandlockAbi() >= 1;
  const RunResult ns = Shell("unshare --user --mount true");
  const bool mntns = ns.exit_code == 0;
  if (!landlock && !mntns) {
    SkipTest("neither Landlock nor user and mount namespaces here (" + ns.err +
             "): no sandbox confines a worker's files");
  }
  const std::string dir = ScratchDir("shm_snoop");
  // Each layer that confines a worker's files on its own (a CUDA worker has the private root
  // alone, worker/sandbox/sandbox.h), and with nothing ("off"): there the snoop opens them all, so
  // the refusals below are the sandbox's, not a wrong path.
  struct Variant {
    std::string name;
    framemill::WorkerSandbox mode;
    Env env;
    bool confined;
  };
  std::vector<Variant> variants = {{"off", framemill::WorkerSandbox::kOff, {}, false}};
  if (landlock) {
    variants.push_back({"landlock alone", framemill::WorkerSandbox::kAuto,
                        {{"FRAMEMILL_SANDBOX_LAYERS", "netns,rlimits,landlock,seccomp"}}, true});
  } else {
    MESSAGE("no Landlock here: the Landlock variant is left out");
  }
  if (mntns) {
    variants.push_back({"private root alone", framemill::WorkerSandbox::kAuto,
                        {{"FRAMEMILL_SANDBOX_LAYERS", "netns,mntns,rlimits,seccomp"}}, true});
  } else {
    MESSAGE("no user and mount namespaces here: the private-root variant is left out");
  }
  if (landlock) {
    variants.push_back({"required", framemill::WorkerSandbox::kRequired, {}, true});
  }
  for (const Variant& v : variants) {
    INFO("sandbox: " << v.name);
    SnoopRun run = RunSnoop(dir, v.mode, v.env);
    INFO("snoop's log:\n" << run.log);
    REQUIRE(run.log.find("snoop done") != std::string::npos);
    if (v.confined && v.mode == framemill::WorkerSandbox::kAuto) {
      // The layer meant is in place ("mntns" without "no mntns", or Landlock's file rules).
      CHECK(run.log.find(v.name == "landlock alone" ? "landlock abi" : ", mntns") !=
            std::string::npos);
    }
    // Its own objects, through its own scope.
    CHECK(run.log.find("snoop opened own-control") != std::string::npos);
    CHECK(run.log.find("snoop opened own-arena") != std::string::npos);
    for (const std::string& target : run.targets) {
      INFO("target " << target);
      if (v.confined) {
        CHECK(run.log.find("snoop refused foreign " + target + ": ") != std::string::npos);
        CHECK(run.log.find("snoop opened foreign " + target) == std::string::npos);
      } else {
        CHECK(run.log.find("snoop opened foreign " + target) != std::string::npos);
      }
    }
    // Nor can it list the supervisor's directory to find names: denied (Landlock), or in the
    // private root a directory that holds its own scope alone. Unconfined it sees them all.
    if (v.confined) {
      CHECK((run.log.find("snoop refused list ") != std::string::npos ||
             run.log.find(": 1 entries") != std::string::npos));
      // Refused by the sandbox: not there (private root) or denied (Landlock).
      int refusals = 0;
      for (const char* why : {"No such file or directory", "Permission denied"}) {
        for (size_t at = run.log.find(why); at != std::string::npos;
             at = run.log.find(why, at + 1)) {
          ++refusals;
        }
      }
      CHECK(refusals >= static_cast<int>(run.targets.size()));
    } else {
      CHECK(run.log.find("snoop opened list ") != std::string::npos);
      CHECK(run.log.find(": 1 entries") == std::string::npos);
    }
  }
  CHECK(SharedMemoryObjectsOf(::getpid()).empty());  // the scopes went with their workers
}
