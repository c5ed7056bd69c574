// framemill-night: a chaos soak. It runs `framemill serve` on a spool of its own for a given
// time and seed, feeds it a queue of mixed jobs (bench/night_jobs.h) and injects faults at
// random from the seed: worker SIGKILL and SIGSTOP, service SIGKILL and SIGTERM (it restarts the
// service as systemd would), decoder, encoder and mux ffmpeg kills, the output's, the spool's
// and /dev/shm's filesystems full and freed, a cancel and a retry. Then it lets the queue drain,
// stops the service and checks every job (a good one done and frame-exact with its audio, a bad
// one failed with its reason), that nothing is left in /dev/shm, no process is left and the
// spool is consistent. It prints every fault with its time, what it found, and the command that
// replays the seed. Exit 0 only if every check passes; 77 (skip) when it cannot isolate itself.
//
// Isolation: everything runs in a private mount namespace with its own tmpfs filesystems for the
// outputs, the spool and /dev/shm, under --dir; the night only signals processes below itself
// (it is a child subreaper). Needs root, ffmpeg, ffprobe and setpriv. Options: --help.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/night_arena.h"
#include "bench/night_jobs.h"
#include "bench/night_loop.h"
#include "bench/night_system.h"

namespace fs = std::filesystem;
using namespace framemill::night;

namespace {

// SIGINT or SIGTERM to the night: the faults stop, the service stops, the checks run (the flag
// only; the loop reads it).
volatile std::sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

void Usage() {
  std::printf(
      "usage: framemill-night [--minutes M] [--seed S] [--dir DIR] [--jobs N] [--bad N]\n"
      "         [--frames MIN-MAX] [--sizes WxH,WxH] [--cancels N] [--drain-minutes M]\n"
      "         [--no-space-wait S] [--device D] [--stop-any-worker] [--RATE R ...]\n"
      "RATE (faults per minute): ");
  for (int i = 0; i < kFaults; ++i) std::printf("--%s ", kFaultNames[i]);
  std::printf("\nDefaults: the short form (about a minute on 2 cores).\n");
}

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") return false;
    if (k == "--stop-any-worker") {
      o->stop_any_worker = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "framemill-night: %s needs a value\n", k.c_str());
      return false;
    }
    const std::string v = argv[++i];
    bool rate = false;
    for (int f = 0; f < kFaults; ++f) {
      if (k == std::string("--") + kFaultNames[f]) o->rates[f] = std::stod(v), rate = true;
    }
    if (rate) continue;
    if (k == "--minutes")
      o->minutes = std::stod(v);
    else if (k == "--drain-minutes")
      o->drain_minutes = std::stod(v);
    else if (k == "--seed")
      o->seed = std::stoull(v), o->seed_given = true;
    else if (k == "--dir")
      o->dir = v;
    else if (k == "--jobs")
      o->mix.good = std::stoi(v);
    else if (k == "--bad")
      o->mix.bad = std::stoi(v);
    else if (k == "--cancels")
      o->cancels = std::stoi(v);
    else if (k == "--no-space-wait")
      o->no_space_wait_s = std::stoi(v);
    else if (k == "--device")
      o->device = v;
    else if (k == "--frames")
      std::sscanf(v.c_str(), "%d-%d", &o->mix.min_frames, &o->mix.max_frames);
    else if (k == "--sizes") {
      o->mix.sizes.clear();
      for (size_t p = 0; p < v.size();) {
        int w = 0, h = 0;
        std::sscanf(v.c_str() + p, "%dx%d", &w, &h);
        if (w > 0 && h > 0) o->mix.sizes.push_back({w, h});
        const size_t comma = v.find(',', p);
        p = comma == std::string::npos ? v.size() : comma + 1;
      }
    } else {
      std::fprintf(stderr, "framemill-night: unknown option %s\n", k.c_str());
      return false;
    }
  }
  return !o->mix.sizes.empty() && o->mix.min_frames > 0 && o->mix.max_frames >= o->mix.min_frames;
}

// The command line that replays this night (same seed and settings; --dir left out).
std::string ReplayCommand(const char* argv0, const Options& o) {
  std::string c = std::string(argv0) + " --seed " + std::to_string(o.seed) + " --minutes " +
                  std::to_string(o.minutes) + " --drain-minutes " +
                  std::to_string(o.drain_minutes) + " --jobs " + std::to_string(o.mix.good) +
                  " --bad " + std::to_string(o.mix.bad) + " --frames " +
                  std::to_string(o.mix.min_frames) + "-" + std::to_string(o.mix.max_frames) +
                  " --sizes ";
  for (size_t i = 0; i < o.mix.sizes.size(); ++i) {
    c += (i ? "," : "") + std::to_string(o.mix.sizes[i].first) + "x" +
         std::to_string(o.mix.sizes[i].second);
  }
  c += " --cancels " + std::to_string(o.cancels) + " --device " + o.device;
  if (o.no_space_wait_s > 0) c += " --no-space-wait " + std::to_string(o.no_space_wait_s);
  if (o.stop_any_worker) c += " --stop-any-worker";
  for (int i = 0; i < kFaults; ++i) {
    char r[64];
    std::snprintf(r, sizeof(r), " --%s %g", kFaultNames[i], o.rates[i]);
    c += r;
  }
  return c;
}

// The jobs' chunk size; the arena and /dev/shm are sized for it (bench/night_arena.h).
constexpr int kChunkFrames = 8;

nlohmann::json Config(const Options& o, const Site& site) {
  nlohmann::json c = {{"spool_dir", site.spool},
                      {"rescan_interval_s", 1},
                      {"allowed_input_roots", {site.in}},
                      {"allowed_output_roots", {site.out}},
                      {"allowed_model_roots", {site.in}},
                      // The night restarts the service and kills workers and ffmpeg far more often
                      // than the defaults are meant for: the limits that give up are raised so that
                      // the faults exercise recovery (the give-up paths have tests of their own).
                      {"max_job_starts", 50},
                      {"decoder_restarts", 20},
                      {"crash_retries", 20},
                      {"worker_start_timeout_s", 60},
                      {"arena_mb", NightArenaMiB(o.mix.sizes, kChunkFrames)},
                      {"defaults",
                       {{"workers", 2},
                        {"chunk_frames", kChunkFrames},
                        {"segment_seconds", 1},
                        {"batch", 4},
                        {"device", o.device},
                        {"max_attempts", 100},
                        {"hang_timeout_s", 5},
                        {"encoder", {{"preset", "ultrafast"}}}}}};
  if (o.no_space_wait_s > 0) c["no_space_wait_s"] = o.no_space_wait_s;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    Usage();
    return 2;
  }
  if (!o.seed_given)
    o.seed = std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32);
  const std::string why = EnterPrivateMounts();
  if (!why.empty()) {
    std::printf("framemill-night: skipped: %s\n", why.c_str());
    return 77;
  }
  if (o.dir.empty()) {
    char tmpl[] = "/tmp/framemill-night-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return 1;
    o.dir = tmpl;
  }
  fs::create_directories(o.dir);
  // A --dir of an earlier night keeps its videos and models; its findings go.
  for (const char* sub : {"evidence", "logs", "scratch"}) fs::remove_all(o.dir + "/" + sub);
  ::chmod(o.dir.c_str(), 0755);  // the made-up users read inputs and models below it
  Site site;
  site.framemill = FRAMEMILL_BIN;
  site.spool = o.dir + "/spool";
  site.in = o.dir + "/in";
  site.out = o.dir + "/out/root";
  site.scratch = o.dir + "/scratch";
  site.config = o.dir + "/config.json";
  site.uids = {4242, 4343};
  for (const std::string& d : {site.scratch, o.dir + "/logs", site.in}) fs::create_directories(d);
  // The output's and the spool's filesystems, and /dev/shm: small tmpfs of the night's own.
  for (const auto& [path, mib, mode] : std::vector<std::tuple<std::string, int, mode_t>>{
           {o.dir + "/out", 48, 0755}, {site.spool, 48, 0755},
           {"/dev/shm", NightShmMiB(NightArenaMiB(o.mix.sizes, kChunkFrames)), 01777}}) {
    const std::string err = MountTmpfs(path, mib, mode);
    if (!err.empty()) {
      std::printf("framemill-night: skipped: %s\n", err.c_str());
      return 77;
    }
  }
  fs::create_directories(site.out);
  std::ofstream(site.config) << Config(o, site).dump(2);
  std::printf(
      "framemill-night: seed %llu, %.2f minutes of faults, %d good and %d bad jobs, in %s\n"
      "replay: %s\n",
      static_cast<unsigned long long>(o.seed), o.minutes, o.mix.good, o.mix.bad, o.dir.c_str(),
      ReplayCommand(argv[0], o).c_str());
  std::fflush(stdout);
  std::mt19937_64 mix_rng(o.seed);
  o.mix.submit_window_s = o.minutes * 60 * 0.8;
  std::vector<NightJob> jobs;
  try {
    jobs = MakeMix(site, o.mix, &mix_rng);
  } catch (const std::exception& e) {
    std::printf("framemill-night: cannot make the jobs: %s\n", e.what());
    return 1;
  }
  std::signal(SIGINT, OnStop);
  std::signal(SIGTERM, OnStop);
  const int rc = RunNight(o, site, std::move(jobs), &g_stop);
  std::printf("\n%s; seed %llu; replay: %s\n", rc == 0 ? "PASS" : "FAIL",
              static_cast<unsigned long long>(o.seed), ReplayCommand(argv[0], o).c_str());
  return rc;
}
