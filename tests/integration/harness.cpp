#include "harness.h"

#include <cstdint>
#include <array>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "common/shared_memory.h"

namespace framemill::test {
namespace fs = std::filesystem;

namespace {

constexpr int kGrid = 4;  // 4x4 blocks = 16 bits of frame index

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}


}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string ScratchDir(const std::string& test_name) {
  std::string dir = std::string(FRAMEMILL_TEST_SCRATCH) + "/" + test_name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ModelPath(const std::string& name) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::string dir = std::string(FRAMEMILL_TEST_SCRATCH) + "/models";
  fs::create_directories(dir);
  std::string path = dir + "/" + name + ".pt";
  if (!fs::exists(path)) {
    // Export writes a temporary file and renames it, so parallel test processes are safe. The
    // fault fixture comes from the tests' own program, the examples from the product's.
    RunResult r = Shell(name == "leak"
                            ? Quote(FRAMEMILL_TEST_MODELS_BIN) + " leak " + Quote(path)
                            : Quote(FRAMEMILL_BIN) + " model export " + name + " " + Quote(path));
    if (r.exit_code != 0) throw std::runtime_error("model export failed: " + r.err);
  }
  return path;
}

std::string ModelCopy(const std::string& name, const std::string& dir) {
  std::string path = dir + "/" + name + ".pt";
  fs::copy_file(ModelPath(name), path, fs::copy_options::overwrite_existing);
  return path;
}

std::string TestClip(const std::string& name) {
  const char* env = std::getenv("FRAMEMILL_TESTDATA");
  std::string path = std::string(env != nullptr ? env : FRAMEMILL_TESTDATA) + "/" + name;
  if (::access(path.c_str(), R_OK) != 0) {
    SkipTest(path + " is not here: the real clips are read in place from shared/testdata "
                    "beside the checkout (or $FRAMEMILL_TESTDATA)");
  }
  return path;
}

RunResult Shell(const std::string& command) {
  char tmpl[] = "/tmp/framemill-test-stderr-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ::close(fd);
  std::string full = "(" + command + ") 2>" + tmpl;
  RunResult r;
  FILE* p = ::popen(full.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 65536> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = ReadFile(tmpl);
  ::unlink(tmpl);
  return r;
}

namespace {

// Every framemill this test process started (StartFramemill): the supervisors whose shared memory
// its checks may speak for.
std::mutex started_mu;
std::set<int> started_pids;

bool StartedHere(int pid) {
  std::lock_guard<std::mutex> lock(started_mu);
  return pid == ::getpid() || started_pids.count(pid) != 0;
}

}  // namespace

nlohmann::json WithTestDefaults(nlohmann::json job, const nlohmann::json& config) {
  const auto config_names = [&](const char* key) {
    return config.is_object() && config.contains("defaults") && config["defaults"].is_object() &&
           config["defaults"].contains(key);
  };
  if (!job.is_object()) return job;
  if (!job.contains("encoder") && !config_names("encoder")) job["encoder"] = TestEncoder();
  const bool names_workers = job.contains("workers") || job.contains("workers_per_gpu") ||
                             config_names("workers") || config_names("workers_per_gpu");
  if (!names_workers) job["workers"] = kTestWorkers;
  return job;
}

BackgroundJob StartFramemill(const std::string& dir, const std::vector<std::string>& args,
                             const Env& env, const std::string& name) {
  // A run whose environment names one of the supervisor's faults (tests/faults/supervisor_faults.h)
  // runs the tests' build of framemill, which has them.
  bool faults = false;
  for (const auto& variable : env) {
    faults = faults || variable.first.rfind("FRAMEMILL_FAULT_", 0) == 0;
  }
  std::vector<std::string> argv = {faults ? FRAMEMILL_FAULTS_BIN : FRAMEMILL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  BackgroundJob bg;
  bg.out_path = dir + "/" + name + ".stdout";
  bg.err_path = dir + "/" + name + ".stderr";
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    int out = ::open(bg.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(bg.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> cargs;
    for (std::string& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    ::execv(cargs[0], cargs.data());
    ::_exit(127);
  }
  bg.pid = pid;
  {
    std::lock_guard<std::mutex> lock(started_mu);
    started_pids.insert(pid);
  }
  return bg;
}

BackgroundJob StartJob(const std::string& dir, const nlohmann::json& job, const Env& env,
                       const nlohmann::json& config, const std::string& name) {
  std::string job_path = dir + "/" + name + ".json";
  std::ofstream(job_path) << WithTestDefaults(job, config).dump(2);
  std::vector<std::string> args;
  if (!config.is_null()) {
    std::string config_path = dir + "/" + name + ".config.json";
    std::ofstream(config_path) << config.dump(2);
    args.insert(args.end(), {"--config", config_path});
  }
  args.insert(args.end(), {"run", job_path});
  return StartFramemill(dir, args, env, name);
}

KillOnExit::~KillOnExit() {
  if (job.pid > 0 && ::waitpid(job.pid, nullptr, WNOHANG) == 0) {
    ::kill(job.pid, SIGKILL);
    ::waitpid(job.pid, nullptr, 0);
  }
}

RunResult WaitJob(const BackgroundJob& job, double timeout_s) {
  RunResult r;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    pid_t p = ::waitpid(job.pid, &status, WNOHANG);
    if (p == job.pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(job.pid, SIGKILL);
      ::waitpid(job.pid, &status, 0);
      r.exit_code = -1;
      r.out = ReadFile(job.out_path);
      r.err = "(timed out) " + ReadFile(job.err_path);
      return r;
    }
    ::usleep(20 * 1000);
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(job.out_path);
  r.err = ReadFile(job.err_path);
  return r;
}

RunResult RunJob(const std::string& dir, const nlohmann::json& job, const nlohmann::json& config,
                 const Env& env) {
  return WaitJob(StartJob(dir, job, env, config));
}

void SkipTest(const std::string& reason) {
  std::fprintf(stderr, "SKIPPED: %s\n", reason.c_str());
  std::fflush(nullptr);
  std::_Exit(kSkipExitCode);
}

nlohmann::json LosslessJob(const std::string& input, const std::string& output,
                           const std::string& model) {
  return {{"input", input},
          {"output", output},
          {"model", model},
          {"device", TestDevice()},
          {"workers", 1},
          {"batch", 8},
          {"encoder",
           {{"codec", "libx264"}, {"crf", 0}, {"preset", "ultrafast"}, {"pix_fmt", "yuv444p"}}}};
}

std::string TestDevice() {
  const char* d = std::getenv("FRAMEMILL_TEST_DEVICE");
  return d != nullptr && *d != '\0' ? d : "cpu";
}

std::vector<nlohmann::json> ReadTimeline(const std::string& output) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(output + ".timeline.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

std::vector<int> WorkerPids(const std::string& dir) {
  std::vector<int> pids;
  for (int pid : ProcessesMentioning(dir)) {
    std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find("framemill-worker") != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

std::vector<uint64_t> FrameHashes(const std::string& path, int width, int height) {
  std::vector<uint64_t> hashes;
  const size_t n = static_cast<size_t>(width) * height * 3;
  DecodeFrames(path, width, height, [&](const uint8_t* rgb) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (size_t i = 0; i < n; ++i) h = (h ^ rgb[i]) * 1099511628211ull;
    hashes.push_back(h);
  });
  return hashes;
}

std::vector<int> FrameIndices(const std::string& path, int width, int height) {
  std::vector<int> indices;
  DecodeFrames(path, width, height,
               [&](const uint8_t* rgb) { indices.push_back(ReadFrameIndex(rgb, width, height)); });
  return indices;
}

int OutOfPlace(const std::vector<int>& indices, int frames) {
  int bad = std::abs(static_cast<int>(indices.size()) - frames);
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] != static_cast<int>(i)) ++bad;
  }
  return bad;
}

namespace {

void EncodeIndexVideo(const std::string& path, int frames, int width, int height, int fps,
                      int tone_hz) {
  std::string cmd = "ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt rgb24 -s " +
                    std::to_string(width) + "x" + std::to_string(height) + " -framerate " +
                    std::to_string(fps) + " -i pipe:0";
  if (tone_hz > 0) {
    double seconds = static_cast<double>(frames) / fps;
    cmd += " -f lavfi -i sine=frequency=" + std::to_string(tone_hz) +
           ":sample_rate=48000:duration=" + std::to_string(seconds) + " -c:a aac -b:a 96k";
  }
  cmd += " -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -g 50 " + Quote(path);
  FILE* p = ::popen(cmd.c_str(), "w");
  if (p == nullptr) throw std::runtime_error("cannot start ffmpeg");
  std::vector<uint8_t> frame(static_cast<size_t>(width) * height * 3);
  const int bw = width / kGrid, bh = height / kGrid;
  for (int i = 0; i < frames; ++i) {
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        int bx = std::min(x / bw, kGrid - 1), by = std::min(y / bh, kGrid - 1);
        int bit = kGrid * kGrid - 1 - (by * kGrid + bx);
        uint8_t v = ((i >> bit) & 1) ? 255 : 0;
        uint8_t* px = &frame[(static_cast<size_t>(y) * width + x) * 3];
        px[0] = v;
        px[1] = v;
        px[2] = v;
      }
    }
    std::fwrite(frame.data(), 1, frame.size(), p);
  }
  if (::pclose(p) != 0) throw std::runtime_error("ffmpeg failed to make " + path);
}

}  // namespace

void MakeIndexVideo(const std::string& path, int frames, int width, int height, int fps,
                    int tone_hz) {
  // Encoded once per build tree and copied: many tests ask for the same video. (Written under a
  // name of this process, then renamed, so that parallel tests never read half a file.)
  const std::string dir = std::string(FRAMEMILL_TEST_SCRATCH) + "/index-videos";
  fs::create_directories(dir);
  const std::string cached = dir + "/index-" + std::to_string(frames) + "-" +
                             std::to_string(width) + "x" + std::to_string(height) + "-" +
                             std::to_string(fps) + "fps-" + std::to_string(tone_hz) + "hz" +
                             fs::path(path).extension().string();
  if (!fs::exists(cached)) {
    const std::string tmp = dir + "/tmp-" + std::to_string(::getpid()) + "-" +
                            fs::path(cached).filename().string();
    EncodeIndexVideo(tmp, frames, width, height, fps, tone_hz);
    fs::rename(tmp, cached);
  }
  fs::copy_file(cached, path, fs::copy_options::overwrite_existing);
}

int ReadFrameIndex(const uint8_t* rgb, int width, int height) {
  const int bw = width / kGrid, bh = height / kGrid;
  int index = 0;
  for (int by = 0; by < kGrid; ++by) {
    for (int bx = 0; bx < kGrid; ++bx) {
      // Average the block's centre half, away from edges that compression blurs.
      long sum = 0, n = 0;
      for (int y = by * bh + bh / 4; y < by * bh + 3 * bh / 4; ++y) {
        for (int x = bx * bw + bw / 4; x < bx * bw + 3 * bw / 4; ++x) {
          sum += rgb[(static_cast<size_t>(y) * width + x) * 3 + 1];
          ++n;
        }
      }
      long mean = sum / n;
      if (mean > 60 && mean < 195) return -1;
      index = (index << 1) | (mean >= 195 ? 1 : 0);
    }
  }
  return index;
}

int64_t DecodeFrames(const std::string& path, int width, int height,
                     const std::function<void(const uint8_t*)>& on_frame) {
  std::string cmd = "ffmpeg -nostdin -v error -i " + Quote(path) +
                    " -map 0:v:0 -fps_mode passthrough -f rawvideo -pix_fmt rgb24 pipe:1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot start ffmpeg");
  std::vector<uint8_t> frame(static_cast<size_t>(width) * height * 3);
  int64_t count = 0;
  while (std::fread(frame.data(), 1, frame.size(), p) == frame.size()) {
    on_frame(frame.data());
    ++count;
  }
  ::pclose(p);
  return count;
}

nlohmann::json Probe(const std::string& path) {
  RunResult r =
      Shell("ffprobe -v error -print_format json -show_streams -show_format " + Quote(path));
  if (r.exit_code != 0) return nullptr;
  return nlohmann::json::parse(r.out);
}

nlohmann::json FirstStream(const nlohmann::json& probe, const std::string& type) {
  if (probe.is_null()) return nullptr;
  for (const auto& s : probe["streams"]) {
    if (s.value("codec_type", "") == type) return s;
  }
  return nullptr;
}

int64_t CountFrames(const std::string& path) {
  RunResult r = Shell(
      "ffprobe -v error -select_streams v:0 -count_frames -show_entries "
      "stream=nb_read_frames -of csv=p=0 " +
      Quote(path));
  if (r.exit_code != 0) return -1;
  return std::stoll(r.out);
}

std::vector<std::string> AllSharedMemoryObjects() { return ListFramemillObjects(); }

std::vector<std::string> SharedMemoryObjects() {
  std::vector<std::string> left;
  for (const SharedMemoryDir& d : ListFramemillDirs()) {
    if (d.live) continue;  // a running supervisor's (perhaps another test's)
    // A dead supervisor of another test process: one that test killed on purpose (a cancelled
    // Slurm task, a killed service) and whose objects wait for the next supervisor to remove
    // them. Seen by a test running beside it, it is not that test's leftover.
    if (d.owner_pid != 0 && !StartedHere(d.owner_pid)) continue;
    left.push_back(d.path);
    left.insert(left.end(), d.objects.begin(), d.objects.end());
  }
  return left;
}

std::vector<std::string> SharedMemoryObjectsOf(int pid) {
  std::vector<std::string> objects;
  for (const SharedMemoryDir& d : ListFramemillDirs()) {
    if (d.owner_pid == pid) objects.insert(objects.end(), d.objects.begin(), d.objects.end());
  }
  return objects;
}

int PartialOutputs(const std::string& dir) {
  int n = 0;
  for (const std::string& name : ListDir(dir)) n += name.rfind(".framemill-partial.", 0) == 0;
  return n;
}

std::vector<int> ChildrenMentioning(int parent, const std::string& needle) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    const std::string stat = ReadFile("/proc/" + name + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = -1;
    char state = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != parent) {
      continue;
    }
    std::string cmdline = ReadFile("/proc/" + name + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(needle) != std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

std::vector<int> ProcessesMentioning(const std::string& needle) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile("/proc/" + name + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    // A whole path: followed by '/', the arguments' separator or the end. A test's directory
    // ".../scratch/crash" must not find the processes of ".../scratch/crash_held", a test that
    // may run beside it.
    bool found = false;
    for (size_t at = cmdline.find(needle); at != std::string::npos && !found;
         at = cmdline.find(needle, at + 1)) {
      const size_t end = at + needle.size();
      found = end == cmdline.size() || cmdline[end] == '/' || cmdline[end] == ' ';
    }
    if (found && std::stoi(name) != ::getpid()) pids.push_back(std::stoi(name));
  }
  return pids;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace framemill::test
