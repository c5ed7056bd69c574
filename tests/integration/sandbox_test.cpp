// The worker sandbox (worker/sandbox/sandbox.h) against hostile models and escaping workers: every
// escape is tried with worker_sandbox "required" (refused, the victim untouched, the job failed
// with a reason that names the refusal) and again with "off" (it gets through), so that each test
// proves its fixture really escapes when nothing stops it.
#include <cstdint>
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fault_harness.h"
#include "harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr int kW = 160, kH = 120, kFps = 25, kFrames = 24;

int LandlockAbi() {
  long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1u /* VERSION */);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

void RequireLandlock(int abi) {
  if (LandlockAbi() < abi) {
    SkipTest("the sandbox tests need Landlock ABI " + std::to_string(abi) + " (this kernel has " +
             std::to_string(LandlockAbi()) + ")");
  }
}

// The file tests run on every device: a CPU worker is confined by Landlock's file rules and its
// private root, a CUDA worker (which cannot have Landlock's file rules) by its private root
// alone (worker/sandbox/sandbox.h), and "required" refuses to run one without it.
void RequireFileRules() { RequireLandlock(1); }

// The private root needs user and mount namespaces, which a container or a sysctl may refuse.
void RequireMountNamespaces() {
  RunResult r = Shell("unshare --user --mount true");
  if (r.exit_code != 0) SkipTest("no user and mount namespaces here: " + r.err);
}

// A file the sandbox kept from the model: not there at all in the private root, denied by
// Landlock where there is no private root.
bool FileRefused(const std::string& err) {
  return err.find("No such file or directory") != std::string::npos ||
         err.find("Permission denied") != std::string::npos;
}

std::string SmallVideo() {
  std::string dir = std::string(FRAMEMILL_TEST_SCRATCH) + "/videos";
  fs::create_directories(dir);
  std::string path = dir + "/sandbox-" + std::to_string(kFrames) + ".mp4";
  if (!fs::exists(path)) {
    std::string tmp = path + ".tmp." + std::to_string(::getpid()) + ".mp4";
    MakeIndexVideo(tmp, kFrames, kW, kH, kFps, /*tone_hz=*/0);
    fs::rename(tmp, path);
  }
  return path;
}

// One worker, one chunk, one attempt: an escape fails the job at once.
nlohmann::json Job(const std::string& dir, const std::string& model, const std::string& output) {
  return {{"input", SmallVideo()},   {"output", dir + "/" + output},
          {"model", model},          {"workers", 1},
          {"chunk_frames", kFrames}, {"max_attempts", 1},
          {"device", TestDevice()},  {"overwrite", true}};
}

nlohmann::json Config(const std::string& sandbox) { return {{"worker_sandbox", sandbox}}; }
// With the tests' worker, which has the escape faults and the sandbox's test switches
// (tests/faults/fault_injection.h).
nlohmann::json FaultConfig(const std::string& sandbox) { return WithFaultWorker(Config(sandbox)); }

// A file's bytes and modification time.
struct FileState {
  std::string bytes;
  int64_t mtime_ns = 0;
  bool operator==(const FileState& o) const { return bytes == o.bytes && mtime_ns == o.mtime_ns; }
};

FileState Snapshot(const std::string& path) {
  FileState s;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  s.bytes = buf.str();
  struct stat st {};
  ::stat(path.c_str(), &st);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

// A victim file outside everything a worker may reach (the test's scratch directory).
std::string Victim(const std::string& dir) {
  std::string path = dir + "/victim.txt";
  std::ofstream(path) << "the service's secret: " << std::string(200, 's') << "\n";
  // An old mtime: a write in the same clock tick as the file's creation would still show.
  Shell("touch -d '2001-01-01 00:00:00' '" + path + "'");
  return path;
}

std::string Export(const std::string& dir, const std::string& name, const std::string& target) {
  std::string path = dir + "/" + name + ".pt";
  RunResult r = Shell(std::string("'") + FRAMEMILL_TEST_MODELS_BIN + "' " + name + " '" + path +
                      "' --target '" + target + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return path;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// A listening TCP socket on 127.0.0.1 (non-blocking accept); returns its port.
int Listen(int* fd) {
  *fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(*fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(*fd, 16) == 0);
  socklen_t len = sizeof(a);
  ::getsockname(*fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

bool Accepted(int listener) {
  int c = ::accept(listener, nullptr, nullptr);
  if (c < 0) return false;
  ::close(c);
  return true;
}

// Runs the escape fault `spec` (tests/faults/fault_injection.h) with the sandbox required, then
// off. Returns the two results.
std::pair<RunResult, RunResult> EscapeBothWays(const std::string& name, const std::string& spec) {
  const std::string dir = ScratchDir("sandbox_" + name);
  const std::string model = ModelCopy("identity", dir);
  RunResult on = RunJob(dir, Job(dir, model, "on.mp4"), FaultConfig("required"),
                        {{"FRAMEMILL_TEST_FAULT", spec}});
  RunResult off =
      RunJob(dir, Job(dir, model, "off.mp4"), FaultConfig("off"), {{"FRAMEMILL_TEST_FAULT", spec}});
  return {on, off};
}

void CheckRefused(const RunResult& r, const std::string& what) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("test fault " + what) != std::string::npos);
  CHECK(r.err.find("refused: Operation not permitted") != std::string::npos);
}

}  // namespace

TEST_CASE(
    "sandbox: a model that reads a file outside its roots is refused (and reads it unconfined)") {
  RequireFileRules();
  const std::string dir = ScratchDir("sandbox_read");
  const std::string victim = Victim(dir);
  const FileState before = Snapshot(victim);
  const std::string model = Export(dir, "read_file", victim);

  RunResult on = RunJob(dir, Job(dir, model, "on.mp4"), Config("required"));
  INFO("sandboxed stderr: " << on.err);
  CHECK(on.exit_code == 1);
  CHECK(on.err.find("model_invalid") != std::string::npos);
  CHECK(FileRefused(on.err));
  CHECK_FALSE(fs::exists(dir + "/on.mp4"));
  CHECK(Snapshot(victim) == before);

  // The same model without the sandbox gets the file into its output.
  RunResult off = RunJob(dir, Job(dir, model, "off.mp4"), Config("off"));
  INFO("unconfined stderr: " << off.err);
  CHECK(off.exit_code == 0);
  CHECK(fs::exists(dir + "/off.mp4"));
}

TEST_CASE(
    "sandbox: a model that writes a file is refused, the file unchanged (and written unconfined)") {
  RequireFileRules();
  const std::string dir = ScratchDir("sandbox_write");
  const std::string victim = Victim(dir);
  const FileState before = Snapshot(victim);
  const std::string model = Export(dir, "write_file", victim);

  RunResult on = RunJob(dir, Job(dir, model, "on.mp4"), Config("required"));
  INFO("sandboxed stderr: " << on.err);
  CHECK(on.exit_code == 1);
  CHECK(FileRefused(on.err));
  CHECK(Snapshot(victim) == before);

  RunResult off = RunJob(dir, Job(dir, model, "off.mp4"), Config("off"));
  INFO("unconfined stderr: " << off.err);
  CHECK(off.exit_code == 0);
  CHECK(Snapshot(victim).bytes == std::string(before.bytes.size(), 'X'));
}

TEST_CASE("sandbox: a worker cannot connect a TCP socket (and can unconfined)") {
  RequireLandlock(1);
  int listener = -1;
  const int port = Listen(&listener);
  auto [on, off] = EscapeBothWays("connect", "connect:" + std::to_string(port) + "@5");
  CheckRefused(on, "connect");
  CHECK(off.exit_code == 0);
  // Only the unconfined worker's connection arrived.
  CHECK(Accepted(listener));
  CHECK_FALSE(Accepted(listener));
  ::close(listener);
}

TEST_CASE("sandbox: a worker cannot open an AF_INET socket (and can unconfined)") {
  RequireLandlock(1);
  auto [on, off] = EscapeBothWays("socket", "socket@5");
  CheckRefused(on, "socket");
  CHECK(off.exit_code == 0);
}

TEST_CASE("sandbox: a worker cannot fork (and can unconfined)") {
  RequireLandlock(1);
  const std::string marker = ScratchDir("sandbox_fork_marker") + "/forked";
  auto [on, off] = EscapeBothWays("fork", "fork:" + marker + "@5");
  CheckRefused(on, "fork");
  CHECK(off.exit_code == 0);
  CHECK(fs::exists(marker));  // written by the unconfined worker's child
}

TEST_CASE("sandbox: a worker cannot exec a program (and can unconfined)") {
  RequireLandlock(1);
  const std::string dir = ScratchDir("sandbox_exec_marker");
  const std::string marker = dir + "/exec";
  const std::string spec = "exec:" + marker + "@5";
  const std::string job_dir = ScratchDir("sandbox_exec");
  const std::string model = ModelCopy("identity", job_dir);
  RunResult on = RunJob(job_dir, Job(job_dir, model, "on.mp4"), FaultConfig("required"),
                        {{"FRAMEMILL_TEST_FAULT", spec}});
  CheckRefused(on, "exec");
  CHECK_FALSE(fs::exists(marker));
  // Unconfined, the worker turns into the shell, which writes the marker (the job then fails:
  // its worker is gone).
  RunResult off = RunJob(job_dir, Job(job_dir, model, "off.mp4"), FaultConfig("off"),
                         {{"FRAMEMILL_TEST_FAULT", spec}});
  CHECK(fs::exists(marker));
}

TEST_CASE("sandbox: a worker cannot read the supervisor's memory (and can try unconfined)") {
  RequireLandlock(1);
  auto [on, off] = EscapeBothWays("memory", "memory@5");
  CheckRefused(on, "memory");
  CHECK(off.exit_code == 0);
}

TEST_CASE("sandbox: a worker cannot signal the supervisor (and can unconfined)") {
  RequireLandlock(6);  // signal scoping came with Landlock ABI 6
  auto [on, off] = EscapeBothWays("signal", "signal@5");
  CheckRefused(on, "signal");
  CHECK(off.exit_code == 0);
}

TEST_CASE("sandbox: a normal model gives the same frames in the sandbox as without it") {
  RequireLandlock(1);
  const std::string dir = ScratchDir("sandbox_same_frames");
  const std::string model = ModelCopy("sharpen", dir);
  nlohmann::json job = Job(dir, model, "on.mp4");
  job["workers"] = 2;
  job["chunk_frames"] = 8;
  RunResult on = RunJob(dir, job, Config("required"));
  INFO("stderr: " << on.err);
  REQUIRE(on.exit_code == 0);
  CHECK(on.out.find("worker sandbox: landlock abi " + std::to_string(LandlockAbi())) !=
        std::string::npos);
  CHECK(on.out.find("seccomp") != std::string::npos);
  job["output"] = dir + "/off.mp4";
  RunResult off = RunJob(dir, job, Config("off"));
  REQUIRE(off.exit_code == 0);
  CHECK(off.out.find("worker sandbox: off") != std::string::npos);
  std::vector<uint64_t> sandboxed = FrameHashes(dir + "/on.mp4", kW, kH);
  CHECK(sandboxed.size() == static_cast<size_t>(kFrames));
  CHECK(sandboxed == FrameHashes(dir + "/off.mp4", kW, kH));
}

TEST_CASE("sandbox: without Landlock, required fails the job saying so, auto warns once and runs") {
  const std::string dir = ScratchDir("sandbox_no_landlock");
  const std::string model = ModelCopy("invert", dir);
  nlohmann::json job = Job(dir, model, "required.mp4");
  job["workers"] = 2;
  job["chunk_frames"] = 8;
  const Env no_landlock = {{"FRAMEMILL_TEST_NO_LANDLOCK", "1"}};
  RunResult required = RunJob(dir, job, FaultConfig("required"), no_landlock);
  INFO("required: " << required.err);
  CHECK(required.exit_code == 1);
  CHECK(required.err.find("worker_sandbox is \"required\"") != std::string::npos);
  CHECK(required.err.find("Landlock is not supported by this kernel (ENOSYS)") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/required.mp4"));

  job["output"] = dir + "/auto.mp4";
  RunResult automatic = RunJob(dir, job, FaultConfig("auto"), no_landlock);
  INFO("auto: " << automatic.err);
  CHECK(automatic.exit_code == 0);
  CHECK(Count(automatic.err, "WORKERS ARE NOT SANDBOXED") == 1);
  CHECK(automatic.out.find("worker sandbox: partial: seccomp") != std::string::npos);
  CHECK(automatic.out.find("missing landlock") != std::string::npos);
}

// The private root alone (Landlock switched off in the faults worker, so "auto"): what a CUDA worker
// relies on. The model asks for files that exist and that its user may read and write; they are
// simply not in its file system.
TEST_CASE(
    "sandbox: without Landlock, the private root alone hides /etc/passwd and the job's files") {
  RequireMountNamespaces();
  const std::string dir = ScratchDir("sandbox_mntns_read");
  const Env no_landlock = {{"FRAMEMILL_TEST_NO_LANDLOCK", "1"}};
  // What a worker gets so: the private root, no Landlock (a failed job does not say it).
  RunResult normal =
      RunJob(dir, Job(dir, ModelCopy("identity", dir), "normal.mp4"), FaultConfig("auto"),
             no_landlock);
  INFO("identity: " << normal.err);
  REQUIRE(normal.exit_code == 0);
  CHECK(normal.out.find(", mntns") != std::string::npos);
  CHECK(normal.out.find("missing landlock") != std::string::npos);
  // The job's own input (the supervisor reads it; the worker gets frames), a file of the machine.
  for (const std::string& target : {SmallVideo(), std::string("/etc/passwd")}) {
    const std::string model = Export(dir, "read_file", target);
    RunResult on = RunJob(dir, Job(dir, model, "on.mp4"), FaultConfig("auto"), no_landlock);
    INFO(target << ": " << on.err);
    CHECK(on.exit_code == 1);
    CHECK(on.err.find("model_invalid") != std::string::npos);
    CHECK(on.err.find("No such file or directory") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/on.mp4"));
  }
  // Without the private root (and without Landlock) the same model reads /etc/passwd.
  RunResult open =
      RunJob(dir, Job(dir, Export(dir, "read_file", "/etc/passwd"), "open.mp4"),
             FaultConfig("auto"),
             {{"FRAMEMILL_TEST_NO_LANDLOCK", "1"}, {"FRAMEMILL_TEST_NO_MOUNT_NS", "1"}});
  INFO("no private root: " << open.err);
  // "no mntns (...)" on a CPU (Landlock would confine it), "missing mntns (...)" on CUDA.
  CHECK(open.out.find("mntns (FRAMEMILL_TEST_NO_MOUNT_NS is set") != std::string::npos);
  CHECK(open.exit_code == 0);
}

TEST_CASE("sandbox: without Landlock, the private root alone keeps writes in shared memory") {
  RequireMountNamespaces();
  const std::string dir = ScratchDir("sandbox_mntns_write");
  const Env no_landlock = {{"FRAMEMILL_TEST_NO_LANDLOCK", "1"}};
  // A file of the job's scratch directory: not there, so it is not written.
  const std::string victim = Victim(dir);
  const FileState before = Snapshot(victim);
  RunResult on = RunJob(dir, Job(dir, Export(dir, "write_file", victim), "on.mp4"),
                        FaultConfig("auto"), no_landlock);
  INFO("scratch victim: " << on.err);
  CHECK(on.exit_code == 1);
  CHECK(on.err.find("No such file or directory") != std::string::npos);
  CHECK(Snapshot(victim) == before);

  // A file in /dev/shm beside the service's shared-memory directory: the worker's /dev/shm is a
  // private tmpfs, so the model writes into a file of its own that dies with it.
  const std::string shm_victim = "/dev/shm/framemill-test-victim-" + std::to_string(::getpid());
  fs::copy_file(victim, shm_victim, fs::copy_options::overwrite_existing);
  Shell("touch -d '2001-01-01 00:00:00' '" + shm_victim + "'");
  const FileState shm_before = Snapshot(shm_victim);
  RunResult in_shm = RunJob(dir, Job(dir, Export(dir, "write_file", shm_victim), "shm.mp4"),
                            FaultConfig("auto"), no_landlock);
  INFO("/dev/shm victim: " << in_shm.err);
  CHECK(in_shm.out.find(", mntns") != std::string::npos);
  CHECK(Snapshot(shm_victim) == shm_before);
  // Unconfined, the same model overwrites it.
  RunResult off =
      RunJob(dir, Job(dir, Export(dir, "write_file", shm_victim), "off.mp4"), Config("off"));
  INFO("unconfined: " << off.err);
  CHECK(off.exit_code == 0);
  CHECK(Snapshot(shm_victim).bytes == std::string(shm_before.bytes.size(), 'X'));
  fs::remove(shm_victim);
}

// ffprobe parses every input first, with the service's rights unless confined: it runs under
// framemill-confine (worker/sandbox/confine_main.cpp) whenever workers are sandboxed. A stand-in
// that does what an exploited demuxer would is refused another user's file, any file to write
// and the network; with worker_sandbox "off" it gets all three.
TEST_CASE("sandbox: media tools: ffprobe reads no other file, writes none, connects nowhere") {
  RequireLandlock(4);
  const std::string dir = ScratchDir("sandbox_media_tools");
  const std::string secret = dir + "/secret.txt", drop = dir + "/dropped";
  {
    std::ofstream(secret) << "the secret words\n";
  }
  const Env env = {{"FRAMEMILL_TEST_SECRET_FILE", secret}, {"FRAMEMILL_TEST_DROP_FILE", drop}};
  nlohmann::json job = Job(dir, ModelCopy("identity", dir), "on.mp4");
  nlohmann::json config = Config("required");
  config["ffprobe"] = FRAMEMILL_HOSTILE_MEDIA_TOOL_BIN;
  RunResult on = RunJob(dir, job, config, env);
  INFO("required: " << on.err);
  CHECK(on.exit_code == 1);
  CHECK(on.err.find("hostile media tool: read denied (Permission denied), write denied "
                    "(Permission denied), tcp ") != std::string::npos);
  CHECK(on.err.find("the secret words") == std::string::npos);
  CHECK(on.err.find("tcp ECONNREFUSED") == std::string::npos);
  CHECK(on.err.find("tcp connected") == std::string::npos);
  CHECK_FALSE(fs::exists(drop));

  config["worker_sandbox"] = "off";
  job["output"] = dir + "/off.mp4";
  RunResult off = RunJob(dir, job, config, env);
  INFO("off: " << off.err);
  CHECK(off.exit_code == 1);
  CHECK(off.err.find("hostile media tool: read the secret words, write ok, tcp ") !=
        std::string::npos);
  CHECK(fs::exists(drop));
}

// ffmpeg too runs confined, in every role a job gives it (the decoder, each segment's encoder, the
// mux that joins them with the source's audio): it may read the descriptors it is handed and write
// those open for writing (its output), nothing else, and connect nowhere. The stand-in tries the
// three things first and, refused all three, becomes the real ffmpeg: the job must then finish
// with every frame. With worker_sandbox "off", attacking in one role at a time, it reads the
// secret and writes it out in each (so each role did run the stand-in), and the job fails.
TEST_CASE("sandbox: media tools: every ffmpeg of a job reads and writes only its own files") {
  RequireLandlock(4);
  const std::string dir = ScratchDir("sandbox_media_ffmpeg");
  const std::string secret = dir + "/secret.txt", drop = dir + "/dropped";
  {
    std::ofstream(secret) << "the secret words\n";
  }
  const std::string input = dir + "/in.mp4";
  MakeIndexVideo(input, 2 * kFrames, kW, kH, kFps, /*tone_hz=*/440);
  std::string ffmpeg = Shell("command -v ffmpeg").out;
  while (!ffmpeg.empty() && ffmpeg.back() == '\n') ffmpeg.pop_back();
  REQUIRE_FALSE(ffmpeg.empty());
  // Confined, the stand-in may execute only itself and the programs of the system's directories
  // (MediaToolFsRules): the real ffmpeg it hands over to must be one of those.
  const std::string real_dir = fs::canonical(ffmpeg).parent_path().string();
  if (real_dir != "/usr/bin" && real_dir != "/bin" && real_dir != "/usr/local/bin") {
    SkipTest("ffmpeg is " + fs::canonical(ffmpeg).string() + ", outside /usr/bin, /bin and "
             "/usr/local/bin: the confined stand-in cannot hand over to it");
  }
  const Env env = {{"FRAMEMILL_TEST_SECRET_FILE", secret},
                   {"FRAMEMILL_TEST_DROP_FILE", drop},
                   {"FRAMEMILL_TEST_THEN_EXEC", ffmpeg}};
  nlohmann::json job = Job(dir, ModelCopy("identity", dir), "on.mp4");
  job["input"] = input;
  job["segment_seconds"] = 0.5;  // a chunk a segment: two segments, two encoders
  nlohmann::json config = Config("required");
  config["ffmpeg"] = FRAMEMILL_HOSTILE_MEDIA_TOOL_BIN;
  RunResult on = RunJob(dir, job, config, env);
  INFO("required: " << on.out << on.err);
  CHECK(on.exit_code == 0);
  CHECK(CountFrames(dir + "/on.mp4") == 2 * kFrames);
  CHECK(FirstStream(Probe(dir + "/on.mp4"), "audio").is_object());
  CHECK(on.err.find("the secret words") == std::string::npos);
  CHECK_FALSE(fs::exists(drop));

  config["worker_sandbox"] = "off";
  for (const std::string role : {"decoder", "encoder", "mux"}) {
    Env one = env;
    one.push_back({"FRAMEMILL_TEST_ATTACK_ROLE", role});
    job["output"] = dir + "/off-" + role + ".mp4";
    RunResult off = RunJob(dir, job, config, one);
    INFO("off, " << role << ": " << off.err);
    CHECK(off.exit_code == 1);
    CHECK(ReadFile(drop).find(role + ": the secret words") != std::string::npos);
  }
}
