// framemill-soak: an hour of video (108,000 frames at 30 fps, small frames, with audio) through
// `framemill run` with the `leak` model, an RSS recycle limit that forces dozens of recycles,
// and a worker SIGKILLed at random every few seconds. Prints time, fps, recycles, crashes, peak
// supervisor RSS and worker memory; then checks that every frame came out exactly once and in
// order (each frame shows its index as blocks; 16 bits, so index mod 65536) and that the audio
// lasts as long as the source's.
//
// The same job on a tenth of the frames runs first, without kills, as the baseline for the
// supervisor's memory: its peak private RSS (without the arena's shared pages, bounded by
// arena_mb) must not grow with the video's length.
//
// usage: framemill-soak [--frames N] [--size WxH] [--workers W] [--device D]
//                       [--rss-limit-mb M | --gpu-limit-mb M] [--kill-every S] [--dir DIR]
// Run from the build directory; it starts the framemill binary built beside it (FRAMEMILL_BIN)
// and needs ffmpeg and ffprobe on PATH. Exit status 0 only if the checks pass. It builds on the
// supervisor's own library (probing, decoding, running programs), none of the tests' code.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/index_video.h"
#include "common/proc_status.h"
#include "supervisor/process/subprocess.h"

extern char** environ;

namespace fm = framemill;
namespace fs = std::filesystem;
using framemill::bench::AudioSeconds;
using framemill::bench::MakeIndexVideo;
using framemill::bench::Misplaced;

namespace {

// ---- The job: `framemill run` in the background, its workers, its timeline ----

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct RunningJob {
  pid_t pid = -1;
  std::string err_path;
};

// Writes `job` to dir/<name>.json and starts `framemill run` on it, its stdout and stderr in
// dir/<name>.stdout and .stderr.
RunningJob StartRun(const std::string& dir, const nlohmann::json& job, const std::string& name) {
  const std::string job_path = dir + "/" + name + ".json";
  std::ofstream(job_path) << job.dump(2);
  const std::string out_path = dir + "/" + name + ".stdout";
  RunningJob run;
  run.err_path = dir + "/" + name + ".stderr";
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, run.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> args = {FRAMEMILL_BIN, "run", job_path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::posix_spawn(&run.pid, argv[0], &files, nullptr, argv.data(), environ) != 0) run.pid = -1;
  posix_spawn_file_actions_destroy(&files);
  if (run.pid < 0) throw std::runtime_error(std::string("cannot start ") + FRAMEMILL_BIN);
  return run;
}

// The worker processes of the job whose model lies in `dir` (their command line names it).
std::vector<int> WorkerPids(const std::string& dir) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadText("/proc/" + name + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("framemill-worker") != std::string::npos &&
        cmdline.find(dir) != std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// Example model `name` exported into `dir`: the job's workers then carry `dir` in their command
// line, which WorkerPids finds.
// The tests' leaking model fixture (tests/fixtures/fixture_models.cpp).
std::string ExportModel(const std::string& name, const std::string& dir) {
  const std::string path = dir + "/" + name + ".pt";
  fm::Result<fm::CommandOutput> r = fm::RunAndCapture({FRAMEMILL_TEST_MODELS_BIN, name, path});
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  if (r->exit_code != 0) throw std::runtime_error("model export failed: " + r->err);
  return path;
}

struct Options {
  int frames = 108000;
  int width = 128, height = 96;
  int workers = 2;
  std::string device = "cpu";
  int rss_limit_mb = 400;
  int gpu_limit_mb = 0;  // > 0: recycle by GPU reserved memory instead of RSS (on CUDA)
  double kill_every_s = 8;
  std::string dir;
};

struct RunFigures {
  int exit_code = -1;
  double seconds = 0;
  double supervisor_peak_mb = 0;  // private RSS of the supervisor process, sampled every 100 ms
  int recycles = 0, crashes = 0, kills_sent = 0, workers_started = 0;
  double worker_peak_rss_mb = 0, worker_peak_gpu_mb = 0;
  std::string err;
};

RunFigures RunSoakJob(const Options& o, const std::string& input, const std::string& output,
                      const std::string& model, bool kill_workers) {
  nlohmann::json job = {
      {"input", input},
      {"output", output},
      {"model", model},
      {"device", o.device},
      {"workers", o.workers},
      {"overwrite", true},
      {"chunk_frames", 32},
      {"batch", 8},
      {"max_attempts", 10},
      {"encoder", {{"preset", "veryfast"}}},
      {"recycle", o.gpu_limit_mb > 0 ? nlohmann::json{{"gpu_reserved_mb", o.gpu_limit_mb}}
                                     : nlohmann::json{{"rss_mb", o.rss_limit_mb}}}};
  RunFigures f;
  auto t0 = std::chrono::steady_clock::now();
  RunningJob bg = StartRun(o.dir, job, kill_workers ? "soak" : "baseline");
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  auto next_kill = t0 + std::chrono::duration<double>(o.kill_every_s * jitter(rng));
  int status = 0;
  while (::waitpid(bg.pid, &status, WNOHANG) == 0) {
    // Private memory (see common/proc_status.h): the arena's shared pages are bounded by arena_mb.
    f.supervisor_peak_mb =
        std::max(f.supervisor_peak_mb, framemill::ReadProcMemory(bg.pid).private_bytes / 1048576.0);
    auto now = std::chrono::steady_clock::now();
    if (kill_workers && now >= next_kill) {
      std::vector<int> pids = WorkerPids(o.dir);
      if (!pids.empty()) {
        ::kill(pids[std::uniform_int_distribution<size_t>(0, pids.size() - 1)(rng)], SIGKILL);
        ++f.kills_sent;
      }
      next_kill = now + std::chrono::duration<double>(o.kill_every_s * jitter(rng));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  f.err = ReadText(bg.err_path);
  // The job's memory timeline, a JSON object a line.
  std::ifstream timeline(output + ".timeline.jsonl");
  for (std::string line; std::getline(timeline, line);) {
    if (line.empty()) continue;
    const nlohmann::json e = nlohmann::json::parse(line);
    const std::string ev = e.value("event", "");
    if (ev == "recycle") ++f.recycles;
    if (ev == "crash") ++f.crashes;
    if (ev == "start") ++f.workers_started;
    f.worker_peak_rss_mb = std::max(f.worker_peak_rss_mb, e.value("rss_mb", 0.0));
    f.worker_peak_gpu_mb = std::max(f.worker_peak_gpu_mb, e.value("gpu_reserved_mb", 0.0));
  }
  return f;
}

void Print(const char* name, int64_t frames, const RunFigures& f) {
  std::printf("%-9s %8lld %8.1f %7.1f %9d %8d %7d %8d %11.1f %11.1f %10.1f\n", name,
              static_cast<long long>(frames), f.seconds, frames / f.seconds, f.workers_started,
              f.recycles, f.crashes, f.kills_sent, f.supervisor_peak_mb, f.worker_peak_rss_mb,
              f.worker_peak_gpu_mb);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--frames")
      o.frames = std::stoi(v);
    else if (k == "--size")
      std::sscanf(v.c_str(), "%dx%d", &o.width, &o.height);
    else if (k == "--workers")
      o.workers = std::stoi(v);
    else if (k == "--device")
      o.device = v;
    else if (k == "--rss-limit-mb")
      o.rss_limit_mb = std::stoi(v);
    else if (k == "--gpu-limit-mb")
      o.gpu_limit_mb = std::stoi(v);
    else if (k == "--kill-every")
      o.kill_every_s = std::stod(v);
    else if (k == "--dir")
      o.dir = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (o.dir.empty()) {
    char tmpl[] = "/tmp/framemill-soak-XXXXXX";
    o.dir = ::mkdtemp(tmpl);
  }
  std::filesystem::create_directories(o.dir);
  const int fps = 30;
  const std::string model = ExportModel("leak", o.dir);
  const int64_t base_frames = o.frames / 10;
  const std::string tag =
      std::to_string(o.frames) + "-" + std::to_string(o.width) + "x" + std::to_string(o.height);
  const std::string input = o.dir + "/in-" + tag + ".mp4",
                    base_input = o.dir + "/tenth-" + tag + ".mp4";
  std::printf("making %d frames %dx%d at %d fps with audio (and a tenth of it) in %s\n", o.frames,
              o.width, o.height, fps, o.dir.c_str());
  std::fflush(stdout);
  // A --dir of an earlier run keeps its videos (named by length and size): made once.
  if (!std::filesystem::exists(input)) MakeIndexVideo(input, o.frames, o.width, o.height, fps, 440);
  if (!std::filesystem::exists(base_input)) {
    MakeIndexVideo(base_input, static_cast<int>(base_frames), o.width, o.height, fps, 440);
  }

  RunFigures base = RunSoakJob(o, base_input, o.dir + "/tenth-out.mp4", model, false);
  RunFigures soak = RunSoakJob(o, input, o.dir + "/out.mp4", model, true);
  std::printf("model leak on %s, %d workers, recycle at %d MiB %s, a worker killed every ~%.0f s\n",
              o.device.c_str(), o.workers, o.gpu_limit_mb > 0 ? o.gpu_limit_mb : o.rss_limit_mb,
              o.gpu_limit_mb > 0 ? "GPU reserved" : "RSS", o.kill_every_s);
  std::printf("%-9s %8s %8s %7s %9s %8s %7s %8s %11s %11s %10s\n", "run", "frames", "seconds",
              "fps", "workers", "recycles", "crashes", "killed", "super. MiB", "worker MiB",
              "gpu MiB");
  Print("baseline", base_frames, base);
  Print("soak", o.frames, soak);

  bool ok = true;
  auto check = [&ok](bool cond, const std::string& what) {
    std::printf("%s %s\n", cond ? "ok  " : "FAIL", what.c_str());
    ok = ok && cond;
  };
  check(base.exit_code == 0, "baseline job succeeded" + (base.exit_code ? ": " + base.err : ""));
  check(soak.exit_code == 0, "soak job succeeded" + (soak.exit_code ? ": " + soak.err : ""));
  if (soak.exit_code == 0) {
    int64_t bad = Misplaced(o.dir + "/out.mp4", o.frames, o.dir + "/check-decode.log");
    check(bad == 0, "every frame exactly once, in order (misplaced: " +
                        (bad < 0 ? std::string("frame count differs") : std::to_string(bad)) + ")");
    double a_in = AudioSeconds(input), a_out = AudioSeconds(o.dir + "/out.mp4");
    char line[160];
    std::snprintf(line, sizeof(line), "audio %.3f s of %.3f s", a_out, a_in);
    check(a_out > 0 && std::fabs(a_out - a_in) < 0.05, line);
  }
  check(soak.recycles >= 12, "dozens of recycles (" + std::to_string(soak.recycles) + ")");
  double ratio =
      base.supervisor_peak_mb > 0 ? soak.supervisor_peak_mb / base.supervisor_peak_mb : 0;
  char line[160];
  std::snprintf(line, sizeof(line),
                "supervisor peak RSS %.1f MiB for %d frames vs %.1f MiB for "
                "%lld: %.2fx (target within 1.10x)",
                soak.supervisor_peak_mb, o.frames, base.supervisor_peak_mb,
                static_cast<long long>(base_frames), ratio);
  check(ratio > 0 && ratio <= 1.10, line);
  return ok ? 0 : 1;
}
