// One long generated video through three workers and back: every frame exactly once, in order,
// with the audio track kept.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/model_card.h"
#include "fault_harness.h"
#include "harness.h"
#include "supervisor/media/source_intake.h"

using namespace framemill::test;

namespace {

// Makes dir/indexed.mp4 (`frames` indexed frames, 320x240 at 25 fps, with a tone when
// `tone_hz` > 0) and runs a job over it into dir/out.mp4 on the test device; `keys` add to the
// job or override those.
RunResult RunOnIndexed(const std::string& dir, int frames, const nlohmann::json& keys,
                       int tone_hz = 0) {
  const std::string input = dir + "/indexed.mp4";
  MakeIndexVideo(input, frames, 320, 240, 25, tone_hz);
  nlohmann::json job = {{"input", input}, {"output", dir + "/out.mp4"}, {"device", TestDevice()}};
  job.update(keys);
  return RunJob(dir, job);
}

using Frames = std::vector<std::vector<uint8_t>>;

// Every frame of `path`, decoded to rgb24 at width x height.
Frames DecodeAll(const std::string& path, int width, int height) {
  Frames frames;
  DecodeFrames(path, width, height, [&](const uint8_t* rgb) {
    frames.emplace_back(rgb, rgb + static_cast<size_t>(width) * height * 3);
  });
  return frames;
}

// How far two videos' frames are apart on the top-left width x height of each (their rows
// a_width and b_width pixels long), frame by frame: the worst frame's mean absolute difference
// of values, and the worst frame's share of values 8 or more apart.
struct Difference {
  double mean = 0, far = 0;
};
Difference WorstDifference(const Frames& a, int a_width, const Frames& b, int b_width, int width,
                           int height) {
  Difference worst;
  const double values = 3.0 * width * height;
  for (size_t f = 0; f < std::min(a.size(), b.size()); ++f) {
    int64_t sum = 0, far = 0;
    for (int y = 0; y < height; ++y) {
      const uint8_t* ra = a[f].data() + static_cast<size_t>(y) * a_width * 3;
      const uint8_t* rb = b[f].data() + static_cast<size_t>(y) * b_width * 3;
      for (int x = 0; x < width * 3; ++x) {
        int d = std::abs(ra[x] - rb[x]);
        sum += d;
        far += d >= 8;
      }
    }
    worst.mean = std::max(worst.mean, sum / values);
    worst.far = std::max(worst.far, far / values);
  }
  return worst;
}

}  // namespace

TEST_CASE(
    "frame-exact: 2,050 indexed frames through identity with 3 workers keep order and audio") {
  const std::string dir = ScratchDir("frame_exact");
  const int kFrames = 2050, kW = 320, kH = 240, kFps = 25;
  const std::string input = dir + "/indexed.mp4";
  MakeIndexVideo(input, kFrames, kW, kH, kFps, /*tone_hz=*/440);
  REQUIRE(CountFrames(input) == kFrames);

  const std::string output = dir + "/out.mp4";
  nlohmann::json job = {{"input", input},
                        {"output", output},
                        {"model", ModelCopy("identity", dir)},
                        {"workers", 3},
                        {"chunk_frames", 37},  // 2050 = 55 * 37 + 15: the last chunk is short
                        {"segment_seconds", 10},
                        {"device", TestDevice()}};
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);

  std::vector<int> indices = FrameIndices(output, kW, kH);
  CHECK(indices.size() == static_cast<size_t>(kFrames));
  CHECK(OutOfPlace(indices, kFrames) == 0);

  nlohmann::json in_probe = Probe(input), out_probe = Probe(output);
  nlohmann::json in_audio = FirstStream(in_probe, "audio");
  nlohmann::json out_audio = FirstStream(out_probe, "audio");
  REQUIRE(!out_audio.is_null());
  CHECK(out_audio["codec_name"] == in_audio["codec_name"]);
  double in_dur = std::stod(in_audio["duration"].get<std::string>());
  double out_dur = std::stod(out_audio["duration"].get<std::string>());
  CHECK(std::fabs(in_dur - out_dur) < 0.05);
  nlohmann::json out_video = FirstStream(out_probe, "video");
  CHECK(out_video["r_frame_rate"] == "25/1");

  // Nothing left behind: no shared memory, no workers, no scratch files beside the output.
  CHECK(SharedMemoryObjects().empty());
  CHECK(ProcessesMentioning(dir).empty());
  for (const std::string& name : ListDir(dir)) CHECK(name.rfind(".framemill", 0) != 0);
}

TEST_CASE(
    "precision: bf16 keeps every frame, and fp16 without a GPU is refused with a clear message") {
  const std::string dir = ScratchDir("precision");
  const int kFrames = 200, kW = 320, kH = 240;
  nlohmann::json job = {{"model", ModelCopy("sharpen", dir)}, {"precision", "bf16"}};
  RunResult r = RunOnIndexed(dir, kFrames, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);

  if (TestDevice() == "cpu") {
    job.update({{"input", dir + "/indexed.mp4"},
                {"output", dir + "/fp16.mp4"},
                {"device", "cpu"},
                {"precision", "fp16"}});
    RunResult f = RunJob(dir, job);
    CHECK(f.exit_code == 1);
    CHECK(f.err.find("precision fp16 needs a CUDA device") != std::string::npos);
  }
}

TEST_CASE("variable frame rate: every frame keeps its source timestamp, and its place") {
  const std::string dir = ScratchDir("vfr");
  const int kFrames = 120, kW = 320, kH = 240;
  const std::string cfr = dir + "/cfr.mp4", vfr = dir + "/vfr.mkv";
  MakeIndexVideo(cfr, kFrames, kW, kH, 30, /*tone_hz=*/0);
  // 60 frames at 30 fps, then 60 at 10 fps, with 8 s of audio: a phone-camera-like timeline.
  RunResult made = Shell("ffmpeg -nostdin -v error -y -i '" + cfr +
                         "' -f lavfi -i sine=d=8 "
                         "-filter:v \"setpts='if(lt(N,60),N/30,2+(N-60)/10)/TB'\" -fps_mode vfr "
                         "-c:v libx264 -preset veryfast -crf 18 -c:a aac -t 8 '" +
                         vfr + "'");
  REQUIRE(made.exit_code == 0);
  for (const char* ext : {"mkv", "mp4"}) {
    const std::string output = dir + "/out." + ext;
    nlohmann::json job = {
        {"input", vfr},       {"output", output},     {"model", ModelCopy("identity", dir)},
        {"chunk_frames", 16}, {"segment_seconds", 1}, {"device", TestDevice()}};
    RunResult r = RunJob(dir, job);
    INFO(ext << " stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(OutOfPlace(FrameIndices(output, kW, kH), kFrames) == 0);
    auto times = [](const std::string& path) {
      RunResult p = Shell(
          "ffprobe -v error -select_streams v:0 -show_entries packet=pts_time "
          "-of csv=p=0 '" +
          path + "' | sort -g");
      std::vector<double> t;
      std::istringstream in(p.out);
      for (std::string line; std::getline(in, line);) t.push_back(std::stod(line));
      return t;
    };
    std::vector<double> want = times(vfr), got = times(output);
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::fabs((got[i] - got[0]) - (want[i] - want[0])));
    }
    CHECK(worst < 0.002);  // Matroska keeps milliseconds
    CHECK(!FirstStream(Probe(output), "audio").is_null());
  }
}

TEST_CASE("fast colour conversion keeps every frame in its place") {
  const std::string dir = ScratchDir("fast_color");
  const int kFrames = 150, kW = 320, kH = 240;
  RunResult r = RunOnIndexed(dir, kFrames,
                             {{"model", ModelCopy("identity", dir)}, {"color_conversion", "fast"}});
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
}

// $FRAMEMILL_TEST_GPUS: the GPUs to spread workers over on a CUDA machine (default "0").
TEST_CASE("gpus: without CUDA a GPU job fails at once, saying why, and leaves nothing running") {
  if (TestDevice() != "cpu")
    SkipTest("CUDA is available here (FRAMEMILL_TEST_DEVICE=" + TestDevice() +
             "): the refusal cannot be seen");
  const std::string dir = ScratchDir("gpus_refused");
  RunResult r = RunOnIndexed(dir, 20,
                             {{"model", ModelCopy("identity", dir)},
                              {"device", "cuda"},
                              {"gpus", {0}},
                              {"workers_per_gpu", 2}});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("CUDA is not available") != std::string::npos);
  CHECK(r.err.find("CUDA_VISIBLE_DEVICES=0 (the job's gpus)") != std::string::npos);
  CHECK(ProcessesMentioning(dir).empty());
}

TEST_CASE("gpus: workers are spread over the listed GPUs, each pinned to one") {
  if (TestDevice() == "cpu") SkipTest("needs CUDA GPUs (FRAMEMILL_TEST_DEVICE=cuda)");
  const std::string dir = ScratchDir("gpus");
  const int kFrames = 400, kW = 320, kH = 240;
  std::vector<int> gpus;
  const char* env = std::getenv("FRAMEMILL_TEST_GPUS");
  std::istringstream list(env != nullptr ? env : "0");
  for (std::string g; std::getline(list, g, ',');) gpus.push_back(std::stoi(g));
  RunResult r = RunOnIndexed(dir, kFrames,
                             {{"model", ModelCopy("identity", dir)},
                              {"device", "cuda"},
                              {"gpus", gpus},
                              {"workers_per_gpu", 2},
                              {"chunk_frames", 16}});
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
  std::map<int, int> started;  // workers started per GPU, from the timeline
  int spares = 0;
  for (const nlohmann::json& e : ReadTimeline(dir + "/out.mp4")) {
    if (e["event"] != "start") continue;
    std::string reason = e.value("reason", "");
    if (reason.find("a spare, started before the job") != std::string::npos) ++spares;
    size_t at = reason.find("GPU ");
    REQUIRE(at != std::string::npos);
    started[std::stoi(reason.substr(at + 4))]++;
  }
  for (int g : gpus) CHECK(started[g] == 2);
  CHECK(started.size() == gpus.size());
  // The first worker was started before the job was prepared, as a spare on the first GPU
  // (supervisor/job/early_spare.h), and the job took it (whichever worker was ready first).
  CHECK(spares == 1);
}

TEST_CASE("encoders: three encoders on short segments keep every frame in order, with audio") {
  const std::string dir = ScratchDir("encoders");
  const int kFrames = 700, kW = 320, kH = 240;
  const std::string input = dir + "/indexed.mp4", output = dir + "/out.mp4";
  RunResult r = RunOnIndexed(
      dir, kFrames, {{"model", ModelCopy("identity", dir)}, {"encoders", 3}, {"chunk_frames", 20}},
      /*tone_hz=*/440);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(output, kW, kH), kFrames) == 0);
  // Segments of at most 4 chunks: 700 frames / 80 = 9 segments, encoded three at a time.
  CHECK(r.out.find("35 chunks, 9 segments") != std::string::npos);
  nlohmann::json in_audio = FirstStream(Probe(input), "audio");
  nlohmann::json out_audio = FirstStream(Probe(output), "audio");
  REQUIRE(!out_audio.is_null());
  CHECK(std::fabs(std::stod(in_audio["duration"].get<std::string>()) -
                  std::stod(out_audio["duration"].get<std::string>())) < 0.05);
}

TEST_CASE(
    "probe: a constant-rate video with B-frames keeps no frame times, a variable-rate one keeps "
    "them all") {
  const std::string dir = ScratchDir("probe_times");
  const std::string cfr = dir + "/cfr.mp4", vfr = dir + "/vfr.mkv";
  // libx264 `medium` reorders up to 3 B-frames: decode order differs from presentation order.
  REQUIRE(Shell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=s=160x120:r=30 -frames:v 900 "
                "-c:v libx264 -preset medium -bf 3 '" +
                cfr + "'")
              .exit_code == 0);
  REQUIRE(Shell("ffmpeg -nostdin -v error -y -i '" + cfr +
                "' -frames:v 120 "
                "-filter:v \"setpts='if(lt(N,60),N/30,2+(N-60)/10)/TB'\" -fps_mode vfr "
                "-c:v libx264 -preset veryfast '" +
                vfr + "'")
              .exit_code == 0);
  auto c = framemill::ProbeOwnFile("ffprobe", cfr, /*frame_times=*/true);
  REQUIRE(c.ok());
  CHECK(c->video.frame_count == 900);
  CHECK(c->video.constant_rate);
  CHECK(c->video.frame_times.empty());
  CHECK(std::fabs((c->video.last_time - c->video.start_time) - 899.0 / 30) < 1e-3);
  auto v = framemill::ProbeOwnFile("ffprobe", vfr, /*frame_times=*/true);
  REQUIRE(v.ok());
  CHECK(v->video.frame_count == 120);
  CHECK_FALSE(v->video.constant_rate);
  REQUIRE(v->video.frame_times.size() == 120);
  CHECK(std::is_sorted(v->video.frame_times.begin(), v->video.frame_times.end()));
  CHECK(std::fabs(v->video.last_time - v->video.start_time - (2.0 + 59.0 / 10)) < 0.01);
}

TEST_CASE(
    "device colour conversion: YUV 4:2:0 goes to the workers and every frame stays in place") {
  const std::string dir = ScratchDir("device_color");
  const int kFrames = 150, kW = 320, kH = 240;
  RunResult r = RunOnIndexed(
      dir, kFrames, {{"model", ModelCopy("identity", dir)}, {"color_conversion", "device"}});
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("(yuv420p to the workers)") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kW, kH), kFrames) == 0);
}

// On CUDA a worker either page-locks the job's arena and copies straight between it and the
// device, or stages the copies through page-locked buffers of its own, the host moving each
// batch's bytes in and out while the device works (worker/batch/batch_runner.h). Chunks of 20
// frames in batches of 8 end on a short batch, whose output waits in a staging buffer until the
// chunk's end: a frame left behind, a stale one or one written to another frame's place shows here.
TEST_CASE("host copies: staged and page-locked arenas give the same frames, each in its place") {
  if (TestDevice() != "cuda") SkipTest("needs CUDA (FRAMEMILL_TEST_DEVICE=cuda): the CPU copies in place");
  const std::string dir = ScratchDir("host_copies");
  const int kFrames = 150, kW = 320, kH = 240;
  std::map<std::string, Frames> out;
  for (bool page_lock : {false, true}) {
    const std::string name = page_lock ? "page-locked" : "staged";
    RunResult r = RunOnIndexed(dir, kFrames,
                               {{"model", ModelCopy("identity", dir)},
                                {"output", dir + "/" + name + ".mp4"},
                                {"color_conversion", "device"},
                                {"chunk_frames", 20},
                                {"batch", 8},
                                {"page_lock_arena", page_lock ? "on" : "off"}});
    INFO(name << " stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find(page_lock ? "page-locked in the workers" : "copies staged in the workers") !=
          std::string::npos);
    CHECK(OutOfPlace(FrameIndices(dir + "/" + name + ".mp4", kW, kH), kFrames) == 0);
    out[name] = DecodeAll(dir + "/" + name + ".mp4", kW, kH);
    REQUIRE(out[name].size() == kFrames);
  }
  for (int f = 0; f < kFrames; ++f) {
    INFO("frame " << f);
    CHECK(out["staged"][f] == out["page-locked"][f]);
  }
  // "auto": a job that moves its arena's bytes 20 times over page-locks it (WorthPageLocking).
  // 300 frames. Chunks of 20: the arena holds the 8 that the pipeline keeps, 160 frames, and the
  // job's pass through it twice. Chunks of 1: it holds 8 frames, and 300 pass through it.
  for (int chunk : {20, 1}) {
    RunResult r = RunOnIndexed(dir, 300,
                               {{"model", ModelCopy("identity", dir)},
                                {"output", dir + "/auto.mp4"},
                                {"overwrite", true},
                                {"color_conversion", "device"},
                                {"chunk_frames", chunk}});
    INFO("chunk_frames " << chunk << " stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find(chunk == 1 ? "page-locked in the workers" : "copies staged in the workers") !=
          std::string::npos);
  }
}

// A source of saturated colours (testsrc2) through a model twice, ffmpeg converting (accurate)
// and the workers converting (device), both encoded losslessly: the two outputs must agree to a
// fraction of a level (measured: 0.2 mean for the worst frame, almost no value 8 levels apart).
// A wrong matrix (BT.601 for BT.709) gives 8.5 levels; full range taken as limited 1.4 and 6%
// of values 8 apart; bilinear chroma instead of bicubic 0.85 and 3%.
TEST_CASE("device colour conversion: colours match ffmpeg's for BT.601, BT.709 and full range") {
  const std::string dir = ScratchDir("device_color_match");
  const int kFrames = 30, kW = 320, kH = 240;
  struct Source {
    std::string name;
    std::string encode;         // ffmpeg output options for the source
    std::string worker_format;  // what the job must report handing the workers
  };
  const std::string x264 = "-c:v libx264 -preset veryfast -crf 12 ";
  const std::vector<Source> sources = {
      {"bt601", x264 + "-pix_fmt yuv420p", "yuv420p"},
      {"bt709", x264 + "-pix_fmt yuv420p -colorspace bt709 -color_primaries bt709 -color_trc bt709",
       "yuv420p"},
      {"full", x264 + "-pix_fmt yuvj420p", "yuvj420p"},
      // Not 4:2:0: ffmpeg converts it to RGB itself, and the job says so.
      {"yuv444", x264 + "-pix_fmt yuv444p", "rgb24"},
  };
  const std::string model = ModelCopy("identity", dir);
  for (const Source& s : sources) {
    INFO("source " << s.name);
    const std::string input = dir + "/" + s.name + ".mkv";
    REQUIRE(Shell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=320x240:rate=30 "
                  "-frames:v " +
                  std::to_string(kFrames) + " " + s.encode + " " + input)
                .exit_code == 0);
    std::map<std::string, Frames> out;
    for (std::string conversion : {"accurate", "device"}) {
      // One worker: the 30 frames are one chunk, which a second worker would start for nothing.
      nlohmann::json job = {{"input", input},
                            {"output", dir + "/" + s.name + "-" + conversion + ".mkv"},
                            {"model", model},
                            {"device", TestDevice()},
                            {"workers", 1},
                            {"color_conversion", conversion},
                            {"encoder", {{"crf", 0}, {"preset", "ultrafast"}}}};
      RunResult r = RunJob(dir, job);
      INFO("stderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      if (conversion == "device") {
        CHECK(r.out.find("(" + s.worker_format + " to the workers)") != std::string::npos);
      }
      out[conversion] = DecodeAll(job["output"], kW, kH);
    }
    REQUIRE(out["accurate"].size() == kFrames);
    REQUIRE(out["device"].size() == kFrames);
    // A limited-range 4:2:0 source goes back to YUV in the workers, in float, never clamped to
    // the RGB cube (frame_convert.h): its reference is the source itself, which `accurate`,
    // through 8-bit RGB, misses at colour edges. The others go through RGB both ways.
    const bool yuv_back = s.worker_format == "yuv420p";
    const Frames reference = yuv_back ? DecodeAll(input, kW, kH) : out["accurate"];
    REQUIRE(reference.size() == kFrames);
    Difference d = WorstDifference(reference, kW, out["device"], kW, kW, kH);
    CHECK(d.mean < 0.5);
    CHECK(d.far < 0.001);
  }
}

// An odd-sized 4:2:0 frame's last chroma column and row cover one luma column and row. Cut
// 161x121 from a 162x122 source (the chroma planes stay whole: 81x61 both), losslessly (FFV1),
// and the workers' conversion of the cut frame must match theirs of the whole one, on the common
// area (upscale2x makes both outputs even for x264). swscale does not: it stretches 81 chroma
// columns over 161 (5 levels apart on average, 13% of values 8 apart, measured), so `accurate`
// is not the reference here.
TEST_CASE(
    "device colour conversion: an odd-sized frame converts as the even frame it is cut from") {
  const std::string dir = ScratchDir("device_color_odd");
  const int kFrames = 20;
  const std::string model = ModelCopy("upscale2x", dir);
  std::map<std::string, Frames> out;
  const std::map<std::string, std::pair<int, int>> sizes = {{"even", {162, 122}},
                                                            {"odd", {161, 121}}};
  for (const auto& [name, size] : sizes) {
    const std::string input = dir + "/" + name + ".mkv";
    REQUIRE(Shell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=162x122:rate=30 "
                  "-frames:v " +
                  std::to_string(kFrames) + " -vf crop=" + std::to_string(size.first) + ":" +
                  std::to_string(size.second) + ":0:0:exact=1 -c:v ffv1 -pix_fmt yuv420p " + input)
                .exit_code == 0);
    nlohmann::json job = {{"input", input},
                          {"output", dir + "/" + name + "-out.mkv"},
                          {"model", model},
                          {"device", TestDevice()},
                          {"workers", 1},  // the 20 frames are one chunk
                          {"color_conversion", "device"},
                          {"encoder", {{"crf", 0}, {"preset", "ultrafast"}}}};
    RunResult r = RunJob(dir, job);
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("(yuv420p to the workers)") != std::string::npos);
    out[name] = DecodeAll(job["output"], 2 * size.first, 2 * size.second);
  }
  REQUIRE(out["even"].size() == kFrames);
  REQUIRE(out["odd"].size() == kFrames);
  Difference d = WorstDifference(out["odd"], 2 * 161, out["even"], 2 * 162, 2 * 161, 2 * 121);
  CHECK(d.mean < 0.5);
  CHECK(d.far < 0.001);
}

TEST_CASE(
    "start: decoding begins while the workers start when the arena's size is known, and a wrong "
    "guess's frames are dropped") {
  // The arena's size depends on the model's scale, which a worker's probe tells. The supervisor
  // guesses it (the card's scale, else 1), makes the arena while the workers start and decodes
  // into it at once; the arena and its frames are kept only when the probe agrees. The workers
  // here take 1.5 s to load (a test fault) and the arena holds a few chunks of 4 frames, so the
  // decoder fills it and waits for a slot before any worker is ready: a wrong guess stops it
  // there. Each way, every frame arrives, in its place, at the right size.
  const std::string dir = ScratchDir("early_arena");
  const int kFrames = 78;
  const std::string clip = dir + "/index.mp4";
  MakeIndexVideo(clip, kFrames, 320, 240, 25, /*tone_hz=*/0);
  const std::string early_line = "arena made, and decoded into, while the workers started";
  const std::string wrong_line = "the early arena's guess was wrong";
  const nlohmann::json config = WithFaultWorker({{"arena_mb", 16}});  // its slow load
  const Env slow = {{"FRAMEMILL_TEST_FAULT", "slowload:1500@0"}};
  auto job = [&](const std::string& output, const std::string& model) {
    nlohmann::json j = LosslessJob(clip, output, model);
    j["chunk_frames"] = 4;
    return j;
  };
  // The decoder's first chunk is ready before the worker says it is.
  auto decoded_first = [](const std::string& log) {
    const size_t decoded = log.find("decoder: chunk 0 ready");
    const size_t ready = log.find(" ready on ");
    return decoded != std::string::npos && ready != std::string::npos && decoded < ready;
  };

  RunResult same =
      RunJob(dir, job(dir + "/identity.mp4", ModelPath("identity")), config, slow);
  REQUIRE_MESSAGE(same.exit_code == 0, same.err);
  CHECK(same.err.find(early_line) != std::string::npos);
  CHECK(decoded_first(same.err));
  // The stages say how much decoding the start took off the pipeline.
  CHECK(same.err.find(" s before it, while the workers started") != std::string::npos);
  CHECK(OutOfPlace(FrameIndices(dir + "/identity.mp4", 320, 240), kFrames) == 0);

  // Scale 2 without a card: the guess (1) is wrong; the decoder, waiting for a slot, is stopped,
  // and the arena made again for 640x480 and decoded into from the first frame.
  const std::string upscale = ModelCopy("upscale2x", dir);
  RunResult guessed_wrong = RunJob(dir, job(dir + "/up.mp4", upscale), config, slow);
  REQUIRE_MESSAGE(guessed_wrong.exit_code == 0, guessed_wrong.err);
  CHECK(guessed_wrong.err.find(early_line) == std::string::npos);
  CHECK(guessed_wrong.err.find(wrong_line) != std::string::npos);
  CHECK(decoded_first(guessed_wrong.err));
  nlohmann::json up = FirstStream(Probe(dir + "/up.mp4"), "video");
  CHECK(up["width"] == 640);
  CHECK(up["height"] == 480);
  CHECK(OutOfPlace(FrameIndices(dir + "/up.mp4", 640, 480), kFrames) == 0);

  // With a card that says scale 2 the guess is right: the same frames as after the wrong guess.
  framemill::ModelCard card;
  card.name = "upscale2x";
  card.format = "torchscript";
  card.scale = 2;
  REQUIRE(framemill::SaveModelCard(upscale, card).ok());
  RunResult carded = RunJob(dir, job(dir + "/up-card.mp4", upscale), config, slow);
  REQUIRE_MESSAGE(carded.exit_code == 0, carded.err);
  CHECK(carded.err.find(early_line) != std::string::npos);
  CHECK(decoded_first(carded.err));
  CHECK(FrameHashes(dir + "/up-card.mp4", 640, 480) == FrameHashes(dir + "/up.mp4", 640, 480));
}
