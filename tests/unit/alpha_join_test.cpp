// The alpha join's pure parts: what a job does with a source's alpha under each `alpha` mode and
// encoder, and the segment encoder's arguments that read the source's alpha beside the picture.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "supervisor/media/alpha_join.h"
#include "supervisor/media/depth_check.h"
#include "supervisor/media/ffmpeg_pipes.h"

using namespace framemill;

namespace {

// Debian 12's ffmpeg 5.1, `ffmpeg -h encoder=...`.
const std::vector<std::string> kProres = {"yuv422p10le", "yuv444p10le", "yuva444p10le"};
const std::vector<std::string> kFfv1 = {"yuv420p",      "yuva420p",     "yuv444p12le",
                                        "yuva444p10le", "yuva444p16le", "yuva422p10le"};
const std::vector<std::string> kX264 = {"yuv420p", "yuv444p", "yuv444p10le", "gray"};

VideoStreamInfo Source(const std::string& codec, const std::string& pix_fmt, bool alpha) {
  VideoStreamInfo v;
  v.index = 0;
  v.codec = codec;
  v.pix_fmt = pix_fmt;
  v.alpha = alpha;
  v.frame_rate = {25, 1};
  v.frame_count = 40;
  v.width = v.display_width = 160;
  v.height = v.display_height = 120;
  return v;
}

size_t Find(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

}  // namespace

TEST_CASE("alpha: a source without alpha is left alone whatever the mode") {
  for (AlphaMode m : {AlphaMode::kAuto, AlphaMode::kKeep, AlphaMode::kDrop}) {
    Result<AlphaDecision> d =
        DecideAlpha(m, Source("h264", "yuv420p", false), "libx264", "yuv420p", kX264);
    REQUIRE(d.ok());
    CHECK_FALSE(d->keep);
    CHECK(d->warning.empty());
  }
}

TEST_CASE("alpha: keep picks the encoder's format with alpha nearest the chosen one") {
  const VideoStreamInfo v = Source("prores", "yuva444p12le", true);
  Result<AlphaDecision> d = DecideAlpha(AlphaMode::kKeep, v, "prores_ks", "yuv444p10le", kProres);
  REQUIRE(d.ok());
  CHECK(d->keep);
  CHECK(d->pix_fmt == "yuva444p10le");
  // prores_ks has no 4:2:2 alpha: 4:4:4 holds the chroma.
  d = DecideAlpha(AlphaMode::kAuto, v, "prores_ks", "yuv422p10le", kProres);
  REQUIRE(d.ok());
  CHECK(d->pix_fmt == "yuva444p10le");
  // ffv1 has no 12-bit alpha format: 16 bits, the fewest at or above 12.
  d = DecideAlpha(AlphaMode::kKeep, v, "ffv1", "yuv444p12le", kFfv1);
  REQUIRE(d.ok());
  CHECK(d->pix_fmt == "yuva444p16le");
  d = DecideAlpha(AlphaMode::kKeep, v, "ffv1", "yuv420p", kFfv1);
  REQUIRE(d.ok());
  CHECK(d->pix_fmt == "yuva420p");
}

TEST_CASE("alpha: keep with an encoder that cannot hold alpha is refused, auto drops and warns") {
  const VideoStreamInfo v = Source("prores", "yuva444p12le", true);
  Result<AlphaDecision> d = DecideAlpha(AlphaMode::kKeep, v, "libx264", "yuv444p10le", kX264);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == StatusCode::kInvalidJob);
  CHECK(d.status().message().find("libx264 has no pixel format with alpha") != std::string::npos);
  d = DecideAlpha(AlphaMode::kAuto, v, "libx264", "yuv444p10le", kX264);
  REQUIRE(d.ok());
  CHECK_FALSE(d->keep);
  CHECK(d->warning.find("alpha channel (yuva444p12le) is dropped (libx264 has no pixel format") !=
        std::string::npos);
  // VP9's alpha is Matroska's, beside the bitstream: the NUT segments lose it.
  const VideoStreamInfo vp9 = Source("vp9", "yuv420p", true);
  d = DecideAlpha(AlphaMode::kKeep, vp9, "libvpx-vp9", "yuv420p", {"yuv420p", "yuva420p"});
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find("(vp9 alpha, stream tag alpha_mode 1)") != std::string::npos);
  CHECK(d.status().message().find("Matroska block additions") != std::string::npos);
  d = DecideAlpha(AlphaMode::kDrop, v, "prores_ks", "yuv444p10le", kProres);
  REQUIRE(d.ok());
  CHECK_FALSE(d->keep);
  CHECK(d->warning.find("dropped (the job's alpha is \"drop\")") != std::string::npos);
}

TEST_CASE(
    "alpha: the segment encoder reads the source's alpha of its own frames beside the "
    "picture") {
  SourceFile file{7, "src.webm", {"-protocol_whitelist", "file,fd"}};
  VideoStreamInfo v = Source("vp9", "yuv420p", true);
  v.timestamps = true;
  v.start_time = 0;
  SegmentFormat f;
  f.width = 320;
  f.height = 240;
  f.frame_rate = {25, 1};
  f.encoder.codec = "ffv1";
  f.encoder.preset = "";
  f.encoder.crf = -1;
  f.encoder.pix_fmt = "yuva420p";
  f.color.color_space = "bt709";
  const AlphaSource alpha{&file, &v, 0.0, {"transpose=clock"}};
  const AlphaTarget target{320, 240, {25, 1}, {1, 1}, "yuva420p"};
  const std::vector<std::string> a = JoinAlphaArguments(EncoderArguments(f), alpha, target, 16, 8);
  // The picture first, then the source under its restrictions, through libvpx (VP9's alpha),
  // seeked as the decoder would be for frame 16.
  const size_t pipe = Find(a, "pipe:0"), src = Find(a, "/proc/self/fd/7");
  REQUIRE(src < a.size());
  CHECK(pipe < src);
  CHECK(Find(a, "-protocol_whitelist") < src);
  CHECK(a[Find(a, "libvpx-vp9") - 1] == "-c:v");
  CHECK(Find(a, "-ss") < src);
  CHECK(Find(a, "-vf") == a.size());
  const size_t g = Find(a, "-filter_complex");
  REQUIRE(g + 1 < a.size());
  const std::string& graph = a[g + 1];
  INFO(graph);
  CHECK(graph.find("[1:0]transpose=clock,trim=start=0.620000,scale=320:240:flags=bicubic,"
                   "format=yuva420p,setsar=1/1,settb=1/25,setpts=N[alpha]") != std::string::npos);
  CHECK(graph.find("format=yuva420p,settb=1/25,setpts=N[picture]") != std::string::npos);
  CHECK(graph.find("[picture][alpha]mergeplanes=0x00010213:yuva420p[out]") != std::string::npos);
  CHECK(a[Find(a, "[out]") - 1] == "-map");
  // A source without timestamps: its frames before the segment counted off.
  v.timestamps = false;
  const std::vector<std::string> b = JoinAlphaArguments(EncoderArguments(f), alpha, target, 16, 8);
  CHECK(b[Find(b, "-filter_complex") + 1].find("trim=start_frame=16,scale=") != std::string::npos);
}

TEST_CASE("alpha: the verification wants the alpha plane the job kept") {
  DepthExpectation want;
  want.pix_fmt = "yuva444p10le";
  want.codec = "prores_ks";
  VideoStreamInfo got;
  got.pix_fmt = "yuva444p12le";  // ffmpeg 5.1 reads ProRes 4444 back as 12-bit
  got.bits_per_component = 12;
  got.chroma_layout = "444";
  got.alpha = true;
  CHECK(CheckDepthAndColor(want, got).ok());
  got.alpha = false;
  got.pix_fmt = "yuv444p12le";
  const Status s = CheckDepthAndColor(want, got);
  CHECK(s.code() == StatusCode::kVerifyFailed);
  CHECK(s.message().find("alpha") != std::string::npos);
  // Elsewhere the depth written is the depth read back.
  want.codec = "ffv1";
  got.alpha = true;
  CHECK(CheckDepthAndColor(want, got).code() == StatusCode::kVerifyFailed);
}
