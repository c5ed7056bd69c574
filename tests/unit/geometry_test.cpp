// The pure parts of the source's and the output's geometry: display matrix -> orientation,
// the decoder's filters, sample aspect under rotation and scaling, odd sizes, field order.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "supervisor/media/output_geometry.h"
#include "supervisor/media/source_geometry.h"

namespace fm = framemill;

namespace {

constexpr int64_t kOne = 65536;

// The 2x2 part of a display matrix (QuickTime / FFmpeg order), the rest as an unscaled 'tkhd'.
std::array<int64_t, 9> Matrix(int a, int b, int c, int d) {
  return {a * kOne, b * kOne, 0, c * kOne, d * kOne, 0, 0, 0, int64_t{1} << 30};
}

fm::DisplayTransform Transform(int a, int b, int c, int d) {
  fm::Result<fm::DisplayTransform> t = fm::TransformFromMatrix(Matrix(a, b, c, d));
  REQUIRE(t.ok());
  return *t;
}

}  // namespace

TEST_CASE("display matrices give all eight right-angle orientations") {
  // The cases were checked against ffmpeg 5.1's own autorotation of a clip with a red top-left
  // and a blue top-right quadrant, whose 'tkhd' matrix was set to each of these.
  CHECK(Transform(1, 0, 0, 1) == fm::DisplayTransform{0, false});
  CHECK(Transform(0, 1, -1, 0) == fm::DisplayTransform{90, false});  // a phone held upright
  CHECK(Transform(-1, 0, 0, -1) == fm::DisplayTransform{180, false});
  CHECK(Transform(0, -1, 1, 0) == fm::DisplayTransform{270, false});
  CHECK(Transform(-1, 0, 0, 1) == fm::DisplayTransform{0, true});    // mirrored
  CHECK(Transform(1, 0, 0, -1) == fm::DisplayTransform{180, true});  // upside down mirror
  CHECK(Transform(0, 1, 1, 0) == fm::DisplayTransform{270, true});   // transpose
  CHECK(Transform(0, -1, -1, 0) == fm::DisplayTransform{90, true});  // anti-transpose
}

TEST_CASE("a scaled matrix is accepted, an odd angle or a degenerate one is refused") {
  std::array<int64_t, 9> m = Matrix(0, 2, -2, 0);
  fm::Result<fm::DisplayTransform> t = fm::TransformFromMatrix(m);
  REQUIRE(t.ok());
  CHECK(t->rotation == 90);
  // 45 degrees: cos = sin = 0.7071 -> 46341 in 16.16.
  std::array<int64_t, 9> odd = {46341, 46341, 0, -46341, 46341, 0, 0, 0, int64_t{1} << 30};
  fm::Result<fm::DisplayTransform> r = fm::TransformFromMatrix(odd);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == fm::StatusCode::kInputInvalid);
  CHECK(r.status().message().find("45 degrees") != std::string::npos);
  CHECK_FALSE(fm::TransformFromMatrix(Matrix(0, 0, 0, 0)).ok());
}

TEST_CASE("ffprobe's display matrix text parses") {
  const std::string text =
      "\n00000000:            0       65536           0\n00000001:       -65536           0     "
      "      0\n00000002:            0           0  1073741824\n";
  fm::Result<fm::DisplayTransform> t = fm::TransformFromDisplayMatrixText(text);
  REQUIRE(t.ok());
  CHECK(*t == fm::DisplayTransform{90, false});
  CHECK_FALSE(fm::TransformFromDisplayMatrixText("00000000: 1 2\n").ok());
  CHECK_FALSE(fm::TransformFromDisplayMatrixText("garbage").ok());
}

TEST_CASE("ReadGeometry: displayed size, sample aspect, field order from a stream object") {
  nlohmann::json s = {
      {"width", 720},
      {"height", 576},
      {"sample_aspect_ratio", "64:45"},
      {"field_order", "tb"},
      {"side_data_list",
       {{{"side_data_type", "Display Matrix"},
         {"displaymatrix",
          "\n00000000:            0      -65536           0\n00000001:        65536           0"
          "           0\n00000002:            0           0  1073741824\n"},
         {"rotation", 90}}}}};
  fm::VideoStreamInfo v;
  v.width = 720;
  v.height = 576;
  REQUIRE(fm::ReadGeometry(s, &v).ok());
  CHECK(v.rotation == 270);
  CHECK_FALSE(v.hflip);
  CHECK(v.display_width == 576);
  CHECK(v.display_height == 720);
  CHECK(v.sample_aspect.num == 64);
  CHECK(v.sample_aspect.den == 45);
  CHECK(v.field_order == "tb");
  // Upright, the pixels are 45:64.
  CHECK(fm::UprightSampleAspect(v).num == 45);
  CHECK(fm::UprightSampleAspect(v).den == 64);

  fm::VideoStreamInfo plain;
  plain.width = 320;
  plain.height = 241;
  REQUIRE(
      fm::ReadGeometry({{"sample_aspect_ratio", "0:1"}, {"field_order", "unknown"}}, &plain).ok());
  CHECK(plain.display_width == 320);
  CHECK(plain.display_height == 241);
  CHECK(plain.sample_aspect.num == 1);
  CHECK(plain.sample_aspect.den == 1);
  CHECK(plain.field_order.empty());
}

TEST_CASE("decoder filters: deinterlace first, then one pass to turn upright") {
  fm::VideoStreamInfo v;
  v.field_order = "tt";
  v.rotation = 180;
  fm::Result<std::vector<std::string>> f = fm::GeometryFilters(v, fm::Deinterlace::kAuto);
  REQUIRE(f.ok());
  REQUIRE(f->size() == 3);
  CHECK((*f)[0].rfind("bwdif=mode=send_frame", 0) == 0);
  CHECK((*f)[1] == "hflip");
  CHECK((*f)[2] == "vflip");

  v.field_order = "progressive";
  v.rotation = 90;
  v.hflip = true;
  f = fm::GeometryFilters(v, fm::Deinterlace::kAuto);
  REQUIRE(f.ok());
  CHECK(*f == std::vector<std::string>{"transpose=clock_flip"});
  // A named filter works on every frame, flagged or not; each keeps the frame rate.
  f = fm::GeometryFilters(v, fm::Deinterlace::kYadif);
  REQUIRE(f.ok());
  CHECK((*f)[0] == "yadif=mode=send_frame:parity=auto:deint=all");
  CHECK(fm::DeinterlaceFilter(fm::Deinterlace::kW3fdif, "").find("mode=frame") !=
        std::string::npos);
  CHECK(fm::DeinterlaceFilter(fm::Deinterlace::kOff, "tt").empty());
  CHECK(fm::DeinterlaceFilter(fm::Deinterlace::kAuto, "progressive").empty());
  CHECK(fm::DeinterlaceFilter(fm::Deinterlace::kAuto, "").empty());

  CHECK(fm::OrientationFilters({270, false}) == std::vector<std::string>{"transpose=cclock"});
  CHECK(fm::OrientationFilters({270, true}) == std::vector<std::string>{"transpose=cclock_flip"});
  CHECK(fm::OrientationFilters({180, true}) == std::vector<std::string>{"vflip"});
  CHECK(fm::OrientationFilters({0, true}) == std::vector<std::string>{"hflip"});
  CHECK(fm::OrientationFilters({0, false}).empty());

  // Kept fields cannot be turned a quarter.
  v.field_order = "bb";
  v.rotation = 270;
  f = fm::GeometryFilters(v, fm::Deinterlace::kOff);
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == fm::StatusCode::kInvalidJob);
  CHECK(fm::KeepsFields(v, fm::Deinterlace::kOff));
  CHECK_FALSE(fm::KeepsFields(v, fm::Deinterlace::kAuto));
}

TEST_CASE("field order classes follow what ffmpeg writes") {
  CHECK(fm::IsInterlaced("tt"));
  CHECK(fm::IsInterlaced("bt"));
  CHECK_FALSE(fm::IsInterlaced("progressive"));
  CHECK_FALSE(fm::IsInterlaced(""));
  CHECK(fm::TopFieldFirst("tb"));  // ffmpeg 5.1's word for a top-field-first stream
  CHECK_FALSE(fm::TopFieldFirst("bt"));
}

TEST_CASE("the output's sample aspect keeps the display aspect ratio") {
  // Uniform scale: unchanged.
  fm::Rational s = fm::OutputSampleAspect({64, 45}, 720, 576, 1440, 1152);
  CHECK(s.num == 64);
  CHECK(s.den == 45);
  // A model that doubles the width only: pixels half as wide.
  s = fm::OutputSampleAspect({8, 9}, 720, 480, 1440, 480);
  CHECK(s.num == 4);
  CHECK(s.den == 9);
  CHECK(fm::DisplayAspect(1440, 480, s) == doctest::Approx(fm::DisplayAspect(720, 480, {8, 9})));
  s = fm::OutputSampleAspect({1, 1}, 0, 0, 10, 10);
  CHECK(s.num == 1);
  CHECK(s.den == 1);
  CHECK(fm::DisplayAspect(720, 576, {64, 45}) == doctest::Approx(16.0 / 9.0));
}

TEST_CASE("odd sizes: a pixel format that holds them, or a reason") {
  std::string warning;
  fm::Result<std::string> f = fm::PixelFormatForSize("libx264", "yuv420p", 320, 240, &warning);
  REQUIRE(f.ok());
  CHECK(*f == "yuv420p");
  CHECK(warning.empty());
  f = fm::PixelFormatForSize("libx264", "yuv420p", 321, 241, &warning);
  REQUIRE(f.ok());
  CHECK(*f == "yuv444p");
  CHECK(warning.find("321x241") != std::string::npos);
  f = fm::PixelFormatForSize("libx265", "yuv420p10le", 320, 241, &warning);
  REQUIRE(f.ok());
  CHECK(*f == "yuv444p10le");
  f = fm::PixelFormatForSize("libx264", "yuv422p", 320, 241, &warning);  // 4:2:2: height free
  REQUIRE(f.ok());
  CHECK(*f == "yuv422p");
  f = fm::PixelFormatForSize("libvpx-vp9", "yuv420p", 321, 241, &warning);
  REQUIRE(f.ok());
  CHECK(*f == "yuv420p");
  f = fm::PixelFormatForSize("libsvtav1", "yuv420p", 321, 240, &warning);
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().code() == fm::StatusCode::kInvalidJob);
}

TEST_CASE("encoder arguments for the output's geometry") {
  fm::OutputGeometry g;
  g.sample_aspect = {64, 45};
  CHECK(fm::GeometryEncoderFilters(g) == std::vector<std::string>{"setsar=64/45", "setfield=prog"});
  CHECK(fm::GeometryEncoderOptions(g).empty());
  g.field_order = "bb";
  CHECK(fm::GeometryEncoderFilters(g)[1] == "setfield=bff");
  CHECK(fm::GeometryEncoderOptions(g) == std::vector<std::string>{"-flags", "+ildct+ilme"});
  CHECK(fm::GeometryMuxOptions(g) == std::vector<std::string>{"-field_order:v:0", "bb"});
}

TEST_CASE("verification compares displayed geometry") {
  fm::VideoStreamInfo src;
  src.width = 64;
  src.height = 48;
  src.rotation = 90;
  src.display_width = 48;
  src.display_height = 64;
  src.sample_aspect = {4, 3};
  src.field_order = "progressive";
  fm::OutputGeometry want{48, 64, {3, 4}, "progressive"};
  fm::VideoStreamInfo got;
  got.width = got.display_width = 48;
  got.height = got.display_height = 64;
  got.sample_aspect = {3, 4};
  got.field_order = "progressive";
  CHECK(fm::CheckDisplayedGeometry(src, got, want).ok());
  // The stored size read as if it were shown: the defect this check exists for.
  fm::VideoStreamInfo stored = got;
  stored.width = stored.display_width = 64;
  stored.height = stored.display_height = 48;
  CHECK(fm::CheckDisplayedGeometry(src, stored, want).code() == fm::StatusCode::kVerifyFailed);
  fm::VideoStreamInfo matrix = got;
  matrix.rotation = 180;
  CHECK_FALSE(fm::CheckDisplayedGeometry(src, matrix, want).ok());
  fm::VideoStreamInfo square = got;
  square.sample_aspect = {1, 1};
  CHECK_FALSE(fm::CheckDisplayedGeometry(src, square, want).ok());
  fm::VideoStreamInfo combed = got;
  combed.field_order = "tt";
  CHECK_FALSE(fm::CheckDisplayedGeometry(src, combed, want).ok());
  want.field_order = "tt";
  combed.field_order = "tb";  // ffmpeg's word for top first
  CHECK(fm::CheckDisplayedGeometry(src, combed, want).ok());
  combed.field_order = "bb";
  CHECK_FALSE(fm::CheckDisplayedGeometry(src, combed, want).ok());
}

TEST_CASE("deinterlace names parse into modes") {
  CHECK(fm::ParseDeinterlace("auto") == fm::Deinterlace::kAuto);
  CHECK(fm::ParseDeinterlace("off") == fm::Deinterlace::kOff);
  CHECK(fm::ParseDeinterlace("bwdif") == fm::Deinterlace::kBwdif);
  CHECK(fm::ParseDeinterlace("kerndeint") == fm::Deinterlace::kKerndeint);
  CHECK_FALSE(fm::ParseDeinterlace("nnedi").has_value());  // reads a weights file: not offered
  CHECK_FALSE(fm::ParseDeinterlace("yadif,scale=2").has_value());
  fm::JobSettings s;
  CHECK(s.deinterlace == fm::Deinterlace::kAuto);
  CHECK(
      fm::ReadJobSettings({{"deinterlace", "yadif"}}, "job", fm::StatusCode::kInvalidJob, &s).ok());
  CHECK(s.deinterlace == fm::Deinterlace::kYadif);
  fm::Status bad =
      fm::ReadJobSettings({{"deinterlace", "hqdn3d"}}, "job", fm::StatusCode::kInvalidJob, &s);
  CHECK(bad.code() == fm::StatusCode::kInvalidJob);
  CHECK(bad.message().find("deinterlace") != std::string::npos);
}
