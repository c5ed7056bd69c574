// An identity pass costs no more than the encoder: each plane of `identity`'s output within
// 0.5 dB of ffmpeg's direct re-encode of the source at the same encoder settings (libx264, crf
// 18, preset medium), on a clean 8-bit 720p source and on a real 4:2:0 clip. The 720p source
// runs with the default color_conversion (`auto`), the real clip with `device`: both take the
// YUV -> RGB -> YUV path that stays in float, on a CPU worker as on a GPU. Through 8-bit RGB,
// clamped (`accurate`), the same 720p source lost 1.1 dB of U and 0.6 of V (BENCHMARKS.md,
// "Identity fidelity").
#include <doctest/doctest.h>

#include <string>

#include "harness.h"
#include "psnr.h"

using namespace framemill::test;

namespace {

void MustShell(const std::string& command) {
  RunResult r = Shell(command);
  REQUIRE_MESSAGE(r.exit_code == 0, command << "\n" << r.err);
}

// `src` through identity (with `conversion`, or the default where it is empty) and through
// ffmpeg's direct re-encode at the same settings; every plane of the first within 0.5 dB of the
// second's, and the workers handed the source's own 4:2:0 planes.
void CheckCostsNoMoreThanEncoder(const std::string& dir, const std::string& src,
                                 const std::string& conversion) {
  const std::string ours = dir + "/identity.mkv", direct = dir + "/direct.mkv";
  nlohmann::json job = {{"input", src},
                        {"output", ours},
                        {"model", ModelPath("identity")},
                        {"device", TestDevice()},
                        {"workers", 1},
                        {"encoder", {{"preset", "medium"}}}};
  if (!conversion.empty()) job["color_conversion"] = conversion;
  RunResult r = RunJob(dir, job);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK_MESSAGE((r.out + r.err).find("(yuv420p to the workers)") != std::string::npos,
                r.out << r.err);
  MustShell("ffmpeg -nostdin -v error -y -i '" + src +
            "' -map 0:v -c:v libx264 -crf 18 -preset medium -pix_fmt yuv420p '" + direct + "'");
  const Psnr p = MeasurePsnr(ours, src), ref = MeasurePsnr(direct, src);
  MESSAGE("identity y " << p.y << " u " << p.u << " v " << p.v << "; ffmpeg's re-encode y "
                        << ref.y << " u " << ref.u << " v " << ref.v);
  CHECK(p.y >= ref.y - 0.5);
  CHECK(p.u >= ref.u - 0.5);
  CHECK(p.v >= ref.v - 0.5);
}

}  // namespace

TEST_CASE("fidelity: identity on a clean 8-bit 720p source costs no more than the encoder") {
  const std::string dir = ScratchDir("identity_cost_720p");
  const std::string src = dir + "/clean720.mp4";
  // Drawn in RGB, converted once with the BT.709 matrix (what an untagged 720p source gets) and
  // ffmpeg's default scaler, and encoded nearly losslessly: saturated colour edges, whose 4:2:0
  // pixels lie outside RGB.
  MustShell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=1280x720:rate=25 -frames:v 8 "
            "-vf format=rgb24,scale=out_color_matrix=bt709,format=yuv420p "
            "-c:v libx264 -preset veryfast -crf 8 '" + src + "'");
  CheckCostsNoMoreThanEncoder(dir, src, "");  // a plain job: color_conversion auto
}

TEST_CASE("fidelity: identity on a real 4:2:0 clip costs no more than the encoder") {
  const std::string clip = TestClip("friday.mp4");  // 640x480, smpte170m; video is stream 1
  const std::string dir = ScratchDir("identity_cost_real");
  const std::string src = dir + "/friday_30.mp4";
  MustShell("ffmpeg -nostdin -v error -y -i '" + clip + "' -map 0:v -frames:v 30 -c copy '" + src +
            "'");
  CheckCostsNoMoreThanEncoder(dir, src, "device");
}
