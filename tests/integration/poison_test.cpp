// No job can stop the service: poison job files and entries dropped among good jobs into one
// running `framemill serve`, and a job whose handling kills the supervisor again and again.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

// A path as a JSON string with its bytes as they are (the paths here hold no quote or
// backslash), where nlohmann would refuse bytes that are not UTF-8.
std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// A job file's text with each value spliced in as it is (the poison is in the raw bytes).
std::string JobText(const std::string& input, const std::string& output, const std::string& model) {
  return "{\"input\": " + input + ", \"output\": " + output + ", \"model\": " + model + "}";
}

// Whether process `pid` (a child not yet reaped) has ended: gone, or a zombie.
bool Ended(int pid) {
  std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0;
}

int EntriesIn(const std::string& dir) {
  return fs::exists(dir) ? static_cast<int>(std::distance(fs::directory_iterator(dir), {})) : 0;
}

// A service whose jobs are one worker on 16-frame chunks with the fastest encoder: the tests'
// videos are tiny and the point is the spool, not the picture.
Service SmallJobService(const std::string& name) {
  return MakeService(name, {{"defaults",
                             {{"workers", 1},
                              {"chunk_frames", 16},
                              {"device", TestDevice()},
                              {"encoder", {{"preset", "ultrafast"}}}}}});
}

}  // namespace

TEST_CASE(
    "service: poison job files among good jobs: each filed with a reason, the service "
    "never stops and no good job waits") {
  Service s = SmallJobService("svc_poison");
  const std::string model = ModelCopy("identity", s.dir);
  const std::string video = SmallVideo(s.dir, 32, 64, 48);
  fs::create_directories(s.dir + "/out");
  fs::create_directories(s.spool + "/incoming");
  auto good = [&](const std::string& out) {
    return JobText(Quote(video), Quote(s.dir + "/out/" + out), Quote(model));
  };
  // Names that are not UTF-8 (a job file cannot hold them: JSON is UTF-8): behind links, and in
  // a playlist whose missing entry ffprobe names in its error text.
  const std::string odd_video = s.dir + "/odd-\xff\xfe.mp4";
  fs::copy_file(video, odd_video);
  const std::string odd_link = s.dir + "/odd-link.mp4";
  fs::create_symlink(odd_video, odd_link);
  const std::string junk = s.dir + "/junk-\xc3\x28.mp4";
  std::ofstream(junk) << std::string(20000, '\xff');
  const std::string junk_link = s.dir + "/junk-link.mp4";
  fs::create_symlink(junk, junk_link);
  const std::string playlist = s.dir + "/list.m3u8";
  std::ofstream(playlist) << "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nseg-\xff\xfe.ts\n"
                             "#EXT-X-ENDLIST\n";
  // A valid job in a file only root may read, owned by another uid: a link to it in incoming/
  // must not be followed.
  const std::string secret = s.dir + "/secret.json";
  std::ofstream(secret) << good("secret.mp4");
  REQUIRE(::chown(secret.c_str(), 4242, 4242) == 0);
  REQUIRE(::chmod(secret.c_str(), 0600) == 0);

  // Each poison, by the id it is filed under, and the reason it must be filed with.
  std::map<std::string, std::string> poison;
  auto drop = [&](const std::string& id, const std::string& text, const std::string& reason) {
    Drop(s, id, text);
    poison[id] = reason;
  };
  drop("p_not_utf8",
       JobText(Quote(video) + ", \"x\": \"\xff\xfe\"", Quote(s.dir + "/out/p1.mp4"), Quote(model)),
       "invalid_job");
  drop("p_deep",
       "{\"input\": " + Quote(video) + ", \"deep\": " + std::string(200000, '[') +
           std::string(200000, ']') + "}",
       "invalid_job");
  drop("p_link_input_not_utf8",
       JobText(Quote(junk_link), Quote(s.dir + "/out/p3.mp4"), Quote(model)), "input_invalid");
  drop("p_probe_not_utf8", JobText(Quote(playlist), Quote(s.dir + "/out/p4.mp4"), Quote(model)),
       "input");
  drop("p_1mb_line",
       "{\"input\": " + Quote(video) + ", \"output\": " + Quote(s.dir + "/out/p5.mp4") +
           ", \"model\": " + Quote(model) + ", \"padding\": \"" + std::string(1000000, 'a') + "\"}",
       "invalid_job");
  drop("p_too_big", "{\"padding\": \"" + std::string(2 << 20, 'a') + "\"}", "invalid_job");
  drop("p_duplicate_keys",
       "{\"input\": " + Quote(video) + ", \"input\": " + Quote(odd_link) +
           ", \"output\": " + Quote(s.dir + "/out/p6.mp4") + ", \"model\": " + Quote(model) + "}",
       "invalid_job");
  drop("p_nul_in_path",
       JobText("\"" + s.dir + "/small.mp4\\u0000/etc/passwd\"", Quote(s.dir + "/out/p7.mp4"),
               Quote(model)),
       "invalid_job");
  drop("p_not_object", "[1, 2, 3]", "invalid_job");
  drop("p_binary", std::string("\x00\x01\x02\xff{}", 6), "invalid_job");
  // Entries that are no job file at all.
  const std::string in = s.spool + "/incoming/";
  REQUIRE(::mkfifo((in + "p_fifo.json").c_str(), 0666) == 0);
  poison["p_fifo"] = "invalid_job";
  REQUIRE(::mkdir((in + "p_dir.json").c_str(), 0500) == 0);
  poison["p_dir"] = "invalid_job";
  fs::create_symlink(secret, in + "p_link_to_secret.json");
  poison["p_link_to_secret"] = "invalid_job";
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", (in + "p_socket.json").c_str());
  REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  poison["p_socket"] = "invalid_job";
  // The good jobs come after every poison (in submission order), among more poison dropped
  // while the service runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<std::string> goods;
  for (int i = 0; i < 3; ++i) {
    goods.push_back("good" + std::to_string(i));
    Drop(s, goods.back(), good(goods.back() + ".mp4"));
  }
  // A good job read behind a link to a name that is not UTF-8.
  goods.push_back("good_odd_names");
  const std::string odd_output = s.dir + "/out/odd.mp4";
  Drop(s, goods.back(), JobText(Quote(odd_link), Quote(odd_output), Quote(model)));

  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return EntriesIn(s.spool + "/done") == 4; }, 120));
  // A second wave into the running service: poison first, then good jobs behind it.
  const auto wave_start = std::chrono::steady_clock::now();
  REQUIRE(::mkfifo((in + "q_fifo.json").c_str(), 0666) == 0);
  poison["q_fifo"] = "invalid_job";
  drop("q_deep", std::string(200000, '{'), "invalid_job");
  drop("q_not_utf8", "{\"\xc0\xaf\": 1}", "invalid_job");
  for (int i = 3; i < 6; ++i) {
    goods.push_back("good" + std::to_string(i));
    Drop(s, goods.back(), good(goods.back() + ".mp4"));
  }
  REQUIRE(WaitUntil([&] { return EntriesIn(s.spool + "/done") == 7; }, 120));
  const double wave_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wave_start).count();
  REQUIRE(WaitUntil(
      [&] { return EntriesIn(s.spool + "/failed") == static_cast<int>(poison.size()); }, 60));
  MESSAGE("second wave: 3 poison entries and 3 good jobs filed in " << wave_s << " s");
  CHECK(wave_s < 60);

  for (const std::string& id : goods) {
    nlohmann::json r = ReadJson(s.spool + "/done/" + id + "/result.json");
    INFO(id << ": " << r.dump());
    REQUIRE(r.is_object());
    CHECK(r["status"] == "done");
  }
  for (int i = 0; i < 6; ++i)
    CHECK(CountFrames(s.dir + "/out/good" + std::to_string(i) + ".mp4") == 32);
  CHECK(CountFrames(odd_output) == 32);
  for (const auto& [id, reason] : poison) {
    // Strict parsing: every result.json is valid JSON (UTF-8) whatever bytes its job had.
    nlohmann::json r = ReadJson(s.spool + "/failed/" + id + "/result.json");
    INFO(id << ": " << ReadText(s.spool + "/failed/" + id + "/result.json"));
    REQUIRE(r.is_object());
    CHECK(r["status"] == "failed");
    // "input": a reason about the input (what ffmpeg says of a playlist depends on its
    // restrictions: a missing entry, or a demuxer refused).
    const std::string code = r["reason"]["code"].get<std::string>();
    if (reason == "input")
      CHECK((code.rfind("input_", 0) == 0 || code == "path_not_allowed"));
    else
      CHECK(r["reason"]["code"] == reason);
    CHECK_FALSE(r["reason"]["message"].get<std::string>().empty());
  }
  CHECK(EntriesIn(s.spool + "/incoming") == 0);
  CHECK_FALSE(fs::exists(s.dir + "/out/secret.mp4"));       // the linked job was never read
  CHECK(fs::is_fifo(s.spool + "/failed/p_fifo/job.json"));  // moved as it was, unread
  CHECK(fs::is_symlink(s.spool + "/failed/p_link_to_secret/job.json"));

  // Still the same process, still alive; each poison logged once or twice, none retried.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two rescans
  CHECK(::kill(serve.pid, 0) == 0);
  const std::string log = ReadText(s.dir + "/serve.stderr");
  CHECK(CountLines(log, "serving spool") == 1);
  for (const auto& [id, reason] : poison) {
    INFO(id);
    int lines = CountLines(log, id);
    CHECK(lines >= 1);
    CHECK(lines <= 3);
  }
  MESSAGE(poison.size() << " poison entries filed, " << goods.size() << " good jobs done");
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
  ::close(sock);
}

TEST_CASE(
    "service: a job that kills the supervisor max_job_starts times is filed as crashed, "
    "the next job runs, and retry finishes it") {
  Service s = SmallJobService("svc_crashed");
  const std::string model = ModelCopy("identity", s.dir);
  const std::string video = SmallVideo(s.dir, 32, 64, 48);
  nlohmann::json doomed = {{"input", video}, {"output", s.dir + "/doomed.mp4"}, {"model", model}};
  nlohmann::json next = {{"input", video}, {"output", s.dir + "/next.mp4"}, {"model", model}};
  Drop(s, "doomed", doomed.dump());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Drop(s, "next", next.dump());
  const Env hook = {{"FRAMEMILL_FAULT_SUPERVISOR_ABORT", "doomed"}};
  int aborts = 0;
  for (int start = 0; start < 6; ++start) {
    BackgroundJob serve = Serve(s, hook, "serve" + std::to_string(start));
    KillOnExit guard{serve};
    bool ended = WaitUntil(
        [&] { return Ended(serve.pid) || fs::exists(s.spool + "/done/next/result.json"); }, 60);
    REQUIRE(ended);
    if (fs::exists(s.spool + "/done/next/result.json")) {
      ::kill(serve.pid, SIGTERM);
      CHECK(WaitJob(serve, 30).exit_code == 0);
      break;
    }
    RunResult r = WaitJob(serve, 10);
    INFO(r.err);
    CHECK(r.exit_code != 0);  // aborted
    CHECK(fs::exists(s.spool + "/active/doomed/job.json"));
    CHECK_FALSE(fs::exists(s.spool + "/done/next"));  // it waits behind the resumed job
    ++aborts;
  }
  CHECK(aborts == 3);  // the default max_job_starts
  nlohmann::json r = ReadJson(s.spool + "/failed/doomed/result.json");
  INFO(r.dump());
  REQUIRE(r.is_object());
  CHECK(r["reason"]["code"] == "crashed");
  CHECK(r["work_kept"] == true);  // retryable: kept for framemill retry
  CHECK(fs::exists(s.spool + "/failed/doomed/work"));
  CHECK(ReadText(s.spool + "/failed/doomed/starts") == "4\n");
  CHECK(ReadJson(s.spool + "/done/next/result.json")["status"] == "done");
  CHECK(CountFrames(s.dir + "/next.mp4") == 32);

  // Without the fault, `framemill retry` puts it back and it finishes.
  BackgroundJob serve = Serve(s, {}, "serve_retry");
  KillOnExit guard{serve};
  RunResult retry = Cli(s, "retry doomed");
  INFO(retry.out << retry.err);
  CHECK(retry.exit_code == 0);
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/doomed/result.json"); }, 60));
  CHECK(CountFrames(s.dir + "/doomed.mp4") == 32);
  CHECK(ReadJson(s.spool + "/done/doomed/result.json")["starts"] == 1);
  CHECK(Cli(s, "retry next").exit_code == 1);  // not failed
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 30).exit_code == 0);
}
