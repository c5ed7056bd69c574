// `framemill preview`: the real binary on a real clip. Its contact sheet has exactly the size the
// layout promises, it decodes only around the sampled frames (ffmpeg's own count of decoded
// frames, which a preview that decoded the whole video could not keep under the clip's length),
// it leaves nothing but the sheet behind, and a bad --frames is a usage error.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

using namespace framemill::test;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Width and height from a PNG's IHDR chunk; {0, 0} when `bytes` is not a PNG.
std::pair<uint32_t, uint32_t> PngSize(const std::string& bytes) {
  if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 ||
      bytes.compare(12, 4, "IHDR") != 0) {
    return {0, 0};
  }
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

RunResult Preview(const std::string& dir, const nlohmann::json& job,
                  const std::vector<std::string>& args) {
  std::ofstream(dir + "/job.json") << job.dump(2);
  std::vector<std::string> argv = {"preview", dir + "/job.json"};
  argv.insert(argv.end(), args.begin(), args.end());
  return WaitJob(StartFramemill(dir, argv, {}, "preview"), 300);
}

}  // namespace

TEST_CASE("preview: a before/after sheet of K rows, an estimate, and only the samples decoded") {
  const std::string dir = ScratchDir("preview_sheet");
  // friday.mp4: 640x480 (square pixels), 185 frames at 30 fps, a keyframe every 35 frames,
  // AAC audio as stream 0.
  constexpr int kFrames = 3, kClipFrames = 185, kGop = 35;
  const nlohmann::json job = {{"input", TestClip("friday.mp4")},
                              {"output", dir + "/out.mp4"},
                              {"model", ModelPath("identity")},
                              {"device", TestDevice()},
                              {"workers", 2}};
  RunResult r = Preview(dir, job, {"--frames", std::to_string(kFrames), "--json"});
  // A build without OpenCV (configure warns; the GPU image has none) refuses, saying so. On
  // Debian the tests' own configure requires OpenCV, so this runs there.
  if (r.exit_code == 1 && r.err.find("preview needs OpenCV") != std::string::npos) {
    SkipTest("this framemill was built without OpenCV: preview cannot draw its contact sheet");
  }
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(r.out);

  // The sheet: two cells of 480 x 360 (480 wide at 4:3) per row, one row per sampled frame.
  const std::string sheet = dir + "/out.mp4.preview.png";
  CHECK(out.at("contact_sheet") == sheet);
  auto [w, h] = PngSize(Slurp(sheet));
  CHECK(w == 2 * 480);
  CHECK(h == kFrames * 360);
  CHECK(out.at("width") == w);
  CHECK(out.at("height") == h);
  CHECK(out.at("frames") == kFrames);
  CHECK(out.at("times").size() == kFrames);

  // Seeking: each sample costs the frames from the keyframe before it, its own stretch of
  // consecutive frames (48 frames in all by default) and a few in the decoder's threads, never
  // the stretches between samples. Decoding every frame up to each sample, or the whole clip
  // once, reaches the clip's length.
  const int64_t stretch = out.at("frames_per_sample");
  CHECK(stretch == 16);
  const int64_t decoded = out.at("frames_decoded");
  CHECK(decoded >= kFrames * stretch);
  CHECK(decoded <= kFrames * (kGop + stretch + 16));
  CHECK(decoded < kClipFrames);
  CHECK(out.at("source_frames") == kClipFrames);

  const nlohmann::json& e = out.at("estimate");
  CHECK(e.at("duration_s").get<double>() > 0);
  const std::string stage = e.at("limiting_stage");
  CHECK((stage == "decode" || stage == "workers" || stage == "encode"));
  CHECK(e.at("workers") == 2);
  CHECK(e.at("video_bytes").get<int64_t>() > 0);
  // 74 kb/s of AAC over 6.17 s, copied as it is: about 57 kB.
  CHECK(e.at("audio_bytes").get<int64_t>() > 50000);
  CHECK(e.at("audio_bytes").get<int64_t>() < 64000);
  CHECK(e.at("output_bytes").get<int64_t>() ==
        e.at("video_bytes").get<int64_t>() + e.at("audio_bytes").get<int64_t>());
  CHECK(e.at("peak_rss_bytes_per_worker").get<uint64_t>() > 0);
  CHECK(!e.at("assumptions").empty());

  // Nothing else is left: no output, no timeline, no private directory, no partial sheet.
  for (const std::string& name : ListDir(dir)) {
    INFO(name);
    CHECK((name == "job.json" || name == "out.mp4.preview.png" || name == "preview.stdout" ||
           name == "preview.stderr"));
  }
}

TEST_CASE("preview: --frames outside 1..64 is a usage error, and --help documents it") {
  const std::string dir = ScratchDir("preview_usage");
  const nlohmann::json job = {{"input", TestClip("friday.mp4")},
                              {"output", dir + "/out.mp4"},
                              {"model", ModelPath("identity")}};
  for (const char* k : {"0", "65", "100000", "-1", "six"}) {
    RunResult r = Preview(dir, job, {"--frames", k});
    INFO(k << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--frames") != std::string::npos);
  }
  CHECK(!std::ifstream(dir + "/out.mp4.preview.png").good());
  RunResult help = Shell("'" + std::string(FRAMEMILL_BIN) + "' preview --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--frames") != std::string::npos);
}

TEST_CASE("preview: an upscaler's rows are 1:1 crops of its output beside the source scaled there") {
  const std::string dir = ScratchDir("preview_upscale");
  // Noise (no two neighbouring pixels alike), kept exactly: x264 lossless, 4:4:4.
  const std::string input = dir + "/noise.mp4";
  RunResult made = Shell("ffmpeg -nostdin -v error -y -f lavfi -i \"nullsrc=s=320x240:r=25,"
                         "geq=lum='random(1)*255':cb=128:cr=128\" -frames:v 48 -c:v libx264 "
                         "-qp 0 -pix_fmt yuv444p '" + input + "'");
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  const nlohmann::json job = {{"input", input},
                              {"output", dir + "/out.mp4"},
                              {"model", ModelPath("upscale2x")},  // 2x nearest neighbour
                              {"device", TestDevice()},
                              {"encoder", {{"crf", 0}, {"pix_fmt", "yuv444p"}}}};
  RunResult r = Preview(dir, job, {"--frames", "2", "--json"});
  if (r.exit_code == 1 && r.err.find("preview needs OpenCV") != std::string::npos) {
    SkipTest("this framemill was built without OpenCV: preview cannot draw its contact sheet");
  }
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(r.out);
  CHECK(out.at("crops") == true);
  // Cells of the source's size (320x240); on the right a 320x240 crop of the 640x480 output.
  const std::string sheet = dir + "/out.mp4.preview.png";
  auto [w, h] = PngSize(Slurp(sheet));
  REQUIRE(w == 640);
  REQUIRE(h == 2 * 240);
  RunResult raw = Shell("ffmpeg -nostdin -v error -i '" + sheet + "' -f rawvideo -pix_fmt rgb24 -");
  REQUIRE(raw.out.size() == static_cast<size_t>(w) * h * 3);
  // Pairs of neighbouring pixels (from an even column of the crop) that are alike: every pair
  // of the output's own pixels (2x nearest neighbour, shown 1:1); few of the bicubic source's.
  auto alike = [&](uint32_t x0) {
    int64_t same = 0, all = 0;
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = x0; x + 1 < x0 + 320; x += 2) {
        const char* p = raw.out.data() + (static_cast<size_t>(y) * w + x) * 3;
        same += std::equal(p, p + 3, p + 3) ? 1 : 0;
        ++all;
      }
    }
    return static_cast<double>(same) / static_cast<double>(all);
  };
  INFO("left " << alike(0) << ", right " << alike(320));
  CHECK(alike(320) > 0.99);  // scaled into the cell (the old sheet), it would be the noise itself
  CHECK(alike(0) < 0.9);
}
