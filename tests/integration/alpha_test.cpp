// A source's alpha through framemill (the job key `alpha`): kept, it travels beside the model and
// is joined again at encode, frame by frame, scaled with the frame by an upscaler; dropped, the
// job says so; kept with an encoder that cannot hold it, the job is refused before any frame.
// The sources are made here by ffmpeg's own encoders (ProRes 4444 and VP9 with alpha) with an
// alpha that moves from frame to frame, so that a frame's alpha joined to its neighbour shows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

using namespace framemill::test;

namespace {

constexpr int kWidth = 160, kHeight = 120, kFrames = 40;

std::string Q(const std::string& s) { return "'" + s + "'"; }

// 40 frames at 25 fps, an alpha wave that moves 0.7 radians a frame, in the encoder's own
// format (prores_ks's yuva444p10le, libvpx-vp9's yuva420p): no conversion before the encoder.
std::string AlphaSource(bool ten_bit) {
  const int mid = ten_bit ? 512 : 128, amp = ten_bit ? 480 : 120;
  return "testsrc=size=160x120:rate=25:duration=1.6,format=" +
         std::string(ten_bit ? "yuva444p10le" : "yuva420p") +
         ",geq=lum='lum(X,Y)':cb='cb(X,Y)':cr='cr(X,Y)':a='" + std::to_string(mid) + "+" +
         std::to_string(amp) + "*sin(N*0.7+X/15+Y/40)'";
}

// The alpha planes of every frame of `path` as 16-bit values, `filter` (a scale) first. Read
// through yuva444p16le: alphaextract's gray output goes through swscale as limited-range luma.
std::vector<std::vector<uint16_t>> AlphaPlanes(const std::string& path, int width, int height,
                                               const std::string& filter = "") {
  const bool side = path.size() > 5 && path.compare(path.size() - 5, 5, ".webm") == 0;
  RunResult r = Shell(std::string("ffmpeg -v error ") + (side ? "-c:v libvpx-vp9 " : "") + "-i " +
                      Q(path) + " -vf " + (filter.empty() ? "" : filter + ",") +
                      "format=yuva444p16le,extractplanes=a -f rawvideo -pix_fmt gray16le -");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const size_t plane = static_cast<size_t>(width) * height * 2;
  REQUIRE(r.out.size() % plane == 0);
  std::vector<std::vector<uint16_t>> planes;
  for (size_t at = 0; at < r.out.size(); at += plane) {
    std::vector<uint16_t> p(plane / 2);
    std::memcpy(p.data(), r.out.data() + at, plane);
    planes.push_back(std::move(p));
  }
  return planes;
}

int MaxDiff(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  int d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(int{a[i]} - int{b[i]}));
  return d;
}

RunResult Run(const std::string& dir, const std::string& input, const std::string& output,
              const std::string& model, const nlohmann::json& keys) {
  nlohmann::json job = {{"input", input},
                        {"output", output},
                        {"model", ModelPath(model)},
                        {"device", TestDevice()},
                        {"workers", 1},
                        // 8-frame segments: all but the first seek the source for their alpha.
                        {"chunk_frames", 8},
                        {"segment_seconds", 0.32},
                        {"encoder", {{"codec", "prores_ks"}, {"preset", ""}, {"crf", -1}}}};
  job.update(keys);
  return RunJob(dir, job);
}

// Each output frame's alpha against the source's frame of the same index (scaled by `scale`,
// bicubic, as framemill scales it): within one level of 255, while its neighbour's differs by
// far more.
void CheckAlphaPerFrame(const std::string& src, const std::string& out, int scale) {
  constexpr int kLevel = 257;  // one level of 255, in 16-bit values
  const int w = kWidth * scale, h = kHeight * scale;
  const std::vector<std::vector<uint16_t>> want = AlphaPlanes(
      src, w, h,
      scale == 1 ? "" : "scale=" + std::to_string(w) + ":" + std::to_string(h) + ":flags=bicubic");
  const std::vector<std::vector<uint16_t>> got = AlphaPlanes(out, w, h);
  REQUIRE(want.size() == static_cast<size_t>(kFrames));
  REQUIRE(got.size() == want.size());
  int worst = 0, off = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int d = MaxDiff(got[i], want[i]);
    worst = std::max(worst, d);
    if (d > kLevel) ++off;
    if (i + 1 < got.size()) CHECK(MaxDiff(got[i], want[i + 1]) > 8 * kLevel);
  }
  MESSAGE("largest alpha difference from the source's frame: " << worst << " of 65535");
  CHECK(off == 0);
}

// The source in `dir`: ProRes 4444 with alpha (src.mov), or VP9 with alpha in WebM (src.webm;
// the test is skipped without libvpx-vp9).
std::string MakeSource(const std::string& dir, bool prores) {
  const std::string src = dir + (prores ? "/src.mov" : "/src.webm");
  RunResult make =
      Shell("ffmpeg -v error -y -f lavfi -i \"" + AlphaSource(prores) + "\"" +
            (prores ? " -c:v prores_ks -profile:v 4444 " : " -c:v libvpx-vp9 -deadline realtime ") +
            Q(src));
  if (!prores && make.exit_code != 0)
    SkipTest("this ffmpeg has no libvpx-vp9 encoder: " + make.err);
  REQUIRE_MESSAGE(make.exit_code == 0, make.err);
  return src;
}

}  // namespace

TEST_CASE("alpha: ProRes 4444 with alpha through identity, alpha keep: each frame's alpha kept") {
  const std::string dir = ScratchDir("alpha_keep_prores");
  const std::string src = MakeSource(dir, true), out = dir + "/out.mov";
  RunResult r = Run(dir, src, out, "identity", {{"alpha", "keep"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("alpha channel") == std::string::npos);  // no warning of a loss
  // The joined file (segments concatenated) keeps the alpha plane.
  CHECK(FirstStream(Probe(out), "video").value("pix_fmt", "").rfind("yuva444p", 0) == 0);
  CheckAlphaPerFrame(src, out, 1);
}

TEST_CASE("alpha: VP9 alpha (alpha_mode 1) kept into ProRes 4444, frame by frame") {
  const std::string dir = ScratchDir("alpha_keep_vp9");
  const std::string src = MakeSource(dir, false), out = dir + "/out.mov";
  // The default ("auto") keeps it: the encoder holds alpha.
  RunResult r = Run(dir, src, out, "identity", nlohmann::json::object());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(FirstStream(Probe(out), "video").value("pix_fmt", "").rfind("yuva444p", 0) == 0);
  CheckAlphaPerFrame(src, out, 1);
}

TEST_CASE("alpha: upscale2x keeps the alpha scaled 2x with the frame") {
  const std::string dir = ScratchDir("alpha_keep_upscale");
  const std::string src = MakeSource(dir, true), out = dir + "/out.mkv";
  RunResult r =
      Run(dir, src, out, "upscale2x",
          {{"alpha", "keep"}, {"encoder", {{"codec", "ffv1"}, {"preset", ""}, {"crf", -1}}}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json v = FirstStream(Probe(out), "video");
  CHECK(v.value("width", 0) == 2 * kWidth);
  CHECK(v.value("pix_fmt", "").rfind("yuva444p", 0) == 0);
  CheckAlphaPerFrame(src, out, 2);
}

TEST_CASE("alpha: drop warns and writes an opaque output") {
  const std::string dir = ScratchDir("alpha_drop");
  const std::string src = MakeSource(dir, true), out = dir + "/out.mov";
  RunResult r = Run(dir, src, out, "identity", {{"alpha", "drop"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("alpha channel (yuva444p12le) is dropped (the job's alpha is \"drop\")") !=
        std::string::npos);
  // ProRes 4444 without alpha (read back as 12-bit by ffmpeg's decoder).
  CHECK(FirstStream(Probe(out), "video").value("pix_fmt", "").rfind("yuv444p", 0) == 0);
}

TEST_CASE("alpha: keep with libx264, which cannot hold alpha, is refused before any frame") {
  const std::string dir = ScratchDir("alpha_keep_x264");
  const std::string src = MakeSource(dir, true), out = dir + "/out.mp4";
  RunResult r = Run(dir, src, out, "identity",
                    {{"alpha", "keep"},
                     {"encoder", {{"codec", "libx264"}, {"preset", "ultrafast"}, {"crf", 18}}}});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("invalid_job") != std::string::npos);
  CHECK(r.err.find("alpha \"keep\": the source's alpha channel (yuva444p12le) cannot be kept: "
                   "libx264 has no pixel format with alpha") != std::string::npos);
  CHECK_FALSE(std::ifstream(out).good());
}
