// Real recorded clips (odd stream orders, B-frames, edit lists, VP8 with millisecond timestamps)
// through the identity model: same frames, same rate, picture kept, audio kept.
#include <doctest/doctest.h>

#include <opencv2/core.hpp>

#include "harness.h"

using namespace framemill::test;

namespace {

struct Clip {
  const char* file;
  const char* output_ext;
  bool has_audio;
};

// Mean PSNR of output against input over every frame, both decoded the same way.
double MeanPsnr(const std::string& a, const std::string& b, int w, int h) {
  std::vector<std::vector<uint8_t>> frames;
  DecodeFrames(a, w, h, [&](const uint8_t* rgb) {
    frames.emplace_back(rgb, rgb + static_cast<size_t>(w) * h * 3);
  });
  double sum = 0;
  size_t i = 0;
  DecodeFrames(b, w, h, [&](const uint8_t* rgb) {
    if (i >= frames.size()) return;
    cv::Mat ma(h, w, CV_8UC3, frames[i].data());
    cv::Mat mb(h, w, CV_8UC3, const_cast<uint8_t*>(rgb));
    sum += std::min(cv::PSNR(ma, mb), 100.0);
    ++i;
  });
  return i == 0 ? 0 : sum / static_cast<double>(i);
}

}  // namespace

TEST_CASE("real footage: every shared clip through identity keeps frames, rate, picture, audio") {
  const Clip clips[] = {{"d0.mp4", "mp4", false},
                        {"d20.mp4", "mp4", true},
                        {"friday.mp4", "mp4", true},  // audio is stream 0
                        {"flower.webm", "mkv", true}};
  for (const Clip& clip : clips) {
    SUBCASE(clip.file) {
      const std::string dir = ScratchDir(std::string("real_") + clip.file);
      const std::string input = TestClip(clip.file);
      const std::string output = dir + "/out." + clip.output_ext;
      nlohmann::json job = {
          {"input", input},        {"output", output},   {"model", ModelCopy("identity", dir)},
          {"workers", 2},          {"chunk_frames", 16}, {"segment_seconds", 2},
          {"device", TestDevice()}};
      RunResult r = RunJob(dir, job);
      INFO("stderr: " << r.err);
      REQUIRE(r.exit_code == 0);

      nlohmann::json in = Probe(input), out = Probe(output);
      nlohmann::json vin = FirstStream(in, "video"), vout = FirstStream(out, "video");
      REQUIRE(!vout.is_null());
      CHECK(CountFrames(output) == CountFrames(input));
      CHECK(vout["r_frame_rate"] == vin["r_frame_rate"]);
      CHECK(vout["width"] == vin["width"]);
      CHECK(vout["height"] == vin["height"]);
      CHECK(FirstStream(out, "audio").is_null() == !clip.has_audio);
      if (clip.has_audio) {
        CHECK(FirstStream(out, "audio")["codec_name"] == FirstStream(in, "audio")["codec_name"]);
      }
      double psnr = MeanPsnr(input, output, vin["width"], vin["height"]);
      INFO("PSNR " << psnr << " dB");
      CHECK(psnr > 35.0);
      CHECK(SharedMemoryObjects().empty());
      CHECK(ProcessesMentioning(dir).empty());
    }
  }
}

TEST_CASE("upscale2x on a real clip doubles width and height exactly") {
  const std::string dir = ScratchDir("upscale2x");
  const std::string input = TestClip("d20.mp4");
  const std::string output = dir + "/out.mp4";
  nlohmann::json job = {
      {"input", input}, {"output", output},   {"model", ModelCopy("upscale2x", dir)},
      {"workers", 2},   {"chunk_frames", 24}, {"device", TestDevice()}};
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json vin = FirstStream(Probe(input), "video");
  nlohmann::json vout = FirstStream(Probe(output), "video");
  CHECK(vout["width"].get<int>() == 2 * vin["width"].get<int>());
  CHECK(vout["height"].get<int>() == 2 * vin["height"].get<int>());
  CHECK(CountFrames(output) == CountFrames(input));
  CHECK(!FirstStream(Probe(output), "audio").is_null());
}
