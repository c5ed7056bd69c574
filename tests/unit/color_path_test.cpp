// depth's pure parts: pixel format traits, the encoder's list, the choice of pix_fmt "auto", the
// colour path's matrix for untagged sources and its ffmpeg arguments, HDR side data and the
// encoder arguments that carry it, and the output check.
#include <doctest/doctest.h>

#include <algorithm>

#include "supervisor/media/color_path.h"
#include "supervisor/media/depth_check.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/media/hdr_metadata.h"
#include "supervisor/media/pixel_format.h"

using namespace framemill;

namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Debian 12's ffmpeg 5.1, `ffmpeg -h encoder=...`: the lines that matter.
const char* kX264Help =
    "Encoder libx264 [libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10]:\n"
    "    General capabilities: delay threads \n"
    "    Supported pixel formats: yuv420p yuvj420p yuv422p yuvj422p yuv444p yuvj444p nv12 nv16 "
    "nv21 yuv420p10le yuv422p10le yuv444p10le nv20le gray gray10le\n"
    "libx264 AVOptions:\n";
const char* kX265Formats =
    "yuv420p yuvj420p yuv422p yuvj422p yuv444p yuvj444p gbrp yuv420p10le yuv422p10le yuv444p10le "
    "gbrp10le yuv420p12le yuv422p12le yuv444p12le gbrp12le gray gray10le gray12le";

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p < text.size()) {
    size_t e = text.find(' ', p);
    if (e == std::string::npos) e = text.size();
    if (e > p) out.push_back(text.substr(p, e - p));
    p = e + 1;
  }
  return out;
}

PixelFormatTraits Src(const std::string& name) { return ParsePixelFormat(name); }

}  // namespace

TEST_CASE("depth: pixel format names give bit depth and chroma layout") {
  struct Row {
    const char* name;
    int bits;
    const char* chroma;
  };
  const Row rows[] = {
      {"yuv420p", 8, "420"},      {"yuvj420p", 8, "420"},     {"yuv420p10le", 10, "420"},
      {"yuv422p10le", 10, "422"}, {"yuv444p12le", 12, "444"}, {"yuv422p", 8, "422"},
      {"yuva420p", 8, "420"},     {"nv12", 8, "420"},         {"p010le", 10, "420"},
      {"p210le", 10, "422"},      {"nv20le", 10, "422"},      {"gray", 8, "gray"},
      {"gray12le", 12, "gray"},   {"gbrp10le", 10, "444"},    {"rgb48le", 16, "444"},
      {"rgb24", 8, "444"},        {"yuyv422", 8, "422"},      {"yuv440p", 8, "440"},
      {"yuv411p", 8, "411"}};
  for (const Row& r : rows) {
    INFO(std::string(r.name));
    PixelFormatTraits t = ParsePixelFormat(r.name);
    CHECK(t.bits == r.bits);
    CHECK(std::string(ChromaLayoutName(t.chroma)) == r.chroma);
  }
  CHECK(ParsePixelFormat("yuvj422p").full_range);
  CHECK_FALSE(ParsePixelFormat("yuv422p").full_range);
  CHECK(ParsePixelFormat("gbrp").rgb);
  for (const char* alpha : {"yuva444p12le", "yuva420p", "gbrap10le", "rgba", "bgra", "argb",
                            "rgba64le", "ya8", "ya16le"}) {
    INFO(alpha);
    CHECK(ParsePixelFormat(alpha).alpha);
  }
  CHECK(ParsePixelFormat("yuva444p12le").bits == 12);
  CHECK(ParsePixelFormat("ya16le").chroma == ChromaLayout::kGray);
  for (const char* opaque : {"yuv420p", "yuv444p12le", "gbrp", "rgb24", "nv12", "gray"}) {
    INFO(opaque);
    CHECK_FALSE(ParsePixelFormat(opaque).alpha);
  }
  CHECK(ParsePixelFormat("something").chroma == ChromaLayout::kUnknown);
}

TEST_CASE("depth: the encoder's pixel formats are read from ffmpeg -h encoder=NAME") {
  std::vector<std::string> f = ParseEncoderPixelFormats(kX264Help);
  CHECK(f.size() == 15);
  CHECK(f.front() == "yuv420p");
  CHECK(f.back() == "gray10le");
  CHECK(ParseEncoderPixelFormats("Encoder foo:\n    General capabilities: none\n").empty());
}

TEST_CASE("depth: an encoder ffmpeg does not know is refused with ffmpeg's words, asked or kept") {
  // Twice: the second answer may come from the kept one (program_answers.h), which has no stderr;
  // ffmpeg says it on stdout anyway, and exits 0.
  for (int i = 0; i < 2; ++i) {
    Result<std::vector<std::string>> f = EncoderPixelFormats("ffmpeg", "no_such_encoder");
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == StatusCode::kInvalidJob);
    CHECK(f.status().message().find("no_such_encoder' is not recognized") != std::string::npos);
  }
}

TEST_CASE("depth: pix_fmt auto keeps the source's depth and layout where the encoder has them") {
  const std::vector<std::string> x264 = ParseEncoderPixelFormats(kX264Help);
  const std::vector<std::string> x265 = Split(kX265Formats);
  struct Row {
    const char* source;
    const std::vector<std::string>* encoder;
    const char* want;
    bool warned;
  };
  const Row rows[] = {
      {"yuv420p", &x264, "yuv420p", false},         {"yuvj420p", &x264, "yuv420p", false},
      {"yuv420p10le", &x264, "yuv420p10le", false}, {"yuv422p10le", &x264, "yuv422p10le", false},
      {"yuv444p", &x264, "yuv444p", false},         {"p010le", &x264, "yuv420p10le", false},
      {"yuv420p12le", &x264, "yuv420p10le", true},  {"yuv420p12le", &x265, "yuv420p12le", false},
      {"yuv422p12le", &x265, "yuv422p12le", false}, {"gray10le", &x265, "gray10le", false},
      {"yuv411p", &x264, "yuv422p", true},          {"rgb48le", &x265, "yuv444p12le", true},
      {"yuv420p9le", &x264, "yuv420p10le", false},
  };
  for (const Row& r : rows) {
    INFO(r.source << " -> " << r.want);
    PixelFormatChoice c = ChoosePixelFormat(Src(r.source), *r.encoder);
    CHECK(c.pix_fmt == r.want);
    CHECK(c.warning.empty() != r.warned);
  }
  // An encoder with 4:2:0 8-bit only: a 10-bit 4:2:2 source is written with a warning.
  PixelFormatChoice only = ChoosePixelFormat(Src("yuv422p10le"), {"yuv420p", "nv12"});
  CHECK(only.pix_fmt == "yuv420p");
  CHECK(only.warning.find("10-bit 422") != std::string::npos);
  // A 4:2:2 source prefers 4:4:4 (all its chroma) to 4:2:0.
  CHECK(ChoosePixelFormat(Src("yuv422p"), {"yuv420p", "yuv444p"}).pix_fmt == "yuv444p");
  PixelFormatChoice none = ChoosePixelFormat(Src("yuv420p10le"), {"rgb24"});
  CHECK(none.pix_fmt == "yuv420p10le");
  CHECK_FALSE(none.warning.empty());
}

TEST_CASE("depth: untagged sources get the matrix a player assumes, by size") {
  CHECK(AssumedColorSpace(720, 576) == "smpte170m");
  CHECK(AssumedColorSpace(720, 480) == "smpte170m");
  CHECK(AssumedColorSpace(1024, 576) == "smpte170m");
  CHECK(AssumedColorSpace(1280, 720) == "bt709");
  CHECK(AssumedColorSpace(960, 720) == "bt709");  // taller than 576
  CHECK(AssumedColorSpace(1920, 1080) == "bt709");
  VideoStreamInfo v;
  v.width = 1920;
  v.height = 1080;
  v.pix_fmt = "yuv420p";
  ColorPath p = ResolveColorPath(v);
  CHECK(p.assumed);
  CHECK(p.color_space == "bt709");
  CHECK_FALSE(p.full_range);
  v.color_space = "smpte170m";  // a tag wins over the size
  v.pix_fmt = "yuvj420p";
  p = ResolveColorPath(v);
  CHECK_FALSE(p.assumed);
  CHECK(p.color_space == "smpte170m");
  CHECK(p.full_range);
}

TEST_CASE("depth: the colour path's ffmpeg arguments name the matrix and range both ways") {
  ColorPath p;
  p.color_space = "bt709";
  std::vector<std::string> dec = ColorFilters(p, FrameFormat::kRgb48, true);
  REQUIRE(dec.size() == 2);
  CHECK(dec[0] == "scale=in_color_matrix=bt709:in_range=tv:flags=" + DecoderSwsFlags(true));
  CHECK(dec[1] == "format=rgb48le");
  CHECK(ColorFilters(p, FrameFormat::kYuv420p, true).empty());
  CHECK(DecoderSwsFlags(true).find("neighbor") == 0);
  CHECK(EncoderSwsFlags(true).find("area") == 0);

  SegmentFormat f;
  f.width = 64;
  f.height = 48;
  f.frame_rate = {25, 1};
  f.encoder.pix_fmt = "yuv422p10le";
  f.color = p;
  f.color.full_range = true;
  f.color.primaries = "bt709";
  f.in_format = FrameFormat::kRgb48;
  std::vector<std::string> a = EncoderArguments(f);
  CHECK(Has(a, "rgb48le"));
  // The colour conversion opens the encoder's one -vf chain (geometry's setsar/setfield follow).
  auto vf = std::find(a.begin(), a.end(), "-vf");
  REQUIRE(vf != a.end());
  CHECK((vf + 1)->rfind("scale=out_color_matrix=bt709:out_range=pc:flags=" + EncoderSwsFlags(true),
                        0) == 0);
  CHECK(Has(a, "-colorspace"));
  CHECK(Has(a, "-color_primaries"));
  CHECK_FALSE(Has(a, "-color_trc"));  // untagged stays untagged
  CHECK(Has(a, "yuv422p10le"));
  auto range = std::find(a.begin(), a.end(), "-color_range");
  REQUIRE(range != a.end());
  CHECK(*(range + 1) == "pc");
}

TEST_CASE("depth: HDR side data is read and written for x265 and x264") {
  nlohmann::json side = nlohmann::json::parse(R"([
    {"side_data_type": "Mastering display metadata", "red_x": "34000/50000",
     "red_y": "16000/50000", "green_x": "13250/50000", "green_y": "34500/50000",
     "blue_x": "7500/50000", "blue_y": "3000/50000", "white_point_x": "15635/50000",
     "white_point_y": "16450/50000", "min_luminance": "50/10000",
     "max_luminance": "10000000/10000"},
    {"side_data_type": "Content light level metadata", "max_content": 1000, "max_average": 400},
    {"side_data_type": "H.26[45] User Data Unregistered SEI message"}])");
  HdrMetadata m;
  ParseHdrSideData(side, &m);
  REQUIRE(m.mastering.present);
  REQUIRE(m.light.present);
  CHECK(m.mastering.red_x == 34000);
  CHECK(m.mastering.min_luminance == 50);
  CHECK(m.mastering.max_luminance == 10000000);
  CHECK(m.light.max_cll == 1000);
  CHECK(m.light.max_fall == 400);
  CHECK(MasterDisplayParameter(m.mastering) ==
        "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)");
  std::vector<std::string> x265 = HdrEncoderArguments("libx265", m);
  REQUIRE(x265.size() == 2);
  CHECK(x265[0] == "-x265-params");
  CHECK(x265[1] ==
        "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)"
        ":max-cll=1000,400");
  std::vector<std::string> x264 = HdrEncoderArguments("libx264", m);
  REQUIRE(x264.size() == 2);
  CHECK(x264[1].find("mastering-display=G(") == 0);
  CHECK(x264[1].find(":cll=1000,400") != std::string::npos);
  CHECK(HdrEncoderArguments("libvpx-vp9", m).empty());
  CHECK(HdrEncoderArguments("libx265", HdrMetadata{}).empty());
  // A malformed entry is left out.
  HdrMetadata bad;
  ParseHdrSideData(nlohmann::json::parse(
                       R"([{"side_data_type": "Mastering display metadata", "red_x": "x/0"}])"),
                   &bad);
  CHECK_FALSE(bad.any());
  CHECK(IsHdrTransfer("smpte2084"));
  CHECK(IsHdrTransfer("arib-std-b67"));
  CHECK_FALSE(IsHdrTransfer("bt709"));
}

TEST_CASE("depth: H.264 HDR SEI is read from ffmpeg's trace_headers log") {
  // As `ffmpeg -v verbose -i OUT -c copy -bsf:v trace_headers -f null -` prints them (x264).
  const std::string trace =
      "[trace_headers @ 0x1] 24          display_primaries_x[0]          0011001111000010 = 13250\n"
      "[trace_headers @ 0x1] 40          display_primaries_y[0]          1000011011000100 = 34500\n"
      "[trace_headers @ 0x1] 56          display_primaries_x[1]          0001110101001100 = 7500\n"
      "[trace_headers @ 0x1] 72          display_primaries_y[1]          0000101110111000 = 3000\n"
      "[trace_headers @ 0x1] 88          display_primaries_x[2]          1000010011010000 = 34000\n"
      "[trace_headers @ 0x1] 104         display_primaries_y[2]          0011111010000000 = 16000\n"
      "[trace_headers @ 0x1] 120         white_point_x                   0011110100010011 = 15635\n"
      "[trace_headers @ 0x1] 136         white_point_y                   0100000001000010 = 16450\n"
      "[trace_headers @ 0x1] 152         max_display_mastering_luminance  0000 = 10000000\n"
      "[trace_headers @ 0x1] 184         min_display_mastering_luminance  0001 = 50\n"
      "[trace_headers @ 0x1] 24          max_content_light_level         0000001111101000 = 1000\n"
      "[trace_headers @ 0x1] 40          max_pic_average_light_level     0000000110010000 = 400\n";
  HdrMetadata m;
  ParseSeiTrace(trace, &m);
  REQUIRE(m.mastering.present);
  CHECK(MasterDisplayParameter(m.mastering) ==
        "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)");
  CHECK(m.light == ContentLight{true, 1000, 400});
  HdrMetadata none;
  ParseSeiTrace(trace.substr(0, trace.find("white_point_x")), &none);  // cut short
  CHECK_FALSE(none.any());
}

TEST_CASE("depth: the output check names a lost bit depth, layout, tag or HDR metadata") {
  DepthExpectation want;
  want.pix_fmt = "yuv420p10le";
  want.codec = "libx265";
  want.color.color_space = "bt2020nc";
  want.color.primaries = "bt2020";
  want.color.transfer = "smpte2084";
  want.hdr.light = {true, 1000, 400};
  VideoStreamInfo got;
  got.pix_fmt = "yuv420p10le";
  got.bits_per_component = 10;
  got.chroma_layout = "420";
  got.color_space = "bt2020nc";
  got.color_range = "tv";
  got.color_primaries = "bt2020";
  got.color_transfer = "smpte2084";
  got.hdr.light = {true, 1000, 400};
  CHECK(CheckDepthAndColor(want, got).ok());
  VideoStreamInfo bad = got;
  SUBCASE("8 bits") { bad.bits_per_component = 8; }
  SUBCASE("4:2:2") { bad.chroma_layout = "422"; }
  SUBCASE("no transfer") { bad.color_transfer = ""; }
  SUBCASE("full range") { bad.color_range = "pc"; }
  SUBCASE("no content light") { bad.hdr.light = {}; }
  Status s = CheckDepthAndColor(want, bad);
  CHECK(s.code() == StatusCode::kVerifyFailed);
}

TEST_CASE("depth: colour tags go to ffmpeg as code points, fitted to what the encoder writes") {
  // ffprobe's names, some of which ffmpeg's options do not know ("bt470m" is -color_trc gamma22).
  CHECK(ColorTagCode(ColorTagKind::kTransfer, "bt470m") == 4);
  CHECK(ColorTagCode(ColorTagKind::kTransfer, "bt470bg") == 5);
  CHECK(ColorTagCode(ColorTagKind::kTransfer, "arib-std-b67") == 18);
  CHECK(ColorTagCode(ColorTagKind::kPrimaries, "ebu3213") == 22);
  CHECK(ColorTagCode(ColorTagKind::kMatrix, "bt2020nc") == 9);
  CHECK(ColorTagCode(ColorTagKind::kTransfer, "reserved") == -1);
  CHECK(ColorTagCode(ColorTagKind::kPrimaries, "") == -1);

  ColorPath p;
  p.color_space = "smpte170m";
  p.primaries = "bt709";
  p.transfer = "bt470m";
  SegmentFormat f;
  f.width = 64;
  f.height = 48;
  f.frame_rate = {25, 1};
  f.encoder.pix_fmt = "yuv420p";
  f.color = p;
  std::vector<std::string> a = EncoderArguments(f);
  auto trc = std::find(a.begin(), a.end(), "-color_trc");
  REQUIRE(trc != a.end());
  CHECK(*(trc + 1) == "4");
  CHECK(*(std::find(a.begin(), a.end(), "-colorspace") + 1) == "6");
  CHECK(FitColorTags("libx264", &p).empty());  // x264 writes all three

  p.primaries = "ebu3213";
  p.transfer = "reserved";
  std::vector<std::string> w = FitColorTags("libx265", &p);
  REQUIRE(w.size() == 2);
  CHECK(p.primaries == "bt470bg");
  CHECK(p.transfer.empty());
  CHECK(w[1] == "colour primaries ebu3213 cannot be written; tagged bt470bg, the nearest it writes");
  p.primaries = "ebu3213";
  CHECK(FitColorTags("ffv1", &p).empty());  // only libx264 and libx265 are known to drop it
  CHECK(p.primaries == "ebu3213");
}
