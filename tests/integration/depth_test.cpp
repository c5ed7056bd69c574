// Bit depth, chroma layout, range, HDR and colour through `identity` (issue 11 items 4 and 5):
// tiny generated sources of each kind, the output probed against the source (depth, layout, tags,
// HDR metadata) and compared with ffmpeg's psnr filter (luma and chroma, above stated floors);
// untagged sources against ffmpeg's own explicit-matrix YUV -> RGB -> YUV round trip at the same
// encoder settings; and a 10-bit gradient that only survives if 16 bits reach the model.
#include <doctest/doctest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "psnr.h"
#include "supervisor/media/source_intake.h"

using namespace framemill::test;

namespace {

const std::string kMasterDisplay =
    "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)";

void Make(const std::string& path, const std::string& args) {
  RunResult r = Shell("ffmpeg -nostdin -v error -y " + args + " '" + path + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, "cannot make " << path << ": " << r.err);
}

// Runs identity over `input` into dir/<name>.mkv (encoder keys merged into the job) and returns
// the output path; the job must succeed.
std::string RunIdentity(const std::string& dir, const std::string& input, const std::string& name,
                        const nlohmann::json& keys = nlohmann::json::object(),
                        RunResult* result = nullptr) {
  const std::string output = dir + "/" + name + ".mkv";
  nlohmann::json job = {{"input", input},
                        {"output", output},
                        {"model", ModelPath("identity")},
                        {"device", TestDevice()},
                        {"workers", 1},
                        // The PSNR floors below were measured with the default encoder, and
                        // FfmpegRoundTrip encodes as it does (the harness's is `ultrafast`).
                        {"encoder", {{"preset", "medium"}}}};
  job.update(keys);
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  if (result != nullptr) *result = r;
  return output;
}

framemill::VideoStreamInfo ProbeVideo(const std::string& path) {
  auto m = framemill::ProbeOwnFile("ffprobe", path, /*frame_times=*/false);
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  return m->video;
}

const std::string kSource = "-f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 12 ";

}  // namespace

TEST_CASE("depth: 10-bit, 12-bit, 4:2:2, 4:4:4 and full range keep depth, layout and range") {
  const std::string dir = ScratchDir("depth_formats");
  struct Row {
    std::string name;
    std::string make;   // ffmpeg options for the source
    std::string codec;  // the job's encoder
    std::string out_pix_fmt;
    double luma_floor, chroma_floor;  // dB; measured minus about 1.5
  };
  const std::string x264 = "-c:v libx264 -preset veryfast -crf 10 ";
  const std::string x265 = "-c:v libx265 -preset ultrafast -crf 10 -x265-params log-level=error ";
  const std::vector<Row> rows = {
      // Measured (y, u, v): 46.0 42.5 45.0; 44.9 40.6 41.1; 40.4 39.0 39.3; 43.3 36.8 36.5 (as
      // ffmpeg's own RGB round trip of it); 45.1 41.5 44.4.
      {"p10_420", x264 + "-pix_fmt yuv420p10le", "libx264", "yuv420p10le", 44, 40.5},
      {"p10_422", x264 + "-pix_fmt yuv422p10le", "libx264", "yuv422p10le", 43, 39},
      {"p12_420", x265 + "-pix_fmt yuv420p12le", "libx265", "yuv420p12le", 39, 37.5},
      {"p8_444", x264 + "-pix_fmt yuv444p", "libx264", "yuv444p", 42, 35},
      {"full_range", x264 + "-pix_fmt yuvj420p", "libx264", "yuvj420p", 43, 40},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const std::string src = dir + "/" + row.name + ".mkv";
    Make(src, kSource + row.make);
    nlohmann::json keys = {{"encoder", {{"codec", row.codec}, {"preset", "ultrafast"}}}};
    const std::string out = RunIdentity(dir, src, "out_" + row.name, keys);
    framemill::VideoStreamInfo s = ProbeVideo(src), o = ProbeVideo(out);
    CHECK(o.pix_fmt == row.out_pix_fmt);
    CHECK(o.bits_per_component == s.bits_per_component);
    CHECK(o.chroma_layout == s.chroma_layout);
    CHECK(o.color_range == (row.name == "full_range" ? "pc" : "tv"));
    Psnr p = MeasurePsnr(out, src);
    MESSAGE(row.name << ": PSNR y " << p.y << " u " << p.u << " v " << p.v);
    CHECK(p.y > row.luma_floor);
    CHECK(p.u > row.chroma_floor);
    CHECK(p.v > row.chroma_floor);
  }
}

TEST_CASE(
    "depth: a 12-bit source through libx264 (10 bits at most) is written at 10 with a warning") {
  const std::string dir = ScratchDir("depth_nearest");
  const std::string src = dir + "/p12.mkv";
  Make(src, kSource +
                "-pix_fmt yuv422p12le -c:v libx265 -preset ultrafast -crf 10 -x265-params "
                "log-level=error");
  RunResult r;
  const std::string out =
      RunIdentity(dir, src, "out", {{"encoder", {{"preset", "ultrafast"}}}}, &r);
  CHECK(ProbeVideo(out).pix_fmt == "yuv422p10le");
  CHECK(r.out.find("warning: libx264: the encoder has no pixel format for this 12-bit 422 "
                   "source; writing yuv422p10le instead") != std::string::npos);
}

TEST_CASE("depth: HDR10 keeps its tags, mastering display and content light level, HLG its tags") {
  const std::string dir = ScratchDir("depth_hdr");
  const std::string hdr10 = dir + "/hdr10.mkv", hlg = dir + "/hlg.mkv";
  Make(hdr10, kSource +
                  "-pix_fmt yuv420p10le -c:v libx265 -preset ultrafast -crf 10 -x265-params "
                  "'log-level=error:master-display=" +
                  kMasterDisplay +
                  ":max-cll=1000,400' -colorspace bt2020nc -color_primaries bt2020 -color_trc "
                  "smpte2084 -color_range tv");
  Make(hlg, kSource +
                "-pix_fmt yuv420p10le -c:v libx264 -preset veryfast -crf 10 -colorspace bt2020nc "
                "-color_primaries bt2020 -color_trc arib-std-b67");
  framemill::VideoStreamInfo s = ProbeVideo(hdr10);
  REQUIRE(s.hdr.mastering.present);  // the source has what the output must keep
  REQUIRE(s.hdr.light.present);
  const std::string out10 = RunIdentity(
      dir, hdr10, "out_hdr10", {{"encoder", {{"codec", "libx265"}, {"preset", "ultrafast"}}}});
  framemill::VideoStreamInfo o = ProbeVideo(out10);
  CHECK(o.pix_fmt == "yuv420p10le");
  CHECK(o.color_space == "bt2020nc");
  CHECK(o.color_primaries == "bt2020");
  CHECK(o.color_transfer == "smpte2084");
  CHECK(o.color_range == "tv");
  CHECK(o.hdr.mastering == s.hdr.mastering);
  CHECK(o.hdr.light == s.hdr.light);
  CHECK(o.hdr.light.max_cll == 1000);
  Psnr p = MeasurePsnr(out10, hdr10);
  MESSAGE("hdr10: PSNR y " << p.y << " u " << p.u << " v " << p.v);
  CHECK(p.y > 38);  // measured 39.7, 34.7, 36.6
  CHECK(p.u > 33);
  CHECK(p.v > 35);

  // Through libx264 (the default encoder) too: framemill reads the SEI back from the bitstream.
  RunResult r;
  RunIdentity(dir, hdr10, "out_hdr10_x264", {{"encoder", {{"preset", "ultrafast"}}}}, &r);
  CHECK(r.out.find("output pixel format yuv420p10le") != std::string::npos);

  const std::string outhlg = RunIdentity(dir, hlg, "out_hlg");
  o = ProbeVideo(outhlg);
  CHECK(o.pix_fmt == "yuv420p10le");
  CHECK(o.color_space == "bt2020nc");
  CHECK(o.color_primaries == "bt2020");
  CHECK(o.color_transfer == "arib-std-b67");
  p = MeasurePsnr(outhlg, hlg);
  MESSAGE("hlg: PSNR y " << p.y << " u " << p.u << " v " << p.v);
  CHECK(p.y > 40);  // measured 42.0, 35.4, 38.1
  CHECK(p.u > 34);
  CHECK(p.v > 36.5);
}

// ffmpeg's own round trip: the source's YUV to RGB and back with the matrix named both ways and
// ffmpeg's default flags, encoded as the job encodes (libx264, crf 18, preset medium).
Psnr FfmpegRoundTrip(const std::string& dir, const std::string& src, const std::string& matrix) {
  const std::string ref = dir + "/ref_" + matrix + ".mkv";
  const std::string m = "in_color_matrix=" + matrix + ":out_color_matrix=" + matrix;
  Make(ref, "-i '" + src + "' -vf scale=" + m + ",format=rgb24,scale=" + m +
                ",format=yuv420p -c:v libx264 -crf 18 -preset medium");
  return MeasurePsnr(ref, src);
}

TEST_CASE("depth: untagged SD and HD get the player's matrix and at least ffmpeg's round trip") {
  const std::string dir = ScratchDir("depth_untagged");
  struct Row {
    std::string name, size, matrix, tag;
  };
  for (const Row& row :
       {Row{"sd", "320x240", "bt601", "smpte170m"}, Row{"hd", "1280x720", "bt709", "bt709"}}) {
    INFO(row.name);
    const std::string src = dir + "/" + row.name + ".mp4";
    // Made from RGB with the matrix a player assumes for its size, and left untagged.
    Make(src, "-f lavfi -i testsrc2=size=" + row.size +
                  ":rate=25 -frames:v 8 -vf scale=out_color_matrix=" + row.matrix +
                  ",format=yuv420p -c:v libx264 -preset veryfast -crf 12");
    framemill::VideoStreamInfo s = ProbeVideo(src);
    REQUIRE(s.color_space.empty());  // untagged
    const std::string out = RunIdentity(dir, src, "out_" + row.name);
    framemill::VideoStreamInfo o = ProbeVideo(out);
    CHECK(o.color_space == row.tag);
    CHECK(o.color_range == "tv");
    Psnr ours = MeasurePsnr(out, src), ref = FfmpegRoundTrip(dir, src, row.matrix);
    MESSAGE(row.name << ": framemill y " << ours.y << " u " << ours.u << " v " << ours.v
                     << "; ffmpeg round trip y " << ref.y << " u " << ref.u << " v " << ref.v);
    CHECK(ours.y >= ref.y - 0.25);
    CHECK(ours.u >= ref.u - 0.25);
    CHECK(ours.v >= ref.v - 0.25);
  }
}

TEST_CASE("depth: a 10-bit gradient keeps more than 8 bits of levels through identity") {
  const std::string dir = ScratchDir("depth_gradient");
  const std::string src = dir + "/gradient.mkv";
  // Every column its own 10-bit luma level (64..959: limited range), flat chroma; lossless.
  Make(src,
       "-f lavfi -i nullsrc=size=896x16:rate=25 -frames:v 4 -vf "
       "format=yuv444p10le,geq=lum='64+X':cb=512:cr=512,format=yuv420p10le "
       "-c:v libx264 -qp 0 -preset veryfast");
  // FFV1: lossless, so what is lost is the path's own rounding.
  const std::string out =
      RunIdentity(dir, src, "out", {{"encoder", {{"codec", "ffv1"}, {"crf", -1}, {"preset", ""}}}});
  // The output's luma levels in its first row, 16-bit.
  RunResult r = Shell("ffmpeg -nostdin -v error -i '" + out +
                      "' -frames:v 1 -vf format=yuv420p10le -f rawvideo - | od -An -v -tu2 -w2 "
                      "| head -896 | sort -u | wc -l");
  REQUIRE(r.exit_code == 0);
  const int levels = std::stoi(r.out);
  MESSAGE("distinct luma levels in the output's first row: " << levels << " of 896");
  CHECK(levels > 700);  // an 8-bit path leaves at most 256 (about 224 in limited range)
  Psnr p = MeasurePsnr(out, src);
  MESSAGE("gradient: PSNR y " << p.y);
  // Measured: 58.0 dB (swscale's own 10-bit -> rgb48 -> 10-bit round trip gives the same); the
  // same round trip through rgb24 gives 44.7 dB.
  CHECK(p.y > 55);
}

TEST_CASE("depth: a rare colour tag reaches the output, or its nearest with a warning naming both") {
  const std::string dir = ScratchDir("depth_rare_tags");
  // Full range, BT.601 matrix, BT.709 primaries and the BT.470 M (gamma 2.2) transfer, which
  // ffprobe names "bt470m" and ffmpeg's -color_trc option "gamma22".
  const std::string gamma22 = dir + "/gamma22.mkv";
  Make(gamma22, kSource +
                    "-c:v libx264 -preset veryfast -crf 10 -pix_fmt yuvj420p -colorspace "
                    "smpte170m -color_primaries bt709 -color_trc gamma22 -color_range pc");
  framemill::VideoStreamInfo s = ProbeVideo(gamma22);
  REQUIRE(s.color_transfer == "bt470m");
  RunResult r;
  framemill::VideoStreamInfo o = ProbeVideo(RunIdentity(
      dir, gamma22, "out_gamma22", {{"encoder", {{"preset", "ultrafast"}}}}, &r));
  CHECK(o.color_transfer == "bt470m");
  CHECK(o.color_primaries == "bt709");
  CHECK(o.color_space == "smpte170m");
  CHECK(o.color_range == "pc");
  CHECK(r.out.find("warning:") == std::string::npos);  // kept as it is: nothing to warn of

  // EBU Tech 3213 primaries: neither x264 nor x265 writes them (their VUI tables end at
  // smpte432); the nearest they write is BT.470 B/G. FFV1 in Matroska carries the tag.
  const std::string ebu = dir + "/ebu3213.mkv";
  Make(ebu, kSource + "-c:v ffv1 -pix_fmt yuv420p -colorspace bt470bg -color_primaries 22 "
                      "-color_trc gamma28 -color_range tv");
  s = ProbeVideo(ebu);
  REQUIRE(s.color_primaries == "ebu3213");
  REQUIRE(s.color_transfer == "bt470bg");  // the option's "gamma28"
  for (const std::string codec : {"libx264", "libx265"}) {
    INFO(codec);
    o = ProbeVideo(RunIdentity(dir, ebu, "out_ebu_" + codec,
                               {{"encoder", {{"codec", codec}, {"preset", "ultrafast"}}}}, &r));
    CHECK(o.color_primaries == "bt470bg");
    CHECK(o.color_transfer == "bt470bg");
    CHECK(o.color_space == "bt470bg");
    CHECK(r.out.find("warning: " + codec +
                     ": colour primaries ebu3213 cannot be written; tagged bt470bg, the nearest "
                     "it writes") != std::string::npos);
  }
}

TEST_CASE("depth: 4:2:2 DNxHD and ProRes keep each plane within 1 dB of ffmpeg's round trip") {
  const std::string dir = ScratchDir("depth_422_planes");
  struct Row {
    std::string name, make, pix_fmt, rgb;
  };
  const std::vector<Row> rows = {
      // DNxHD's 8-bit 4:2:2 (1080p at 120 Mb/s is one of its fixed formats), three frames.
      {"dnxhd", "-f lavfi -i testsrc2=size=1920x1080:rate=25 -frames:v 3 -c:v dnxhd -b:v 120M "
                "-pix_fmt yuv422p -colorspace bt709",
       "yuv422p", "rgb24"},
      {"prores", kSource + "-c:v prores_ks -profile:v 2 -pix_fmt yuv422p10le -colorspace bt709",
       "yuv422p10le", "rgb48le"},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    const std::string src = dir + "/" + row.name + ".mov";
    Make(src, row.make);
    const std::string out = RunIdentity(dir, src, "out_" + row.name);
    CHECK(ProbeVideo(out).pix_fmt == row.pix_fmt);
    // ffmpeg's own: to RGB and back with the matrix named both ways, encoded as the job encodes.
    const std::string ref = dir + "/ref_" + row.name + ".mkv";
    const std::string m = "in_color_matrix=bt709:out_color_matrix=bt709";
    Make(ref, "-i '" + src + "' -vf scale=" + m + ",format=" + row.rgb + ",scale=" + m +
                  ",format=" + row.pix_fmt + " -c:v libx264 -crf 18 -preset medium");
    Psnr ours = MeasurePsnr(out, src), theirs = MeasurePsnr(ref, src);
    MESSAGE(row.name << ": framemill y " << ours.y << " u " << ours.u << " v " << ours.v
                     << "; ffmpeg y " << theirs.y << " u " << theirs.u << " v " << theirs.v);
    CHECK(ours.y > theirs.y - 1);
    CHECK(ours.u > theirs.u - 1);
    CHECK(ours.v > theirs.v - 1);
  }
}
