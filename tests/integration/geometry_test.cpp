// Sources whose picture is not what they store, through `identity`: display matrices (the eight
// right-angle orientations a phone or an editor writes), anamorphic PAL and NTSC, odd sizes and
// interlaced video. Each output must show as the source does: displayed size, display aspect
// ratio, field order, frame count, and the picture itself (compared with ffmpeg's own
// autorotated decode of the source).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "harness.h"

using namespace framemill::test;

namespace {

constexpr int kFrames = 12;

std::string Q(const std::string& s) { return "'" + s + "'"; }

void MustShell(const std::string& command) {
  RunResult r = Shell(command);
  REQUIRE_MESSAGE(r.exit_code == 0, command << "\n" << r.err);
}

// A 64x48 clip with a marker in each quadrant (red top-left, blue top-right, green bottom-left,
// grey bottom-right), so that any turn or mirror of it shows.
void MakeQuadrants(const std::string& path, const std::string& extra_filters = "") {
  MustShell("ffmpeg -nostdin -v error -y -f lavfi -i color=gray:s=64x48:r=25 -frames:v " +
            std::to_string(kFrames) +
            " -vf drawbox=x=0:y=0:w=32:h=24:color=red:t=fill,"
            "drawbox=x=32:y=0:w=32:h=24:color=blue:t=fill,"
            "drawbox=x=0:y=24:w=32:h=24:color=green:t=fill" +
            extra_filters + " -c:v libx264 -preset veryfast -crf 12 -pix_fmt yuv420p " + Q(path));
}

// Writes the 2x2 part of the display matrix of the first 'tkhd' box of an MP4 file (as phones
// and editors do: ffmpeg 5.1 writes one from a "rotate" tag only when stream-copying, and has
// no option for a mirrored one).
void SetMp4Matrix(const std::string& path, int a, int b, int c, int d) {
  std::string data;
  {
    std::ifstream in(path, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t at = data.find("tkhd");
  REQUIRE(at != std::string::npos);
  const int version = static_cast<unsigned char>(data[at + 4]);
  // version/flags, times, track id, reserved, duration, reserved, layer, group, volume, reserved
  size_t matrix = at + 4 + 4 + (version == 1 ? 8 + 8 + 4 + 4 + 8 : 4 + 4 + 4 + 4 + 4) + 8 + 8;
  auto put = [&](size_t offset, int32_t v) {
    uint32_t u = static_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) data[offset + i] = static_cast<char>((u >> (24 - 8 * i)) & 0xff);
  };
  const int32_t values[9] = {a * 65536, b * 65536, 0, c * 65536, d * 65536, 0, 0, 0, 1 << 30};
  for (int i = 0; i < 9; ++i) put(matrix + 4 * static_cast<size_t>(i), values[i]);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

RunResult Identity(const std::string& dir, const std::string& input, const std::string& output,
                   const nlohmann::json& keys = nlohmann::json::object(),
                   const std::string& model = "identity") {
  nlohmann::json job = {{"input", input},
                        {"output", output},
                        {"model", ModelPath(model)},
                        {"device", TestDevice()},
                        {"workers", 1}};
  job.update(keys);
  return RunJob(dir, job);
}

struct Shown {
  int width = 0, height = 0;
  std::string sar;  // "64:45"
  std::string field_order;
  bool matrix = false;
};

Shown ProbeShown(const std::string& path) {
  nlohmann::json v = FirstStream(Probe(path), "video");
  REQUIRE(v.is_object());
  Shown s;
  s.width = v.value("width", 0);
  s.height = v.value("height", 0);
  s.sar = v.value("sample_aspect_ratio", "");
  s.field_order = v.value("field_order", "");
  s.matrix = v.contains("side_data_list") && v.dump().find("displaymatrix") != std::string::npos;
  return s;
}

// Each frame's (interlaced_frame, top_field_first) for the first frames of `path`.
std::vector<std::string> FrameFields(const std::string& path) {
  RunResult r = Shell(
      "ffprobe -v error -select_streams v:0 -read_intervals %+#4 -show_entries "
      "frame=interlaced_frame,top_field_first -of csv=p=0 " +
      Q(path));
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line.substr(0, 3));
  }
  return lines;
}

// Mean absolute difference per value between the frames of two videos of the same displayed
// size (ffmpeg's default decode, which turns a source by its display matrix), and frame counts.
double MeanDifference(const std::string& a, const std::string& b, int w, int h, int64_t* frames) {
  std::vector<std::vector<uint8_t>> first;
  DecodeFrames(a, w, h, [&](const uint8_t* rgb) {
    first.emplace_back(rgb, rgb + static_cast<size_t>(w) * h * 3);
  });
  double worst = 0;
  size_t i = 0;
  *frames = DecodeFrames(b, w, h, [&](const uint8_t* rgb) {
    if (i >= first.size()) return;
    double sum = 0;
    for (size_t k = 0; k < first[i].size(); ++k) sum += std::abs(first[i][k] - rgb[k]);
    worst = std::max(worst, sum / static_cast<double>(first[i].size()));
    ++i;
  });
  if (static_cast<int64_t>(first.size()) != *frames) return 1e9;
  return worst;
}

// The colour name at (x, y) of the first frame of `path` (w x h): r, g, b, or '.' for grey.
char ColourAt(const std::string& path, int w, int h, int x, int y) {
  char c = '?';
  bool first = true;
  DecodeFrames(path, w, h, [&](const uint8_t* rgb) {
    if (!first) return;
    first = false;
    const uint8_t* p = rgb + (static_cast<size_t>(y) * w + x) * 3;
    if (p[0] > 180 && p[1] < 90 && p[2] < 90)
      c = 'r';
    else if (p[1] > 90 && p[0] < 90 && p[2] < 90)
      c = 'g';
    else if (p[2] > 180 && p[0] < 90 && p[1] < 90)
      c = 'b';
    else if (std::abs(p[0] - 128) < 30 && std::abs(p[1] - 128) < 30)
      c = '.';
  });
  return c;
}

// The four corners' colours: top-left, top-right, bottom-left, bottom-right.
std::string Corners(const std::string& path, int w, int h) {
  return {ColourAt(path, w, h, 3, 3), ColourAt(path, w, h, w - 4, 3),
          ColourAt(path, w, h, 3, h - 4), ColourAt(path, w, h, w - 4, h - 4)};
}

// Combing: the mean of |row y - mean(rows y-1, y+1)| over the first frame's luma-ish values.
double Combing(const std::string& path, int w, int h) {
  double comb = 0;
  bool first = true;
  DecodeFrames(path, w, h, [&](const uint8_t* rgb) {
    if (!first) return;
    first = false;
    double sum = 0;
    for (int y = 1; y + 1 < h; ++y) {
      for (int x = 0; x < w * 3; ++x) {
        auto at = [&](int yy) {
          return static_cast<double>(rgb[static_cast<size_t>(yy) * w * 3 + x]);
        };
        sum += std::fabs(at(y) - (at(y - 1) + at(y + 1)) / 2);
      }
    }
    comb = sum / (static_cast<double>(w) * 3 * (h - 2));
  });
  return comb;
}

}  // namespace

TEST_CASE("geometry: display matrices (90, 180, 270, mirrored) come out upright, no matrix") {
  const std::string dir = ScratchDir("geometry_orientation");
  const std::string plain = dir + "/plain.mp4";
  MakeQuadrants(plain);
  REQUIRE(Corners(plain, 64, 48) == "rbg.");
  struct Case {
    const char* name;
    int a, b, c, d;
    int w, h;             // displayed
    const char* corners;  // as ffmpeg's autorotation shows them (checked by hand once)
  };
  const Case cases[] = {
      {"r90", 0, 1, -1, 0, 48, 64, "gr.b"},
      {"r180", -1, 0, 0, -1, 64, 48, ".gbr"},
      {"r270", 0, -1, 1, 0, 48, 64, "b.rg"},
      {"mirror", -1, 0, 0, 1, 64, 48, "br.g"},    // a front camera's mirror
      {"transpose", 0, 1, 1, 0, 48, 64, "rgb."},  // mirrored and turned: the diagonal flip
  };
  for (const Case& k : cases) {
    CAPTURE(k.name);
    const std::string src = dir + "/" + k.name + ".mp4";
    MustShell("cp " + Q(plain) + " " + Q(src));
    SetMp4Matrix(src, k.a, k.b, k.c, k.d);
    REQUIRE(ProbeShown(src).matrix);
    REQUIRE(Corners(src, k.w, k.h) == k.corners);  // the reference: ffmpeg's own autorotation
    const std::string out = dir + "/" + k.name + ".out.mp4";
    RunResult r = Identity(dir, src, out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    Shown s = ProbeShown(out);
    CHECK(s.width == k.w);
    CHECK(s.height == k.h);
    CHECK_FALSE(s.matrix);
    CHECK(Corners(out, k.w, k.h) == k.corners);
    int64_t frames = 0;
    double diff = MeanDifference(src, out, k.w, k.h, &frames);
    CHECK(frames == kFrames);
    CHECK(diff < 4.0);
  }
}

TEST_CASE("geometry: anamorphic PAL and NTSC keep their sample and display aspect") {
  const std::string dir = ScratchDir("geometry_aspect");
  struct Case {
    const char* name;
    int w, h;
    const char* sar;
  };
  // 720x576 and 720x480 scaled to a quarter, each keeping its sample aspect.
  for (const Case& k : {Case{"pal", 180, 144, "64:45"}, Case{"ntsc", 180, 120, "8:9"}}) {
    CAPTURE(k.name);
    const std::string src = dir + "/" + k.name + ".mkv";
    std::string setsar = k.sar;
    setsar[setsar.find(':')] = '/';
    MustShell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc=s=" + std::to_string(k.w) + "x" +
              std::to_string(k.h) + ":r=25 -frames:v " + std::to_string(kFrames) +
              " -vf setsar=" + setsar + " -c:v libx264 -preset veryfast -crf 12 " + Q(src));
    REQUIRE(ProbeShown(src).sar == k.sar);
    const std::string out = dir + "/" + k.name + ".out.mp4";
    RunResult r = Identity(dir, src, out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    Shown s = ProbeShown(out);
    CHECK(s.width == k.w);
    CHECK(s.height == k.h);
    CHECK(s.sar == k.sar);
    CHECK(FirstStream(Probe(out), "video").value("display_aspect_ratio", "") ==
          FirstStream(Probe(src), "video").value("display_aspect_ratio", "?"));
    // testsrc's sharp colour edges lose a few levels in two 4:2:0 encodes; a stretched or
    // scrambled picture differs by tens.
    int64_t frames = 0;
    CHECK(MeanDifference(src, out, k.w, k.h, &frames) < 8.0);
    CHECK(frames == kFrames);
  }
  // Turned a quarter, the pixels' aspect turns too: 4:3 stored is 3:4 upright.
  const std::string turned = dir + "/turned.mp4";
  MakeQuadrants(turned, ",setsar=4/3");
  SetMp4Matrix(turned, 0, 1, -1, 0);
  const std::string out = dir + "/turned.out.mp4";
  RunResult r = Identity(dir, turned, out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  Shown s = ProbeShown(out);
  CHECK(s.width == 48);
  CHECK(s.height == 64);
  CHECK(s.sar == "3:4");
}

TEST_CASE("geometry: odd sizes are shown at their size, through identity and a 2x model") {
  const std::string dir = ScratchDir("geometry_odd");
  const std::string src = dir + "/odd.mkv";
  // 4:2:0 (yuv420p allows odd sizes in FFV1): pix_fmt auto would keep an RGB source's 4:4:4.
  MustShell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc=s=321x241:r=25 -frames:v " +
            std::to_string(kFrames) + " -pix_fmt yuv420p -c:v ffv1 " + Q(src));
  REQUIRE(ProbeShown(src).width == 321);
  // libx264 (the default) cannot code 4:2:0 at an odd size: 4:4:4 instead.
  const std::string out = dir + "/odd.out.mp4";
  RunResult r = Identity(dir, src, out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  Shown s = ProbeShown(out);
  CHECK(s.width == 321);
  CHECK(s.height == 241);
  CHECK(FirstStream(Probe(out), "video").value("pix_fmt", "") == "yuv444p");
  int64_t frames = 0;
  CHECK(MeanDifference(src, out, 321, 241, &frames) < 4.0);
  CHECK(frames == kFrames);
  // An encoder that takes odd sizes keeps 4:2:0.
  const std::string vp9 = dir + "/odd.out.webm";
  r = Identity(dir, src, vp9,
               {{"encoder", {{"codec", "libvpx-vp9"}, {"preset", ""}, {"crf", 30}}}});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  s = ProbeShown(vp9);
  CHECK(s.width == 321);
  CHECK(s.height == 241);
  CHECK(FirstStream(Probe(vp9), "video").value("pix_fmt", "") == "yuv420p");
  // A model that doubles: 642x482, even again, 4:2:0.
  const std::string up = dir + "/odd.up.mp4";
  r = Identity(dir, src, up, nlohmann::json::object(), "upscale2x");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  s = ProbeShown(up);
  CHECK(s.width == 642);
  CHECK(s.height == 482);
  CHECK(FirstStream(Probe(up), "video").value("pix_fmt", "") == "yuv420p");
}

TEST_CASE("geometry: interlaced TFF and BFF: deinterlaced and flagged progressive, or kept") {
  const std::string dir = ScratchDir("geometry_interlaced");
  for (const char* order : {"tff", "bff"}) {
    CAPTURE(order);
    const bool top = std::string(order) == "tff";
    // 50 progressive frames a second of a pattern moving 8 pixels a frame, woven into 25
    // interlaced ones: each frame's two fields are 1/50 s apart, so every vertical edge combs.
    const std::string src = dir + "/" + order + ".mkv";
    MustShell(
        "ffmpeg -nostdin -v error -y -f lavfi -i testsrc=s=480x120:r=50,crop=160:120:x=n*8 "
        "-frames:v " +
        std::to_string(kFrames) + " -vf tinterlace=mode=" +
        (top ? "interleave_top" : "interleave_bottom") + ",setfield=" + order +
        " -c:v libx264 -preset veryfast -crf 12 -flags +ildct+ilme " + Q(src));
    REQUIRE(CountFrames(src) == kFrames);
    REQUIRE(FrameFields(src).at(0) == (top ? "1,1" : "1,0"));

    const std::string deint = dir + "/" + order + ".auto.mkv";
    RunResult r = Identity(dir, src, deint);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(ProbeShown(deint).field_order == "progressive");
    for (const std::string& f : FrameFields(deint)) CHECK(f.substr(0, 1) == "0");
    CHECK(CountFrames(deint) == kFrames);
    const double comb_src = Combing(src, 160, 120), comb_out = Combing(deint, 160, 120);
    CAPTURE(comb_src);
    CAPTURE(comb_out);
    CHECK(comb_out < 0.25 * comb_src);  // undeinterlaced, re-encoded: about half

    const std::string kept = dir + "/" + order + ".off.mkv";
    r = Identity(dir, src, kept, {{"deinterlace", "off"}});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(ProbeShown(kept).field_order == (top ? "tt" : "bb"));
    for (const std::string& f : FrameFields(kept)) CHECK(f == (top ? "1,1" : "1,0"));
    CHECK(CountFrames(kept) == kFrames);
    // Combed frames lose more than clean ones on their way through RGB (4:2:0 chroma is per
    // field, swscale takes it per frame): compare with ffmpeg's own round trip of the same.
    const std::string reference = dir + "/" + order + ".reference.mkv";
    MustShell("ffmpeg -nostdin -v error -y -i " + Q(src) +
              " -f rawvideo -pix_fmt rgb24 - | ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt "
              "rgb24 -s 160x120 -framerate 25 -i - -vf setfield=" +
              order + " -c:v libx264 -crf 18 -pix_fmt yuv420p -flags +ildct+ilme " + Q(reference));
    int64_t frames = 0, reference_frames = 0;
    const double kept_diff = MeanDifference(src, kept, 160, 120, &frames);
    const double reference_diff = MeanDifference(src, reference, 160, 120, &reference_frames);
    CAPTURE(kept_diff);
    CAPTURE(reference_diff);
    CHECK(frames == kFrames);
    CHECK(kept_diff < reference_diff + 1.5);
  }
}
