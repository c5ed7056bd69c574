// framemill serve on a real spool: draining good and bad jobs with systemd notifications,
// SIGKILL and SIGTERM mid-job with resume, cancellation, one supervisor per spool, a full disk,
// and the systemd unit.
#include <cstdint>
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <mutex>
#include <set>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "fault_harness.h"
#include "harness.h"
#include "service_harness.h"
#include "supervisor/report/job_result.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

// A Unix datagram socket that stands in for systemd's notify socket. Like systemd, it reads all
// the time: a reader that stops reading fills the socket's queue, and then the sender blocks.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    ::unlink(path.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    timeval tv{0, 100000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    reader_ = std::thread([this] {
      char buf[4096];
      while (!done_.load()) {
        ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
        if (n > 0) {
          std::lock_guard<std::mutex> lock(mu_);
          messages_.emplace_back(buf, n);
        }
      }
    });
  }
  ~NotifySocket() {
    done_.store(true);
    reader_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int Count(const std::string& needle) {
    std::lock_guard<std::mutex> lock(mu_);
    int c = 0;
    for (const std::string& m : messages_) c += m.find(needle) != std::string::npos;
    return c;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::vector<std::string> messages_;
  std::thread reader_;
};

int SegmentsDone(const std::string& state_path) {
  nlohmann::json st = ReadJson(state_path);
  if (!st.is_object()) return 0;
  return static_cast<int>(st.value("segments_done", nlohmann::json::array()).size());
}

std::pair<ino_t, int64_t> InodeAndMtime(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return {st.st_ino, static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// The result.json of a job the service finished, checked: done, and its output
// out/<id>.mp4 has `frames` frames.
nlohmann::json DoneResult(const Service& s, const std::string& id, int64_t frames) {
  nlohmann::json r = ReadJson(s.spool + "/done/" + id + "/result.json");
  INFO(id << ": " << r.dump());
  REQUIRE(r.is_object());
  CHECK(r["status"] == "done");
  CHECK(CountFrames(s.dir + "/out/" + id + ".mp4") == frames);
  return r;
}

// A service with two models (identity, invert), a 24-frame input and out/, not yet started.
struct TwoModels {
  Service s;
  std::string identity, invert, input;
};
TwoModels MakeTwoModels(const std::string& name) {
  TwoModels t;
  t.s = MakeService(name);
  t.identity = ModelCopy("identity", t.s.dir);
  t.invert = ModelCopy("invert", t.s.dir);
  t.input = SmallVideo(t.s.dir, 24);
  fs::create_directories(t.s.dir + "/out");
  return t;
}

// Drops job `id` (`input` through `model`, one worker, out/<id>.mp4) and waits for it to be
// done: its result.json, checked as DoneResult does.
nlohmann::json RunOneWorker(const Service& s, const std::string& id, const std::string& input,
                            const std::string& model, int64_t frames) {
  Drop(s, id,
       nlohmann::json{{"input", input},
                      {"output", s.dir + "/out/" + id + ".mp4"},
                      {"model", model},
                      {"workers", 1}}
           .dump());
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/" + id + "/result.json"); }, 60));
  return DoneResult(s, id, frames);
}

}  // namespace

TEST_CASE("service: drains 18 jobs, good ones to done/, bad ones to failed/ with their reason") {
  Service s = MakeService("svc_drain");
  NotifySocket notify(s.dir + "/notify.sock");
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 40);
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve =
      Serve(s, {{"NOTIFY_SOCKET", s.dir + "/notify.sock"}, {"WATCHDOG_USEC", "1000000"}});
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil([&] { return notify.Count("READY=1") == 1; }, 20));

  auto job = [&](const std::string& out) {
    return nlohmann::json{{"input", input}, {"output", s.dir + "/out/" + out}, {"model", model}};
  };
  const int kGood = 10;
  for (int i = 0; i < kGood; ++i)
    Drop(s, "good" + std::to_string(i), job("good" + std::to_string(i) + ".mp4").dump());
  std::map<std::string, std::string> bad_reason;
  Drop(s, "malformed", "{\"input\": ");
  bad_reason["malformed"] = "invalid_job";
  nlohmann::json j = job("x1.mp4");
  j["chunk_size"] = 8;
  Drop(s, "unknown_key", j.dump());
  bad_reason["unknown_key"] = "invalid_job";
  j = job("x2.mp4");
  j["input"] = s.dir + "/absent.mp4";
  Drop(s, "missing_input", j.dump());
  bad_reason["missing_input"] = "input_missing";
  std::ofstream(s.dir + "/corrupt.mp4") << std::string(50000, 'x');
  j = job("x3.mp4");
  j["input"] = s.dir + "/corrupt.mp4";
  Drop(s, "corrupt_video", j.dump());
  bad_reason["corrupt_video"] = "input_invalid";
  j = job("x4.mp4");
  j["output"] = "/tmp/framemill-outside-" + std::to_string(::getpid()) + ".mp4";
  Drop(s, "outside_roots", j.dump());
  bad_reason["outside_roots"] = "path_not_allowed";
  std::ofstream(s.dir + "/out/exists.mp4") << "keep me";
  Drop(s, "output_exists", job("exists.mp4").dump());
  bad_reason["output_exists"] = "output_invalid";
  std::ofstream(s.dir + "/broken.pt") << "not a model";
  j = job("x5.mp4");
  j["model"] = s.dir + "/broken.pt";
  Drop(s, "broken_model", j.dump());
  bad_reason["broken_model"] = "model_invalid";
  j = job("x6.mp4");
  j["workers"] = 1000000;
  Drop(s, "absurd_workers", j.dump());
  bad_reason["absurd_workers"] = "invalid_job";
  std::ofstream(s.spool + "/incoming/notes.txt") << "not a job";  // ignored: not .json

  const size_t total = kGood + bad_reason.size();
  REQUIRE(WaitUntil(
      [&] {
        size_t n = 0;
        for (const char* d : {"/done", "/failed"}) {
          if (fs::exists(s.spool + d)) n += std::distance(fs::directory_iterator(s.spool + d), {});
        }
        return n == total;
      },
      400));

  int started = 0, timed = 0;
  for (int i = 0; i < kGood; ++i) {
    std::string id = "good" + std::to_string(i);
    nlohmann::json r = DoneResult(s, id, 40);
    INFO(id << ": " << r.dump());
    started += r["workers_started"].get<int>();
    // Where the time went: every stage of a job that decoded, ran and encoded 40 frames did work.
    const nlohmann::json& st = r["stages"];
    // Some of the decoding may be done while the workers start (decode_early_s, of start_s).
    CHECK(st["decode_s"].get<double>() + st["decode_early_s"].get<double>() > 0);
    CHECK(st["workers_busy_s"].get<double>() > 0);
    CHECK(st["encode_s"].get<double>() > 0);
    CHECK(st["pipeline_s"].get<double>() >= st["decode_s"].get<double>());
    CHECK(st["start_s"].get<double>() >= st["decode_early_s"].get<double>());
    // The encoders' trail after the workers' last chunk is part of the pipeline: its last
    // segment is closed after that chunk, so it is never 0.
    CHECK(st["tail_s"].get<double>() > 0);
    CHECK(st["tail_s"].get<double>() <= st["pipeline_s"].get<double>());
    // color_conversion auto: the source's YUV to the workers, on a CPU too (the worker converts
    // it back to YUV for the encoder).
    CHECK(r["worker_input_format"] == "yuv420p");
    // Workers started by a job are timed once ready (a job that ends on the workers it kept
    // before its top-up is ready has none to time: counted below); every job ran chunks.
    const nlohmann::json& ws = r["worker_start"];
    if (ws["ready_median_ms"].get<double>() > 0) ++timed;
    CHECK(ws["first_chunk_median_ms"].get<double>() + ws["later_chunk_mean_ms"].get<double>() > 0);
  }
  // Jobs with the same model share loaded workers: 10 jobs do not start 20 workers.
  CHECK(started <= 4);
  CHECK(timed >= 1);  // the first job waited for the workers it started
  for (const auto& [id, reason] : bad_reason) {
    nlohmann::json r = ReadJson(s.spool + "/failed/" + id + "/result.json");
    INFO(id << ": " << r.dump());
    REQUIRE(r.is_object());
    CHECK(r["reason"]["code"] == reason);
  }
  CHECK(fs::exists(s.spool + "/incoming/notes.txt"));
  std::ifstream kept(s.dir + "/out/exists.mp4");
  std::string content;
  kept >> content;
  CHECK(content == "keep");

  // Still up, still working: a job submitted through the client runs too.
  CHECK(::kill(serve.pid, 0) == 0);
  RunResult sub = Cli(
      s, "submit '" + input + "' --model '" + model + "' --output '" + s.dir + "/out/late.mp4'");
  REQUIRE(sub.exit_code == 0);
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  CHECK(WaitUntil([&] { return fs::exists(s.spool + "/done/" + id + "/result.json"); }, 60));
  // An ended job's status: a short summary; the whole result.json with --json.
  RunResult st = Cli(s, "status " + id);
  CHECK(st.exit_code == 0);
  CHECK(st.out.find(id + ": done: " + s.dir + "/out/late.mp4") != std::string::npos);
  RunResult st_json = Cli(s, "status " + id + " --json");
  CHECK(st_json.out.find("\"status\": \"done\"") != std::string::npos);
  CHECK(Cli(s, "status no-such-job").exit_code == 3);

  CHECK(notify.Count("WATCHDOG=1") >= 2);
  CHECK(notify.Count("STATUS=") >= 1);
  ::kill(serve.pid, SIGTERM);
  RunResult end = WaitJob(serve, 60);
  CHECK(end.exit_code == 0);
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(s.dir).empty());
}

TEST_CASE("service: result.json says how long a job waited for its workers and if they were warm") {
  const TwoModels t = MakeTwoModels("svc_warm_wait");
  const Service& s = t.s;
  const std::string &identity = t.identity, &invert = t.invert, &input = t.input;
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  // One job at a time, so that each finds what the one before left.
  auto run = [&](const std::string& id, const std::string& model) {
    return RunOneWorker(s, id, input, model, 24);
  };
  const nlohmann::json cold = run("cold", identity);
  const nlohmann::json warm = run("warm", identity);  // same model: the loaded worker goes on
  const nlohmann::json other = run("other", invert);  // another model: a worker is started
  INFO(cold.dump() << "\n" << warm.dump() << "\n" << other.dump());
  CHECK(cold["workers_warm"] == false);
  CHECK(warm["workers_warm"] == true);
  CHECK(other["workers_warm"] == false);
  CHECK(warm["workers_started"] == 0);
  CHECK(other["workers_started"] == 1);
  // A warm job does not wait for a model load; a cold one does (spawn, sandbox, load, probe).
  CHECK(warm["workers_wait_s"].get<double>() < cold["workers_wait_s"].get<double>());
  CHECK(warm["workers_wait_s"].get<double>() < other["workers_wait_s"].get<double>());
  for (const nlohmann::json* r : {&cold, &warm, &other}) {
    const nlohmann::json& st = (*r)["stages"];
    CHECK(st["workers_wait_s"] == (*r)["workers_wait_s"]);
    CHECK(st["workers_wait_s"].get<double>() <= st["start_s"].get<double>());  // a part of it
  }
  CHECK(cold["workers_wait_s"].get<double>() > 0);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}

TEST_CASE("service: a warm job takes the previous job's arena, another frame size gets its own") {
  Service s = MakeService("svc_kept_arena");
  const std::string identity = ModelCopy("identity", s.dir);
  const std::string invert = ModelCopy("invert", s.dir);
  const std::string upscale = ModelCopy("upscale2x", s.dir);  // no card: its scale is unknown
  const std::string longer = SmallVideo(s.dir, 48);
  // Frames 24-47 of it: at the start of the next job's slots, where the previous job left
  // frames 0-23. An arena not written over would show those.
  const std::string later = s.dir + "/later-24.mp4";
  RunResult cut = Shell("ffmpeg -nostdin -v error -y -i " + longer +
                        " -vf 'select=gte(n\\,24),setpts=N/25/TB' -an -c:v libx264 -crf 10 " +
                        later);
  REQUIRE_MESSAGE(cut.exit_code == 0, cut.err);
  const std::string shorter = SmallVideo(s.dir, 24);
  const std::string wider = SmallVideo(s.dir, 24, 192, 128);
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  // The arenas the service holds in /dev/shm.
  auto arenas = [&] {
    int n = 0;
    for (const std::string& o : SharedMemoryObjectsOf(serve.pid)) {
      n += o.find("/arena-") != std::string::npos;
    }
    return n;
  };
  // Runs a job; with `first_index` >= 0 its frames must show first_index, first_index + 1, ...
  auto run = [&](const std::string& id, const std::string& input, const std::string& model,
                 int frames, int width, int first_index) {
    Drop(s, id,
         nlohmann::json{{"input", input},
                        {"output", s.dir + "/out/" + id + ".mp4"},
                        {"model", model},
                        {"device", "cpu"},  // explicit: a cold job's arena is guessed
                        {"workers", 1}}
             .dump());
    REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/" + id + "/result.json"); }, 60));
    nlohmann::json r = DoneResult(s, id, frames);
    if (first_index >= 0) {  // whatever arena the job ran in, its frames are its input's
      const std::vector<int> got = FrameIndices(s.dir + "/out/" + id + ".mp4", width, 128);
      std::vector<int> want(frames);
      for (int i = 0; i < frames; ++i) want[i] = first_index + i;
      CHECK(got == want);
    }
    CHECK(arenas() == 1);  // the one kept with the idle workers; an unfit one is removed
    return r;
  };
  const nlohmann::json first = run("first", longer, identity, 48, 160, 0);
  const nlohmann::json again = run("again", later, identity, 24, 160, 24);
  const nlohmann::json wide = run("wide", wider, identity, 24, 192, 0);
  const nlohmann::json other = run("other", shorter, invert, 24, 160, -1);
  const nlohmann::json up1 = run("up1", shorter, upscale, 24, 320, -1);
  const nlohmann::json up2 = run("up2", shorter, upscale, 24, 320, -1);
  INFO(first.dump() << "\n" << again.dump() << "\n" << wide.dump() << "\n" << other.dump()
                    << "\n" << up1.dump() << "\n" << up2.dump());
  CHECK(first["arena"] == "early");  // made while its workers started
  // The same workers, and the same frames in fewer chunks: the arena they already had.
  CHECK(again["workers_warm"] == true);
  CHECK(again["arena"] == "kept");
  // The same workers, but wider frames: an arena of its own (the kept one gone first).
  CHECK(wide["workers_warm"] == true);
  CHECK(wide["arena"] == "made");
  // Other workers never get an arena another model's workers had.
  CHECK(other["workers_warm"] == false);
  CHECK(other["arena"] == "early");
  // A model of unknown scale: the first guess is wrong (1x), but its warm job keeps the 2x
  // arena, which only the probe, not the guess, can confirm.
  CHECK(up1["arena"] == "made");
  CHECK(up2["workers_warm"] == true);
  CHECK(up2["arena"] == "kept");
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  CHECK(SharedMemoryObjectsOf(serve.pid).empty());
}

TEST_CASE("service: a worker still loading when a short job ends is kept for the next ones") {
  Service s = MakeService("svc_slow_load", WithFaultWorker());
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 40);
  fs::create_directories(s.dir + "/out");
  // One of the first job's two workers takes 10 s more to load than the job lasts: without
  // keeping it, every job would start a worker and kill it while it loads. (With 2.5 s, a job
  // on a busy 2-core machine outlasted the slow load, and the test failed.)
  BackgroundJob serve =
      Serve(s, {{"FRAMEMILL_TEST_FAULT", "slowload:10000@0,once=" + s.dir + "/slow"}});
  KillOnExit guard_serve{serve};
  const int kJobs = 5;
  for (int i = 0; i < kJobs; ++i) {
    std::string id = "short" + std::to_string(i);
    Drop(s, id,
         nlohmann::json{{"input", input},
                        {"output", s.dir + "/out/" + id + ".mp4"},
                        {"model", model},
                        {"workers", 2}}
             .dump());
  }
  REQUIRE(WaitUntil(
      [&] {
        return fs::exists(s.spool + "/done") &&
               std::distance(fs::directory_iterator(s.spool + "/done"), {}) == kJobs;
      },
      120));
  int started = 0, adopted_loading = 0;
  for (int i = 0; i < kJobs; ++i) {
    std::string id = "short" + std::to_string(i);
    nlohmann::json r = DoneResult(s, id, 40);
    INFO(id << ": " << r.dump());
    started += r["workers_started"].get<int>();
    std::ifstream timeline(s.spool + "/done/" + id + "/timeline.jsonl");
    for (std::string line; std::getline(timeline, line);) {
      if (line.find("still loading, kept from the previous job") != std::string::npos) {
        ++adopted_loading;
      }
    }
  }
  CHECK(FaultFired(s.dir + "/slow"));  // the slow load happened
  CHECK(adopted_loading >= 1);         // a later job took the loading worker over
  CHECK(started == 2);                 // and no job started (and killed) another
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}

namespace {

// With its service stopped or dead, job `id` is shown as interrupted, with what it had done and
// no rate or ETA; the spool as served by nobody.
void CheckShownInterrupted(const Service& s, const std::string& id) {
  RunResult one = Cli(s, "status " + id);
  INFO(one.out << one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.out.find(id + ": interrupted: no framemill service is running on this spool") !=
        std::string::npos);
  CHECK(one.out.find("ETA") == std::string::npos);
  CHECK(one.out.find("fps") == std::string::npos);
  RunResult all = Cli(s, "status");
  CHECK(all.out.find("no service running") != std::string::npos);
  CHECK(all.out.find("ETA") == std::string::npos);
  RunResult list = Cli(s, "list");
  CHECK(list.out.find("interrupted") != std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(Cli(s, "status " + id + " --json").out);
  CHECK(json["state"] == "active");
  CHECK(json["service_pid"].is_null());
}

}  // namespace

TEST_CASE(
    "service: SIGKILL mid-job, restart: finished segments are kept as they are and the "
    "output is frame-exact") {
  Service s = MakeService("svc_kill_resume");
  // Long enough that the restart still works when the kept segments are looked at (it is killed
  // after 3 segments, and they are looked at after 2 more).
  const int kFrames = 1200;
  const std::string input = s.dir + "/long.mp4";
  MakeIndexVideo(input, kFrames, 320, 240, 25, 330);
  nlohmann::json job = {{"input", input},
                        {"output", s.dir + "/out.mp4"},
                        {"model", ModelCopy("identity", s.dir)},
                        {"chunk_frames", 25},
                        {"segment_seconds", 4},
                        {"color_conversion", "accurate"},  // rgb24 frames to the workers
                        {"batch", 2}};                     // 12 segments of 100 frames
  Drop(s, "long", job.dump());
  const std::string work = s.spool + "/active/long/work";
  BackgroundJob first = Serve(s);
  KillOnExit guard_first{first};
  REQUIRE(WaitUntil([&] { return SegmentsDone(work + "/state.json") >= 3; }, 120));
  // The output is being joined beside the render, by an ffmpeg of the service's, into a partial
  // output beside the output.
  const std::vector<int> joining = ChildrenMentioning(first.pid, "live.ffconcat");
  CHECK(joining.size() == 1);
  CHECK(PartialOutputs(s.dir) == 1);
  ::kill(first.pid, SIGKILL);
  WaitJob(first, 10);
  // The joining ffmpeg dies with the service (it would wait for its next segment forever).
  for (int pid : joining) {
    CHECK(WaitUntil(
        [&] {
          const std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
          return stat.empty() || stat.find(") Z") != std::string::npos;
        },
        10));
  }
  const int kept = SegmentsDone(work + "/state.json");
  std::vector<std::pair<ino_t, int64_t>> before;
  for (int i = 0; i < kept; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "/segment_%06d.nut", i);
    before.push_back(InodeAndMtime(work + name));
  }
  CHECK(WaitUntil([&] { return WorkerPids(s.dir).empty(); }, 10));
  CheckShownInterrupted(s, "long");

  BackgroundJob second = Serve(s, {}, "serve2");

  KillOnExit guard_second{second};
  // While it works on, the segments from before the kill must stay untouched.
  REQUIRE(WaitUntil(
      [&] {
        return SegmentsDone(work + "/state.json") >= kept + 2 || fs::exists(s.spool + "/done/long");
      },
      120));
  // Served again: shown as active, by the new service.
  if (nlohmann::json st = nlohmann::json::parse(Cli(s, "status long --json").out, nullptr, false);
      st.is_object() && st.value("state", "") == "active") {
    CHECK(st["service_pid"] == second.pid);
  }
  if (fs::exists(work)) {
    for (int i = 0; i < kept; ++i) {
      char name[64];
      std::snprintf(name, sizeof(name), "/segment_%06d.nut", i);
      CHECK(InodeAndMtime(work + name) == before[i]);
    }
  }
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/long/result.json"); }, 300));
  nlohmann::json r = ReadJson(s.spool + "/done/long/result.json");
  CHECK(r["segments_resumed"].get<int>() >= kept);
  CHECK(OutOfPlace(FrameIndices(s.dir + "/out.mp4", 320, 240), kFrames) == 0);
  // The restart joined beside its render too, and removed the killed run's partial output.
  CHECK(r["mux"] == "live");
  CHECK(PartialOutputs(s.dir) == 0);
  ::kill(second.pid, SIGTERM);
  CHECK(WaitJob(second, 60).exit_code == 0);
  CHECK(SharedMemoryObjects().empty());
}

TEST_CASE("service: SIGTERM mid-job exits 0 with nothing left running, and the restart finishes") {
  Service s = MakeService("svc_sigterm");
  const std::string input = s.dir + "/long.mp4";
  // Stopped once its first segment is done: 600 frames leave the restart most of the job.
  const int kFrames = 600;
  MakeIndexVideo(input, kFrames, 320, 240, 25, 0);
  // Two encoders: segments finish out of order, and the state keeps only those from the first on.
  // YUV frames to the workers: the restart skips the finished frames in that format (the SIGKILL
  // test above resumes with rgb24).
  nlohmann::json job = {{"input", input},
                        {"output", s.dir + "/out.mp4"},
                        {"model", ModelCopy("identity", s.dir)},
                        {"segment_seconds", 4},
                        {"batch", 2},
                        {"encoders", 2},
                        {"color_conversion", "device"}};
  Drop(s, "j", job.dump());
  BackgroundJob first = Serve(s);
  KillOnExit guard_first{first};
  REQUIRE(WaitUntil([&] { return SegmentsDone(s.spool + "/active/j/work/state.json") >= 1; }, 120));
  ::kill(first.pid, SIGTERM);
  RunResult stopped = WaitJob(first, 30);  // well within TimeoutStopSec
  INFO(stopped.err);
  CHECK(stopped.exit_code == 0);
  CHECK(WorkerPids(s.dir).empty());
  CHECK(SharedMemoryObjects().empty());
  CHECK(fs::exists(s.spool + "/active/j/job.json"));
  CheckShownInterrupted(s, "j");
  nlohmann::json state = ReadJson(s.spool + "/active/j/work/state.json");
  int expected = 0;
  for (const nlohmann::json& seg : state["segments_done"])
    CHECK(seg["index"].get<int>() == expected++);

  BackgroundJob second = Serve(s, {}, "serve2");

  KillOnExit guard_second{second};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/j/result.json"); }, 300));
  CHECK(OutOfPlace(FrameIndices(s.dir + "/out.mp4", 320, 240), kFrames) == 0);
  nlohmann::json result = ReadJson(s.spool + "/done/j/result.json");
  CHECK(result["worker_input_format"] == "yuv420p");
  CHECK(result["segments_resumed"].get<int>() >= 1);
  ::kill(second.pid, SIGTERM);
  CHECK(WaitJob(second, 60).exit_code == 0);
}

TEST_CASE(
    "service: a job whose service died after placing its output and before filing it finds its "
    "own output and ends done, while another file at the name is still refused") {
  Service s = MakeService("svc_placed");
  const std::string input = SmallVideo(s.dir, 24);
  const std::string model = ModelCopy("identity", s.dir);
  auto job = [&](const std::string& out) {
    return nlohmann::json{{"input", input}, {"output", out}, {"model", model}}.dump();
  };
  Drop(s, "j", job(s.dir + "/out.mp4"));
  BackgroundJob first = Serve(s);
  KillOnExit guard_first{first};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/j/result.json"); }, 120));
  ::kill(first.pid, SIGTERM);
  REQUIRE(WaitJob(first, 30).exit_code == 0);
  // What a SIGKILL between the output's rename and result.json leaves: the job active, its
  // workspace's note naming the placed output (written before the rename).
  fs::rename(s.spool + "/done/j", s.spool + "/active/j");
  fs::remove(s.spool + "/active/j/result.json");
  struct stat out {};
  REQUIRE(::stat((s.dir + "/out.mp4").c_str(), &out) == 0);
  fs::create_directories(s.spool + "/active/j/work");
  std::ofstream(s.spool + "/active/j/work/placed-output.note")
      << out.st_dev << " " << out.st_ino << "\n";
  // Another job whose output name holds a file it did not place, with a note of another file.
  std::ofstream(s.dir + "/theirs.mp4") << "someone else's file";
  Drop(s, "k", job(s.dir + "/theirs.mp4"));
  BackgroundJob second = Serve(s, {}, "serve2");
  KillOnExit guard_second{second};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/j/result.json") &&
                                 fs::exists(s.spool + "/failed/k/result.json"); }, 120));
  CHECK(CountFrames(s.dir + "/out.mp4") == 24);
  CHECK(ReadJson(s.spool + "/failed/k/result.json")["reason"]["code"] == "output_invalid");
  CHECK(ReadText(s.dir + "/theirs.mp4") == "someone else's file");
  ::kill(second.pid, SIGTERM);
  CHECK(WaitJob(second, 30).exit_code == 0);
}

TEST_CASE("service: a second supervisor on the same spool is refused") {
  Service s = MakeService("svc_second");
  BackgroundJob first = Serve(s);
  KillOnExit guard_first{first};
  // The first holds the lock once its pid is in the lock file (written after the flock).
  const std::string first_pid = std::to_string(first.pid);
  REQUIRE(WaitUntil([&] { return ReadText(s.spool + "/lock") == first_pid; }, 20));
  BackgroundJob second = Serve(s, {}, "serve2");
  KillOnExit guard_second{second};
  RunResult r = WaitJob(second, 20);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("already served by another framemill (pid " + first_pid + ")") !=
        std::string::npos);
  CHECK(::kill(first.pid, 0) == 0);
  ::kill(first.pid, SIGTERM);
  CHECK(WaitJob(first, 30).exit_code == 0);
}

TEST_CASE("service: cancel stops a running job, files it as cancelled and removes its files") {
  // Its pace is set, not the machine's: every batch of 2 sleeps 20 ms (slowbatch), so the job
  // runs 15 s or more (a fast 2-core machine ran its 1,500 frames in 1.1 s, before `status`
  // caught it running).
  Service s = MakeService("svc_cancel", WithFaultWorker());
  const std::string input = s.dir + "/long.mp4";
  MakeIndexVideo(input, 1500, 320, 240, 25, 0);
  BackgroundJob serve = Serve(s, {{"FRAMEMILL_TEST_FAULT", "slowbatch:20"}});
  KillOnExit guard_serve{serve};
  // The spool is made by the service (or tmpfiles.d): submit only writes into it.
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/lock"); }, 20));
  RunResult sub = Cli(s, "submit '" + input + "' --model '" + ModelCopy("identity", s.dir) +
                             "' --output '" + s.dir + "/out.mp4' batch=2");
  INFO("submit: " << sub.err);
  REQUIRE(sub.exit_code == 0);
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  // progress.json comes while the workers start (no workers in it yet), then with them.
  RunResult st;
  REQUIRE(WaitUntil(
      [&] {
        st = Cli(s, "status");  // queue, progress and the workers' memory
        return st.out.find("rss") != std::string::npos;
      },
      60));
  CHECK(st.exit_code == 0);
  CHECK(st.out.find("1 active") != std::string::npos);
  CHECK(st.out.find(id + ": ") != std::string::npos);
  CHECK(st.out.find("rss") != std::string::npos);
  RunResult c = Cli(s, "cancel " + id);
  CHECK(c.exit_code == 0);
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/" + id + "/result.json"); }, 60));
  nlohmann::json r = ReadJson(s.spool + "/failed/" + id + "/result.json");
  CHECK(r["reason"]["code"] == "cancelled");
  CHECK_FALSE(fs::exists(s.spool + "/failed/" + id + "/work"));
  CHECK_FALSE(fs::exists(s.dir + "/out.mp4"));
  CHECK(WaitUntil([&] { return WorkerPids(s.dir).empty(); }, 10));
  CHECK(Cli(s, "cancel " + id).exit_code == 1);  // already ended
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "service: a job that cannot fit on its disk waits no_space_wait_s, then fails with no_space "
    "and the service goes on") {
  Service s = MakeService("svc_no_space", {{"no_space_wait_s", 2}});
  const std::string small = s.dir + "/small-disk";
  fs::create_directories(small);
  if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=256k") != 0) {
    SkipTest(std::string("cannot mount a tmpfs here (") + std::strerror(errno) +
             "); the full-disk test needs root");
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{small};
  const std::string model = ModelCopy("identity", s.dir);
  Drop(s, "too_big",
       nlohmann::json{
           {"input", TestClip("d20.mp4")}, {"output", small + "/out.mp4"}, {"model", model}}
           .dump());
  Drop(s, "fits",
       nlohmann::json{
           {"input", SmallVideo(s.dir, 40)}, {"output", s.dir + "/fits.mp4"}, {"model", model}}
           .dump());
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil(
      [&] {
        return fs::exists(s.spool + "/failed/too_big/result.json") &&
               fs::exists(s.spool + "/done/fits/result.json");
      },
      120));
  nlohmann::json r = ReadJson(s.spool + "/failed/too_big/result.json");
  CHECK(r["reason"]["code"] == "no_space");
  CHECK(r["reason"]["message"].get<std::string>().find("waited for space") != std::string::npos);
  CHECK(ListDir(small).empty());  // nothing half-written on the full disk
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE("service: the systemd unit passes systemd-analyze verify") {
  std::string dir = ScratchDir("svc_unit");
  std::ifstream in(std::string(FRAMEMILL_SOURCE_DIR) + "/systemd/framemill.service");
  std::stringstream unit;
  unit << in.rdbuf();
  std::string text = unit.str();
  // Point ExecStart at the binary under test (verify checks that it exists).
  std::string from = "/usr/bin/framemill";
  text.replace(text.find(from), from.size(), FRAMEMILL_BIN);
  std::ofstream(dir + "/framemill.service") << text;
  RunResult r = Shell("systemd-analyze verify '" + dir + "/framemill.service'");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());  // unknown keys and bad values are only warnings: none allowed
}

TEST_CASE("service: serve refuses to start without roots unless allow_any_path says so") {
  for (const char* key : {"allowed_input_roots", "allowed_output_roots", "allowed_model_roots"}) {
    Service s = MakeService("svc_no_roots", {{key, nlohmann::json::array()}});
    BackgroundJob serve = Serve(s);
    KillOnExit guard{serve};
    RunResult r = WaitJob(serve, 30);
    INFO(key << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("allow_any_path") != std::string::npos);
    CHECK_FALSE(fs::exists(s.spool + "/lock"));  // refused before it touched the spool
  }
  Service s = MakeService("svc_any_path", {{"allowed_input_roots", nlohmann::json::array()},
                                           {"allowed_output_roots", nullptr},
                                           {"allowed_model_roots", nullptr},
                                           {"allow_any_path", true}});
  const std::string out = ScratchDir("svc_any_path_out") + "/out.mp4";  // outside the dir
  Drop(s, "anywhere",
       nlohmann::json{{"input", SmallVideo(s.dir, 32, 64, 48)},
                      {"output", out},
                      {"model", ModelCopy("identity", s.dir)}}
           .dump());
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  CHECK(WaitUntil([&] { return fs::exists(s.spool + "/done/anywhere/result.json"); }, 60));
  CHECK(CountFrames(out) == 32);
  CHECK(CountLines(ReadText(s.dir + "/serve.stderr"), "jobs may name any path") == 1);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}

TEST_CASE(
    "service: a CPU worker's tensors take the blocks its earlier batches freed, and its log says "
    "so") {
  // worker/batch/cpu_allocator.h: without the worker's own CPU allocator, every batch's tensors
  // land on fresh pages. Its count at the worker's end shows that it is installed and reusing.
  Service s = MakeService("svc_cpu_blocks", {{"spare_workers", false}});
  Drop(s, "blocks",
       nlohmann::json{{"input", SmallVideo(s.dir, 64, 320, 240)},
                      {"output", s.dir + "/out.mp4"},
                      {"model", ModelCopy("identity", s.dir)},
                      {"device", "cpu"},
                      {"workers", 1},
                      {"batch", 4},
                      {"chunk_frames", 16}}
           .dump());
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE_MESSAGE(WaitUntil([&] { return fs::exists(s.spool + "/done/blocks/result.json"); }, 120),
                  ReadText(s.dir + "/serve.stderr"));
  CHECK(CountFrames(s.dir + "/out.mp4") == 64);
  ::kill(serve.pid, SIGTERM);  // the service stops its warm worker, which then logs its count
  REQUIRE(WaitJob(serve, 30).exit_code == 0);
  const std::string log = ReadText(s.spool + "/workers/worker-0-1.log");
  INFO(log);
  const size_t at = log.find("CPU tensors: ");
  REQUIRE(at != std::string::npos);
  long reused = -1, asked = -1;
  REQUIRE(std::sscanf(log.c_str() + at, "CPU tensors: %ld of %ld", &reused, &asked) == 2);
  // 4 chunks of 4 batches of 4 frames: the first batch's blocks come from the C library, the
  // other 15 batches' from the cache.
  CHECK(asked >= 16);
  CHECK(reused >= asked * 3 / 4);
}

TEST_CASE(
    "service: a spare worker started before the job loads its model, and a killed one is replaced "
    "later") {
  const TwoModels t = MakeTwoModels("svc_spare");
  const Service& s = t.s;
  const std::string &identity = t.identity, &invert = t.invert, &input = t.input;
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  const std::string logs = s.spool + "/workers";
  auto spare_waiting = [&](int generation) {
    return WaitUntil(
        [&] {
          return ReadText(logs + "/spare-0-" + std::to_string(generation) + ".log")
                     .find("waiting for a job's model") != std::string::npos;
        },
        60);
  };
  // Started with the service, before any job: its own process, without a model.
  REQUIRE_MESSAGE(spare_waiting(1), ReadText(s.dir + "/serve.stderr"));
  std::vector<int> spares = ChildrenMentioning(serve.pid, "--await-model");
  REQUIRE(spares.size() == 1);
  const int first_spare = spares[0];
  // The operator sees it in the metrics.
  const std::string metrics = s.spool + "/metrics/framemill.prom";
  auto metric_says = [&](const std::string& line) {
    return WaitUntil([&] { return ReadText(metrics).find("\n" + line + "\n") != std::string::npos; },
                     30);
  };
  CHECK(metric_says("framemill_spare_workers 1"));
  auto run = [&](const std::string& id, const std::string& model) {
    return RunOneWorker(s, id, input, model, 24);
  };
  // The first job's worker is that process: it took the model and wrote the job's log.
  const nlohmann::json first = run("first", identity);
  INFO(first.dump());
  CHECK(first["workers_spare"] == true);
  CHECK(first["workers_warm"] == false);
  CHECK(first["workers_started"] == 1);
  const std::string worker_log = ReadText(logs + "/worker-0-1.log");
  CHECK(worker_log.find("worker 0: a spare, started") != std::string::npos);
  CHECK(worker_log.find("model " + identity + " ready") != std::string::npos);
  CHECK(ReadText(logs + "/spare-0-1.log").find("taken by a job") != std::string::npos);
  // ... and it is the same process: the spare's pid is the first job's worker's (its timeline).
  CHECK(ReadText(s.spool + "/done/first/timeline.jsonl").find("\"pid\":" + std::to_string(first_spare)) !=
        std::string::npos);
  // Once it ended, another spare waits: the next job of another model takes that one.
  REQUIRE_MESSAGE(spare_waiting(2), ReadText(s.dir + "/serve.stderr"));
  const nlohmann::json other = run("other", invert);
  INFO(other.dump());
  CHECK(other["workers_spare"] == true);
  CHECK(other["workers_warm"] == false);
  // A spare that dies (killed here) is logged; the next job starts its own worker, and runs.
  // (Taken spares keep their command line: the idle workers of the last job mention it too. The
  // one waiting is the one the service last said it started.)
  REQUIRE(spare_waiting(3));
  const std::string said = ReadText(s.dir + "/serve.stderr");
  const size_t started = said.rfind("spare worker started (pid ");
  REQUIRE(started != std::string::npos);
  const int waiting = std::atoi(said.c_str() + started + std::strlen("spare worker started (pid "));
  spares = ChildrenMentioning(serve.pid, "--await-model");
  REQUIRE(std::find(spares.begin(), spares.end(), waiting) != spares.end());
  ::kill(waiting, SIGKILL);
  REQUIRE(WaitUntil(
      [&] { return ReadText(s.dir + "/serve.stderr").find("the spare worker exited") != std::string::npos; },
      30));
  CHECK(ReadText(s.dir + "/serve.stderr").find("killed by signal 9") != std::string::npos);
  CHECK(metric_says("framemill_spare_workers 0"));  // none until its pause is over
  const nlohmann::json after = run("after_kill", identity);
  INFO(after.dump());
  CHECK(after["workers_spare"] == false);
  CHECK(after["workers_warm"] == false);
  // Stopped with the service: nothing is left waiting.
  REQUIRE(WaitUntil([&] { return !ChildrenMentioning(serve.pid, "--await-model").empty(); }, 60));
  spares = ChildrenMentioning(serve.pid, "--await-model");
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
  for (int pid : spares) {
    CHECK(WaitUntil([&] { return !fs::exists("/proc/" + std::to_string(pid)); }, 10));
  }
}

TEST_CASE("service: spare_workers false starts no spare") {
  Service s = MakeService("svc_no_spare", {{"spare_workers", false}});
  const std::string identity = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 24);
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve = Serve(s);
  KillOnExit guard_serve{serve};
  const nlohmann::json r = RunOneWorker(s, "lone", input, identity, 24);
  CHECK(r["workers_spare"] == false);
  CHECK(ChildrenMentioning(serve.pid, "--await-model").empty());
  CHECK_FALSE(fs::exists(s.spool + "/workers/spare-0-1.log"));
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}

TEST_CASE("service: progress counts frames written, not frames through the model") {
  // An encode-bound job: the identity model races through the arena while a slow x264 preset
  // writes; progress.json and `status` must show what is written, and go on while the encoder
  // trails the workers. Long enough for several of progress.json's samples (one a second): a
  // fast 2-core machine wrote 400 frames in 1.7 s, before a sample showed the encoder behind.
  Service s = MakeService("svc_progress_written");
  const int kFrames = 2400;
  const std::string input = s.dir + "/in.mp4";
  MakeIndexVideo(input, kFrames, 320, 240, 25, 0);
  nlohmann::json job = {{"input", input},
                        {"output", s.dir + "/out.mp4"},
                        {"model", ModelCopy("identity", s.dir)},
                        {"color_conversion", "accurate"},  // the worker a copy, swscale in x264's
                        {"encoder", {{"preset", "veryslow"}}}};
  Drop(s, "enc", job.dump());
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  const std::string progress = s.spool + "/active/enc/progress.json";
  bool trailing = false;  // seen: the frames written behind the model's
  std::string trailing_line;
  WaitUntil(
      [&] {
        const nlohmann::json p = ReadJson(progress);
        if (p.is_object()) {
          const int64_t done = p.value("frames_done", int64_t{0});
          const int64_t written = p.value("frames_written", int64_t{-1});
          CHECK(written <= done);
          // The model ahead of the encoder (any sample of an encode-bound job; one a second).
          if (written >= 0 && written < done && !trailing) {
            trailing = true;
            trailing_line = framemill::ProgressLine(p);  // what `status` prints of this snapshot
          }
        }
        return fs::exists(s.spool + "/done/enc/result.json");
      },
      300);
  REQUIRE(fs::exists(s.spool + "/done/enc/result.json"));
  CHECK(trailing);
  INFO(trailing_line);
  CHECK(trailing_line.find("frames written") != std::string::npos);
  CHECK(trailing_line.find("(100.0%)") == std::string::npos);
  CHECK(trailing_line.find("model at ") != std::string::npos);
  ::kill(serve.pid, SIGTERM);
  WaitJob(serve, 60);
}

TEST_CASE("service: a probe that never ends fails its job with timed_out, and the service and "
          "its watchdog go on") {
  // ffprobe stands in for a decoder looping for ever on a hostile file: it hangs on inputs whose
  // name says so (its input is its last argument, /proc/self/fd/N), and is the real one for
  // every other file.
  Service s = MakeService("svc_stall", {{"child_timeout_s", 10},
                                        {"job_stall_timeout_s", 5},
                                        {"defaults", {{"workers", 1},
                                                      {"chunk_frames", 16},
                                                      {"device", TestDevice()},
                                                      {"encoder", TestEncoder()}}}});
  const std::string ffprobe = s.dir + "/ffprobe-hangs";
  std::ofstream(ffprobe) << "#!/bin/sh\n"
                            "for a; do in=$a; done\n"
                            "case \"$(readlink /proc/$$/fd/${in##*/})\" in\n"
                            "  *hang*) exec sleep 86399;;\n"
                            "esac\n"
                            "exec ffprobe \"$@\"\n";
  fs::permissions(ffprobe, fs::perms::owner_all);
  s.config["ffprobe"] = ffprobe;
  std::ofstream(s.config_path) << s.config.dump(2);
  NotifySocket notify(s.dir + "/notify.sock");
  const std::string model = ModelCopy("identity", s.dir);
  const std::string input = SmallVideo(s.dir, 16);
  fs::copy_file(input, s.dir + "/hang.mp4");
  fs::create_directories(s.dir + "/out");
  BackgroundJob serve =
      Serve(s, {{"NOTIFY_SOCKET", s.dir + "/notify.sock"}, {"WATCHDOG_USEC", "1000000"}});
  KillOnExit guard_serve{serve};
  REQUIRE(WaitUntil([&] { return notify.Count("READY=1") == 1; }, 20));
  auto job = [&](const std::string& in, const std::string& id) {
    return nlohmann::json{
        {"input", in}, {"output", s.dir + "/out/" + id + ".mp4"}, {"model", model}}
        .dump();
  };
  Drop(s, "hung", job(s.dir + "/hang.mp4", "hung"));
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/active/hung"); }, 30));
  const int pings_before = notify.Count("WATCHDOG=1");
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/hung/result.json"); }, 60));
  // The watchdog was fed all along (every half second): before, one silent job stopped it after
  // a second and systemd would have restarted the service, every other job with it.
  CHECK(notify.Count("WATCHDOG=1") - pings_before >= 10);
  nlohmann::json r = ReadJson(s.spool + "/failed/hung/result.json");
  INFO(r.dump());
  CHECK(r["reason"]["code"] == "timed_out");
  const std::string why = r["reason"]["message"].get<std::string>();
  // The loop stopped it at 5 s of silence; the probe was killed at 10 s.
  CHECK(why.find("job_stall_timeout_s") != std::string::npos);
  CHECK(why.find("child_timeout_s") != std::string::npos);
  CHECK(ProcessesMentioning("86399").empty());  // no hung probe is left

  // The same service runs the next job.
  Drop(s, "good", job(input, "good"));
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/good/result.json"); }, 60));
  DoneResult(s, "good", 16);
  CHECK(::kill(serve.pid, 0) == 0);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}
