// `framemill run` keeps its work: stopped (SIGINT, SIGTERM) or killed (SIGKILL) at a random
// segment, the same command continues from the segments it kept, frame-exact, and says how many;
// a changed model starts over with a message, --fresh starts over on purpose, a second run of
// the same output is refused while the first runs, and a finished run leaves nothing behind.
// The real binaries on an index video with audio.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

using namespace framemill::test;

namespace {

constexpr int kFrames = 360, kW = 320, kH = 240;

struct Run {
  std::string dir, input, model, output, kept;
};

Run MakeRun(const std::string& name) {
  Run r;
  r.dir = ScratchDir(name);
  r.input = r.dir + "/in.mp4";
  r.output = r.dir + "/out.mp4";
  r.kept = r.dir + "/.out.mp4.framemill";
  MakeIndexVideo(r.input, kFrames, kW, kH, 25, 440);
  r.model = ModelCopy("identity", r.dir);
  std::ofstream(r.dir + "/config.json") << "{}";  // no system config's roots
  return r;
}

// `framemill run INPUT --model M --output O KEY=VALUE...`: segments of 24 frames (15 of them),
// one worker, lossless-enough x264 so that the index survives.
std::vector<std::string> RunArgs(const Run& r, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--config", r.dir + "/config.json", "run", r.input,
                                   "--model", r.model, "--output", r.output,
                                   "chunk_frames=8", "segment_seconds=0.96", "workers=1",
                                   "device=" + TestDevice(),
                                   R"(encoder={"preset":"ultrafast","crf":12})"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Finished segments the kept work's done-log lists (0 while there is none).
int KeptSegments(const Run& r) {
  std::ifstream in(r.kept + "/state.json");
  if (!in) return 0;
  try {
    return static_cast<int>(nlohmann::json::parse(in).value("segments_done", nlohmann::json::array()).size());
  } catch (const std::exception&) {
    return 0;  // caught between the temp file and the rename: read again
  }
}

// Starts the run and stops it with `sig` once `ready(its stderr)` holds (or it ended by itself,
// or 300 s passed). Returns what the run said.
RunResult Interrupt(const Run& r, int sig, const std::string& name,
                    const std::function<bool(const std::string&)>& ready) {
  BackgroundJob job = StartFramemill(r.dir, RunArgs(r), {}, name);
  KillOnExit guard{job};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  // (Waited for without reaping it: WaitJob takes its exit status below.)
  auto running = [&] {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(job.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == 0;
  };
  while (!ready(ReadFile(job.err_path)) && running() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(job.pid, sig);
  return WaitJob(job);
}

// Interrupt once a fresh run's done-log lists at least `segments` finished segments.
RunResult InterruptAt(const Run& r, int sig, int segments, const std::string& name) {
  return Interrupt(r, sig, name, [&](const std::string&) { return KeptSegments(r) >= segments; });
}

}  // namespace

TEST_CASE("run: stopped or killed at a random segment, the same command continues frame-exact") {
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::fprintf(stderr, "run resume: seed %u\n", seed);
  for (int sig : {SIGINT, SIGKILL}) {
    const Run r = MakeRun(sig == SIGINT ? "run_resume_int" : "run_resume_kill");
    const int at = std::uniform_int_distribution<int>(2, 9)(rng);
    INFO("signal " << sig << ", stopped after " << at << " segments (seed " << seed << ")");
    RunResult stopped = InterruptAt(r, sig, at, "first");
    INFO("first run: " << stopped.err);
    if (sig == SIGINT) {
      CHECK(stopped.exit_code == 130);
      CHECK(stopped.err.find("finished segments are kept in " + r.kept) != std::string::npos);
    } else {
      CHECK(stopped.exit_code == 128 + SIGKILL);
    }
    const int kept = KeptSegments(r);
    REQUIRE(kept >= at);
    struct stat st {};
    REQUIRE(::stat(r.kept.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(::access(r.output.c_str(), F_OK) != 0);  // no output until it is complete

    RunResult again = WaitJob(StartFramemill(r.dir, RunArgs(r), {}, "again"));
    INFO("second run: " << again.err);
    REQUIRE(again.exit_code == 0);
    CHECK(again.err.find("finished segments an earlier run kept in " + r.kept) !=
          std::string::npos);
    // It names what it kept: at least the segments the done-log listed when it was stopped.
    const size_t at_line = again.out.find("framemill: resumed: ");
    REQUIRE(at_line != std::string::npos);
    const int resumed = std::stoi(again.out.substr(at_line + 20));
    CHECK(resumed >= kept);
    CHECK(again.out.find(" of 15 segments (" + std::to_string(resumed * 24) + " frames) kept") !=
          std::string::npos);
    // Every frame once, in order, with the source's audio; nothing left behind.
    CHECK(OutOfPlace(FrameIndices(r.output, kW, kH), kFrames) == 0);
    CHECK(!FirstStream(Probe(r.output), "audio").is_null());
    CHECK(::access(r.kept.c_str(), F_OK) != 0);
    CHECK(SharedMemoryObjects().empty());
    CHECK(ProcessesMentioning(r.dir).empty());
  }
}

TEST_CASE("run: a changed model or --fresh starts over, and one output is rendered by one run") {
  const Run r = MakeRun("run_resume_changed");
  RunResult stopped = InterruptAt(r, SIGTERM, 3, "first");
  INFO("first run: " << stopped.err);
  REQUIRE(stopped.exit_code == 130);
  REQUIRE(KeptSegments(r) >= 3);

  // A second run of the same output while one runs is refused, and takes nothing of its work.
  {
    BackgroundJob running = StartFramemill(r.dir, RunArgs(r), {}, "running");
    KillOnExit guard{running};
    // It holds the kept work once it says it resumes from it.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (ReadFile(running.err_path).find("resuming:") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Held still (its lock held) while the second tries, so that it cannot finish meanwhile.
    ::kill(running.pid, SIGSTOP);
    RunResult second = WaitJob(StartFramemill(r.dir, RunArgs(r), {}, "second"));
    INFO("second run: " << second.err);
    CHECK(second.exit_code == 1);
    CHECK(second.err.find("another framemill run is writing this output") != std::string::npos);
    CHECK(second.err.find("are kept in") == std::string::npos);  // not its work to name
    ::kill(running.pid, SIGTERM);
    ::kill(running.pid, SIGCONT);
    CHECK(WaitJob(running).exit_code == 130);
  }
  REQUIRE(KeptSegments(r) >= 3);

  // The model file changed (a new modification time): the kept segments are not used.
  ::utimensat(AT_FDCWD, r.model.c_str(), nullptr, 0);
  const std::string kChanged =
      "the job's model changed since its finished segments were made; starting the job over";
  // Stopped once it started over (its done-log emptied) and finished a segment anew.
  bool emptied = false;
  RunResult changed = Interrupt(r, SIGTERM, "changed", [&](const std::string& err) {
    if (err.find(kChanged) == std::string::npos) return false;
    const int kept = KeptSegments(r);
    emptied = emptied || kept == 0;
    return emptied && kept >= 1;
  });
  INFO("changed model: " << changed.err);
  CHECK(changed.err.find(kChanged) != std::string::npos);
  CHECK(changed.err.find("resuming:") == std::string::npos);

  // --fresh starts over whatever was kept, and the run then finishes.
  REQUIRE(KeptSegments(r) >= 1);
  RunResult fresh = WaitJob(StartFramemill(r.dir, RunArgs(r, {"--fresh"}), {}, "fresh"));
  INFO("fresh: " << fresh.err);
  REQUIRE(fresh.exit_code == 0);
  CHECK(fresh.out.find("framemill: resumed:") == std::string::npos);
  CHECK(fresh.err.find("continuing from") == std::string::npos);
  CHECK(OutOfPlace(FrameIndices(r.output, kW, kH), kFrames) == 0);
  CHECK(::access(r.kept.c_str(), F_OK) != 0);

  // --json: the result document; -y replaces the output now there.
  RunResult json = WaitJob(StartFramemill(r.dir, RunArgs(r, {"--json", "-y"}), {}, "json"));
  INFO("json: " << json.err);
  REQUIRE(json.exit_code == 0);
  const nlohmann::json result = nlohmann::json::parse(json.out);
  CHECK(result["status"] == "done");
  CHECK(result["frames"] == kFrames);
  CHECK(result["output"] == r.output);
}
