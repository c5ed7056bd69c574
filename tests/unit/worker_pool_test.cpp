// WorkerPool: starting, watching and stopping worker processes, on real processes. Stand-in
// programs (shell scripts written here) check the mechanism the pool owns: the arguments and
// descriptors a worker gets, how an exit or a signal is reported, the worker's last stderr
// lines, the generation count, the sandbox text read back from shared memory. One case runs
// the real framemill-worker from ready to a clean stop.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/shared_memory.h"
#include "common/shm_protocol.h"
#include "real_worker.h"
#include "supervisor/workers/worker_pool.h"

using namespace framemill;
namespace fs = std::filesystem;

namespace {

std::string TempDir(const std::string& name) {
  std::string dir = fs::temp_directory_path().string() + "/framemill-pool-" + name + "-" +
                    std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// An executable shell script at dir/name.
std::string Script(const std::string& dir, const std::string& name, const std::string& body) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body;
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

// Options for a stand-in worker: a model file that is any file (the pool only opens it).
WorkerOptions StandIn(const std::string& dir, const std::string& program) {
  WorkerOptions o;
  o.worker_binary = program;
  o.model = dir + "/model.pt";
  std::ofstream(o.model) << "not a model";
  o.log_dir = dir;
  o.launch.log_level = "info";
  return o;
}

// Reaps until channel k's worker has exited, or 20 s pass (then the check fails).
WorkerExit WaitForExit(WorkerPool& pool, int k) {
  uint64_t deadline = MonotonicMs() + 20000;
  while (MonotonicMs() < deadline) {
    for (WorkerExit& e : pool.ReapExited()) {
      if (e.channel == k) return e;
    }
    pool.WaitForWake(20);
  }
  FAIL("worker on channel " << k << " did not exit within 20 s");
  return {};
}

}  // namespace

TEST_CASE("worker pool: a worker's arguments name its channel, model descriptor and settings") {
  WorkerOptions o;
  o.model = "/models/x.pt";
  o.launch.device = *ParseDevice("cpu");
  o.launch.precision = Precision::kBf16;
  o.launch.optimization = ModelOptimization::kOff;
  o.launch.log_level = "debug";
  o.launch.sandbox = WorkerSandbox::kRequired;
  std::vector<std::string> a = WorkerArguments(o, 2, -1, "/dev/shm/d/c", 9);
  auto value = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == flag) return a[i + 1];
    }
    return std::string("(missing)");
  };
  CHECK(value("--control") == "/dev/shm/d/c");
  CHECK(value("--channel") == "2");
  CHECK(value("--wake-fd") == "9");
  CHECK(value("--model-fd") == std::to_string(kWorkerModelFd));
  CHECK(value("--model-label") == "/models/x.pt");
  CHECK(value("--device") == "cpu");
  CHECK(value("--precision") == "bf16");
  CHECK(value("--optimize") == "off");
  CHECK(value("--cudnn-autotune") == "off");
  CHECK(value("--log-level") == "debug");
  CHECK(value("--sandbox") == Name(WorkerSandbox::kRequired));
  // Pinned to a GPU, the worker sees that one GPU only and runs on "cuda".
  o.launch.device = *ParseDevice("cuda:3");
  a = WorkerArguments(o, 0, 3, "c", 9);
  CHECK(value("--device") == "cuda");
  a = WorkerArguments(o, 0, -1, "c", 9);
  CHECK(value("--device") == "cuda:3");
  // A spare's arguments: those fixed at spawn, and no model; the model's come in its load
  // request (for the channel it is taken onto).
  a = WorkerSpawnArguments(o, 0, 3, "c", 9, /*spare=*/true);
  CHECK(value("--await-model") == "on");
  CHECK(value("--device") == "cuda");
  CHECK(value("--model-fd") == "(missing)");
  CHECK(value("--precision") == "(missing)");
  a = WorkerModelArguments(o, 4);
  CHECK(value("--channel") == "4");
  CHECK(value("--precision") == "bf16");
  CHECK(value("--control") == "(missing)");
  CHECK(value("--device") == "(missing)");
  // The spare's key: the GPU and what is fixed at spawn; not the model's settings.
  WorkerOptions other = o;
  other.launch.precision = Precision::kFp32;
  other.model = "/models/y.pt";
  CHECK(SpareKey(o, 3) == SpareKey(other, 3));
  CHECK(SpareKey(o, 3) != SpareKey(o, 2));
  other.launch.sandbox = WorkerSandbox::kOff;
  CHECK(SpareKey(o, 3) != SpareKey(other, 3));
  other = o;
  other.pytorch_alloc_conf = "expandable_segments:True";
  CHECK(SpareKey(o, 3) != SpareKey(other, 3));
  other = o;
  other.launch.device = *ParseDevice("cpu");
  CHECK(SpareKey(o, -1) != SpareKey(other, -1));
  // "auto" is where a worker told it ends up: cuda:0 where the NVIDIA driver is, else the CPU.
  WorkerOptions automatic = o;
  automatic.launch.device = *ParseDevice("auto");
  other.launch.device = *ParseDevice(HostHasNvidiaDriver() ? "cuda" : "cpu");
  CHECK(SpareKey(automatic, -1) == SpareKey(other, -1));
  other.launch.device = *ParseDevice(HostHasNvidiaDriver() ? "cpu" : "cuda:1");
  CHECK(SpareKey(automatic, -1) != SpareKey(other, -1));
  o.launch.cudnn_autotune = true;
  a = WorkerArguments(o, 2, -1, "/dev/shm/d/c", 9);
  CHECK(value("--cudnn-autotune") == "on");
}

TEST_CASE("worker pool: a sandbox summary that lacks a layer reads as degraded") {
  CHECK_FALSE(WorkerSandboxDegraded("landlock abi 7 (fs, tcp, scopes), seccomp, no_new_privs, "
                                    "rlimits, mntns, netns"));
  CHECK_FALSE(WorkerSandboxDegraded("off"));
  CHECK(WorkerSandboxDegraded("partial: seccomp, rlimits (no landlock: kernel too old)"));
  CHECK(WorkerSandboxDegraded("none (no_new_privs failed)"));
  // CUDA without Landlock's file rules is confined by the private root; without it, not at all.
  CHECK_FALSE(WorkerSandboxDegraded("landlock abi 7 (no file rules (CUDA), tcp), seccomp, mntns"));
  CHECK(WorkerSandboxDegraded("landlock abi 7 (no file rules (CUDA), tcp), seccomp, netns"));
}

TEST_CASE("worker pool: a worker gets its arguments, and the model on descriptor 3 only") {
  std::string dir = TempDir("argv");
  std::string seen = dir + "/seen";
  // Records its arguments and what descriptor 3 is, then exits 0.
  std::string program = Script(dir, "record.sh",
                               "printf '%s\\n' \"$@\" >" + seen + "\n" +
                                   "readlink /proc/$$/fd/3 >>" + seen + "\n");
  WorkerOptions o = StandIn(dir, program);
  auto pool = WorkerPool::Create(o, 2);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(1).ok());
  WorkerExit e = WaitForExit(**pool, 1);
  CHECK(e.exit_code == 0);
  CHECK_FALSE(e.signaled);
  std::string text = Read(seen);
  CHECK(text.find("--channel\n1\n") != std::string::npos);
  CHECK(text.find("--model-label\n" + o.model + "\n") != std::string::npos);
  // Descriptor 3 is the model file itself, opened by the pool.
  CHECK(text.find(fs::canonical(o.model).string()) != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("worker pool: an exit code and the worker's last stderr lines are reported") {
  std::string dir = TempDir("exit");
  std::string program =
      Script(dir, "fail.sh", "for i in 1 2 3 4 5 6 7; do echo \"line $i\" >&2; done\nexit 3\n");
  auto pool = WorkerPool::Create(StandIn(dir, program), 1);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(0).ok());
  CHECK((*pool)->Generation(0) == 1);
  WorkerExit e = WaitForExit(**pool, 0);
  CHECK(e.exit_code == 3);
  CHECK(e.generation == 1);
  CHECK(e.Describe().rfind("exit code 3", 0) == 0);
  // The last five lines, not the first.
  CHECK(e.stderr_tail.find("line 7") != std::string::npos);
  CHECK(e.stderr_tail.find("line 1\n") == std::string::npos);
  CHECK_FALSE((*pool)->Alive(0));
  // The channel is free again; the next worker there is the next generation.
  REQUIRE((*pool)->Spawn(0).ok());
  CHECK((*pool)->Generation(0) == 2);
  CHECK(WaitForExit(**pool, 0).generation == 2);
  fs::remove_all(dir);
}

TEST_CASE("worker pool: a storm of worker exits keeps only the last kKeptWorkerLogs logs") {
  std::string dir = TempDir("logs");
  std::string program = Script(dir, "fail.sh", "echo \"worker $$\" >&2\nexit 1\n");
  auto pool = WorkerPool::Create(StandIn(dir, program), 1);
  REQUIRE(pool.ok());
  const int generations = static_cast<int>(framemill::kKeptWorkerLogs) + 5;
  for (int g = 1; g <= generations; ++g) {
    REQUIRE((*pool)->Spawn(0).ok());
    CHECK(WaitForExit(**pool, 0).stderr_tail.find("worker ") != std::string::npos);
  }
  int logs = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") ++logs;
  }
  CHECK(logs == static_cast<int>(framemill::kKeptWorkerLogs));
  // The newest are the ones kept.
  CHECK(fs::exists(dir + "/worker-0-" + std::to_string(generations) + ".log"));
  CHECK_FALSE(fs::exists(dir + "/worker-0-1.log"));
  fs::remove_all(dir);
}

TEST_CASE("worker pool: a killed worker is reported with its signal and its control block goes") {
  std::string dir = TempDir("kill");
  std::string program = Script(dir, "sleep.sh", "exec sleep 60\n");
  auto pool = WorkerPool::Create(StandIn(dir, program), 1);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(0).ok());
  CHECK((*pool)->Alive(0));
  CHECK((*pool)->Pid(0) > 0);
  // A second worker on a busy channel is refused.
  CHECK_FALSE((*pool)->Spawn(0).ok());
  std::string control = (*pool)->ControlPath(0);
  REQUIRE_FALSE(control.empty());
  CHECK(fs::exists(control));
  (*pool)->Signal(0, SIGKILL);
  WorkerExit e = WaitForExit(**pool, 0);
  CHECK(e.signaled);
  CHECK(e.signal == SIGKILL);
  CHECK(e.Describe().rfind("killed by signal 9", 0) == 0);
  CHECK(e.last_state == WorkerState::kStarting);  // as the pool made it: it never wrote a state
  CHECK_FALSE(fs::exists(control));
  fs::remove_all(dir);
}

TEST_CASE("worker pool: the sandbox text a worker writes is read back printable and bounded") {
  std::string dir = TempDir("sandbox");
  std::string program = Script(dir, "sleep.sh", "exec sleep 60\n");
  auto pool = WorkerPool::Create(StandIn(dir, program), 1);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(0).ok());
  CHECK((*pool)->Sandbox(0).empty());
  // Write what a hostile worker could: control bytes, high bytes, no terminating zero.
  auto shm = SharedMemory::Open((*pool)->ControlPath(0));
  REQUIRE(shm.ok());
  char* text = static_cast<ControlHeader*>(shm->data())->channel.sandbox;
  const size_t size = sizeof(static_cast<ControlHeader*>(shm->data())->channel.sandbox);
  for (size_t i = 0; i < size; ++i) text[i] = 'a';
  text[0] = '\x01';
  text[1] = static_cast<char>(0xff);
  std::string read = (*pool)->Sandbox(0);
  CHECK(read.size() == size);
  CHECK(read.substr(0, 3) == "??a");
  (*pool)->StopAll(200);  // a stand-in ignores kStop: killed after the grace time
  CHECK_FALSE((*pool)->Alive(0));
  fs::remove_all(dir);
}

namespace {

// The names in a directory, "." and ".." aside; empty when it cannot be read.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// A warm-up request naming `arena`, as the dispatcher sends it.
ChunkRequest WarmUp(const SharedMemory& arena) {
  ChunkRequest rq{};
  rq.kind = ChunkRequest::kWarmup;
  CopyString(rq.arena_name, arena.name());
  return rq;
}

// The request worker k's ring holds next (read as the worker would), or kind kStop when none.
ChunkRequest NextRequest(WorkerPool& pool, int k) {
  auto shm = SharedMemory::Open(pool.ControlPath(k));
  REQUIRE(shm.ok());
  ChunkRequest rq{};
  rq.kind = ChunkRequest::kStop;
  (void)static_cast<ControlHeader*>(shm->data())->channel.requests.TryPop(&rq);
  return rq;
}

}  // namespace

TEST_CASE("worker pool: each worker's shared memory is a scope of its own, holding its control "
          "block and the arena it was sent, nothing else") {
  std::string dir = TempDir("scopes");
  std::string program = Script(dir, "sleep.sh", "exec sleep 60\n");
  auto pool = WorkerPool::Create(StandIn(dir, program), 2);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(0).ok());
  REQUIRE((*pool)->Spawn(1).ok());
  const std::string scope0 = DirName((*pool)->ControlPath(0));
  const std::string scope1 = DirName((*pool)->ControlPath(1));
  CHECK(scope0 != scope1);
  CHECK(DirName(scope0) == DirName(scope1));  // both in the supervisor's directory
  CHECK(Names(scope0) == std::vector<std::string>{Base((*pool)->ControlPath(0))});

  // The job's arena lives in the supervisor's directory; worker 0 is sent it and gets a name of
  // it in its scope, the same memory; worker 1, not sent it, has none.
  auto arena = SharedMemory::Create("arena", 8192);
  REQUIRE(arena.ok());
  CHECK(DirName(arena->name()) == DirName(scope0));
  REQUIRE((*pool)->Send(0, WarmUp(*arena)) == PushResult::kPushed);
  ChunkRequest got = NextRequest(**pool, 0);
  const std::string view = got.arena_name;
  CHECK(view == scope0 + "/" + Base(arena->name()));
  struct stat a {}, v {};
  REQUIRE(::stat(arena->name().c_str(), &a) == 0);
  REQUIRE(::lstat(view.c_str(), &v) == 0);
  CHECK(a.st_ino == v.st_ino);
  CHECK(Names(scope0).size() == 2);
  CHECK(Names(scope1) == std::vector<std::string>{Base((*pool)->ControlPath(1))});
  // Sent again, the same name; sent the next job's arena, the last one's goes from its scope.
  REQUIRE((*pool)->Send(0, WarmUp(*arena)) == PushResult::kPushed);
  CHECK(std::string(NextRequest(**pool, 0).arena_name) == view);
  auto next = SharedMemory::Create("arena", 8192);
  REQUIRE(next.ok());
  REQUIRE((*pool)->Send(0, WarmUp(*next)) == PushResult::kPushed);
  CHECK(std::string(NextRequest(**pool, 0).arena_name) == scope0 + "/" + Base(next->name()));
  CHECK_FALSE(fs::exists(view));
  CHECK(fs::exists(arena->name()));  // its own name stays, with whoever made it

  // A worker's scope goes with it.
  (*pool)->StopAll(200);
  CHECK_FALSE(fs::exists(scope0));
  CHECK_FALSE(fs::exists(scope1));
  fs::remove_all(dir);
}

TEST_CASE("worker pool: a spare taken by a job gets the job's arena in the scope it was started "
          "with") {
  std::string dir = TempDir("spare-scope");
  std::string program = Script(dir, "sleep.sh", "exec sleep 60\n");
  WorkerOptions o = StandIn(dir, program);
  auto spares = WorkerPool::CreateSpares(o, 1);
  REQUIRE(spares.ok());
  REQUIRE((*spares)->Spawn(0, -1).ok());
  const std::string spare_scope = DirName((*spares)->ControlPath(0));
  auto pool = WorkerPool::Create(o, 2);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Adopt(1, -1, spares->get()).ok());
  CHECK(DirName((*pool)->ControlPath(1)) == spare_scope);  // its sandbox binds this one
  auto arena = SharedMemory::Create("arena", 8192);
  REQUIRE(arena.ok());
  REQUIRE((*pool)->Send(1, WarmUp(*arena)) == PushResult::kPushed);
  CHECK(std::string(NextRequest(**pool, 1).arena_name) == spare_scope + "/" + Base(arena->name()));
  CHECK(fs::exists(spare_scope + "/" + Base(arena->name())));
  (*pool)->StopAll(200);
  CHECK_FALSE(fs::exists(spare_scope));
  fs::remove_all(dir);
}

TEST_CASE("worker pool: the real worker loads a model, reports ready, and stops cleanly") {
  std::string dir = TempDir("real");
  auto pool = WorkerPool::Create(test::RealWorker(dir, "invert", "info"), 1);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Spawn(0).ok());
  uint64_t deadline = MonotonicMs() + 60000;
  Result<WorkerState> state = WorkerState::kStarting;
  while (MonotonicMs() < deadline) {
    state = (*pool)->State(0);
    if (!state.ok() || *state != WorkerState::kStarting) break;
    (*pool)->WaitForWake(50);
  }
  REQUIRE(state.ok());
  REQUIRE_MESSAGE(*state == WorkerState::kReady, Read(dir + "/worker-0-1.log"));
  CHECK_FALSE((*pool)->Sandbox(0).empty());
  ChunkRequest stop{};
  stop.kind = ChunkRequest::kStop;
  CHECK((*pool)->Send(0, stop) == PushResult::kPushed);
  WorkerExit e = WaitForExit(**pool, 0);
  CHECK(e.exit_code == 0);
  CHECK_FALSE(e.signaled);
  CHECK(e.last_state == WorkerState::kExited);
  fs::remove_all(dir);
}

namespace {

// Waits until `path` contains `text` (a worker's log line); false after `ms`.
bool LogSays(const std::string& path, const std::string& text, uint64_t ms = 60000) {
  const uint64_t deadline = MonotonicMs() + ms;
  while (MonotonicMs() < deadline) {
    if (Read(path).find(text) != std::string::npos) return true;
    ::usleep(20 * 1000);
  }
  return false;
}

Result<WorkerState> WaitWhileStarting(WorkerPool& pool, int k) {
  uint64_t deadline = MonotonicMs() + 60000;
  Result<WorkerState> state = WorkerState::kStarting;
  while (MonotonicMs() < deadline) {
    state = pool.State(k);
    if (!state.ok() || *state != WorkerState::kStarting) break;
    pool.WaitForWake(50);
  }
  return state;
}

}  // namespace

TEST_CASE("worker pool: a real spare waits without a model, is taken onto a job's channel, and loads") {
  std::string dir = TempDir("spare");
  WorkerOptions o = test::RealWorker(dir, "invert", "info");
  auto spares = WorkerPool::CreateSpares(o, 1);
  REQUIRE(spares.ok());
  REQUIRE((*spares)->Spawn(0, -1).ok());
  const int spare_pid = (*spares)->Pid(0);
  const std::string spare_log = dir + "/spare-0-1.log";
  REQUIRE_MESSAGE(LogSays(spare_log, "waiting for a job's model"), Read(spare_log));
  CHECK((*spares)->State(0).ok());
  CHECK(*(*spares)->State(0) == WorkerState::kStarting);  // it has not attached yet

  // A pool whose spawn-time settings differ takes nothing, and the spare stays.
  WorkerOptions unsandboxed = o;
  unsandboxed.launch.sandbox = WorkerSandbox::kOff;
  auto unfit = WorkerPool::Create(unsandboxed, 2);
  REQUIRE(unfit.ok());
  Status taken = (*unfit)->Adopt(1, -1, spares->get());
  CHECK(taken.code() == StatusCode::kWorkerFailed);
  CHECK((*spares)->Alive(0));

  // The job's pool takes it onto channel 1: the same process loads the job's model there.
  o.launch.precision = Precision::kFp32;
  auto pool = WorkerPool::Create(o, 2);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Adopt(1, -1, spares->get()).ok());
  CHECK_FALSE((*spares)->Alive(0));
  CHECK((*pool)->Alive(1));
  CHECK((*pool)->Adopted(1));
  CHECK((*pool)->Pid(1) == spare_pid);
  CHECK((*pool)->Generation(1) == 1);
  Result<WorkerState> state = WaitWhileStarting(**pool, 1);
  const std::string log = dir + "/worker-1-1.log";
  REQUIRE(state.ok());
  REQUIRE_MESSAGE(*state == WorkerState::kReady, Read(log));
  CHECK(Read(log).find("worker 1: a spare, started") != std::string::npos);
  CHECK(Read(spare_log).find("taken by a job") != std::string::npos);
  CHECK_FALSE((*pool)->Sandbox(1).empty());
  Result<ProbeReport> probe = (*pool)->Probe(1);
  REQUIRE(probe.ok());
  CHECK(probe->device == "cpu");
  // A taken spare is no spare any more: a second adoption finds none.
  CHECK((*pool)->Adopt(0, -1, spares->get()).code() == StatusCode::kWorkerFailed);
  ChunkRequest stop{};
  stop.kind = ChunkRequest::kStop;
  CHECK((*pool)->Send(1, stop) == PushResult::kPushed);
  WorkerExit e = WaitForExit(**pool, 1);
  CHECK(e.exit_code == 0);
  CHECK(e.last_state == WorkerState::kExited);
  fs::remove_all(dir);
}

TEST_CASE("worker pool: a spare asked to stop exits cleanly, and a dead spare is not taken") {
  std::string dir = TempDir("spare-stop");
  WorkerOptions o = test::RealWorker(dir, "invert", "info");
  auto spares = WorkerPool::CreateSpares(o, 2);
  REQUIRE(spares.ok());
  REQUIRE((*spares)->Spawn(0, -1).ok());
  REQUIRE((*spares)->Spawn(1, -1).ok());
  REQUIRE(LogSays(dir + "/spare-0-1.log", "waiting for a job's model"));
  REQUIRE(LogSays(dir + "/spare-1-2.log", "waiting for a job's model"));
  // Spare 0 dies; the pool takes spare 1, having reaped and reported spare 0. Its death is waited
  // for without reaping it (a CUDA worker in a driver call dies only when the call returns: 100 ms
  // was not always enough on a GPU machine).
  const pid_t dead = (*spares)->Pid(0);
  (*spares)->Signal(0, SIGKILL);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(dead), &info, WEXITED | WNOWAIT) == 0);
  auto pool = WorkerPool::Create(o, 1);
  REQUIRE(pool.ok());
  REQUIRE((*pool)->Adopt(0, -1, spares->get()).ok());
  CHECK_FALSE((*spares)->Alive(0));
  CHECK_FALSE((*spares)->Alive(1));
  (*pool)->StopAll(5000);
  // A spare pool's stop: the spare reads the wake-up as its stop and exits 0.
  REQUIRE((*spares)->Spawn(0, -1).ok());
  REQUIRE(LogSays(dir + "/spare-0-3.log", "waiting for a job's model"));
  ChunkRequest stop{};
  stop.kind = ChunkRequest::kStop;
  CHECK((*spares)->Send(0, stop) == PushResult::kPushed);
  WorkerExit e = WaitForExit(**spares, 0);
  CHECK(e.exit_code == 0);
  CHECK_FALSE(e.signaled);
  CHECK(Read(dir + "/spare-0-3.log").find("asked to stop") != std::string::npos);
  fs::remove_all(dir);
}
