// The mux beside the render (supervisor/media/live_mux.h): the output it joins while the frames
// are rendered is the output the join after the render makes, and a job that fails leaves
// neither its partial output nor its joining ffmpeg behind.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "fault_harness.h"
#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

// Every packet of every stream of `path` (ffmpeg's framemd5 of a stream copy): equal for two
// files whose streams hold the same packets with the same timestamps.
std::string PacketHashes(const std::string& path) {
  RunResult r = Shell("ffmpeg -nostdin -v error -i '" + path + "' -map 0 -c copy -f framemd5 -");
  REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("live mux: the output joined beside the render has the packets of the join after it") {
  const std::string dir = ScratchDir("live_mux_same");
  const int kFrames = 500, kW = 320, kH = 240;
  const std::string input = dir + "/indexed.mp4";
  MakeIndexVideo(input, kFrames, kW, kH, 25, /*tone_hz=*/440);
  // Two encoders on segments of 4 chunks of 20 frames: 7 segments, finishing out of order.
  nlohmann::json job = {{"input", input},
                        {"model", ModelCopy("identity", dir)},
                        {"device", TestDevice()},
                        {"encoders", 2},
                        {"chunk_frames", 20}};
  job["output"] = dir + "/live.mp4";
  RunResult live = RunJob(dir, job);
  INFO("live: " << live.err);
  REQUIRE(live.exit_code == 0);
  CHECK(live.out.find("25 chunks, 7 segments") != std::string::npos);
  CHECK(live.out.find("(joined beside the render)") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/live.mp4", kW, kH), kFrames) == 0);

  job["output"] = dir + "/after.mp4";
  job["live_mux"] = false;
  RunResult after = RunJob(dir, job);
  INFO("after: " << after.err);
  REQUIRE(after.exit_code == 0);
  CHECK(after.out.find("(joined beside the render)") == std::string::npos);

  const std::string a = PacketHashes(dir + "/live.mp4"), b = PacketHashes(dir + "/after.mp4");
  CHECK(a.find("\n1,") != std::string::npos);  // the audio stream's packets are in the hashes
  CHECK(a == b);
  CHECK(PartialOutputs(dir) == 0);
}

TEST_CASE(
    "live mux: a job that fails mid-render in the service leaves no partial output, no pipe and "
    "no joining ffmpeg, and the next job runs") {
  Service s = MakeService("live_mux_fail", WithFaultWorker());
  const std::string input = s.dir + "/in.mp4";
  MakeIndexVideo(input, 600, 160, 128, 25, 0);
  nlohmann::json job = {{"input", input},
                        {"output", s.dir + "/out.mp4"},
                        {"model", ModelCopy("identity", s.dir)},
                        {"device", TestDevice()},
                        {"chunk_frames", 20},
                        {"encoders", 2},
                        {"max_attempts", 1}};
  // The workers crash at frame 450: by then segments 0-4 are joined.
  // Once: the next job runs clean.
  BackgroundJob serve = Serve(s, {{"FRAMEMILL_TEST_FAULT", "crash@450,once=" + s.dir + "/fired"}});
  KillOnExit guard{serve};
  Drop(s, "bad", job.dump());
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/bad/result.json"); }, 240));
  CHECK(ReadJson(s.spool + "/failed/bad/result.json")["reason"]["code"] == "worker_failed");
  CHECK(PartialOutputs(s.dir) == 0);
  CHECK_FALSE(fs::exists(s.dir + "/out.mp4"));
  // The service's own children: the joining ffmpeg was killed and reaped with the job.
  CHECK(WaitUntil([&] { return ChildrenMentioning(serve.pid, "live.ffconcat").empty(); }, 5));
  for (const auto& entry : fs::recursive_directory_iterator(s.spool)) {
    CHECK_MESSAGE(!entry.is_fifo(), entry.path().string());
  }

  job["output"] = s.dir + "/next.mp4";
  Drop(s, "next", job.dump());
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/next/result.json"); }, 240));
  CHECK(ReadJson(s.spool + "/done/next/result.json")["mux"] == "live");
  CHECK(OutOfPlace(FrameIndices(s.dir + "/next.mp4", 160, 128), 600) == 0);
  ::kill(serve.pid, SIGTERM);
  CHECK(WaitJob(serve, 60).exit_code == 0);
}
