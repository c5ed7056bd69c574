// `framemill faces VIDEO --table OUT`: the face pass of the real binary (BlazeFace through
// OpenCV's dnn, tracking, alignment) over every frame of real footage. The talking head d0 has
// one face on every frame, one track, and crops that move smoothly (the largest frame-to-frame
// jump of the crop's centre is a few pixels); the flower clip has none; a corrupt detector fails
// before any frame and writes no table.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

using namespace framemill::test;

namespace {

const std::string kFront =
    std::string(FRAMEMILL_TEST_FACE_DETECTOR_DIR) + "/face_detection_front_128x128_barracuda.onnx";

RunResult FacesTable(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"faces"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = WaitJob(StartFramemill(dir, argv, {}, "faces-table"), 120);
  if (r.exit_code != 0 && r.err.find("built without OpenCV") != std::string::npos) {
    SkipTest("this framemill was built without OpenCV's dnn module: it cannot detect faces");
  }
  return r;
}

nlohmann::json Table(const std::string& dir, const std::string& clip,
                     const std::vector<std::string>& more = {}) {
  const std::string path = dir + "/" + clip + ".faces.json";
  std::vector<std::string> args = {TestClip(clip), "--detector", kFront, "--table",
                                   path,           "--threads",  "2",    "--json"};
  args.insert(args.end(), more.begin(), more.end());
  RunResult r = FacesTable(dir, args);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json out = nlohmann::json::parse(r.out);
  MESSAGE(clip << ": " << out.dump());
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

struct Point {
  double x, y;
};

// Where the crop's centre lies in the frame: the inverse of [track, m0..m5] at ((S-1)/2, (S-1)/2).
Point CropCentre(const nlohmann::json& face, int size) {
  const double a = face[1], b = face[2], c = face[3], d = face[4], e = face[5], f = face[6];
  const double u = (size - 1) / 2.0 - c, v = (size - 1) / 2.0 - f;
  const double det = a * e - b * d;
  return {(e * u - b * v) / det, (a * v - d * u) / det};
}

}  // namespace

TEST_CASE("face table: the talking head has one face on every frame, its crop moving smoothly") {
  const std::string dir = ScratchDir("face_table_d0");
  const nlohmann::json t = Table(dir, "d0.mp4", {"--face-size", "256"});
  CHECK(t["format"] == "framemill-face-table");
  CHECK(t["width"] == 512);
  CHECK(t["height"] == 512);
  CHECK(t["face_size"] == 256);
  CHECK(t["video_frames"] == 78);
  CHECK(t["first_frame"] == 0);
  REQUIRE(t["frames"].size() == 78);
  CHECK(t["stats"]["tracks"] == 1);
  CHECK(t["stats"]["frames_without_faces"] == 0);
  double largest_jump = 0;
  Point last{0, 0};
  for (size_t f = 0; f < t["frames"].size(); ++f) {
    const nlohmann::json& frame = t["frames"][f];
    INFO("frame " << f << ": " << frame.dump());
    REQUIRE(frame.size() == 1);
    CHECK(frame[0][0] == 0);  // the one track
    // The face fills a good part of the 256-pixel crop: the frame is scaled by between a third
    // and three times (d0's face is about 200 frame pixels wide).
    const double scale = std::hypot(frame[0][1].get<double>(), frame[0][4].get<double>());
    CHECK(scale > 0.33);
    CHECK(scale < 3.0);
    const Point c = CropCentre(frame[0], 256);
    CHECK(c.x > 0);
    CHECK(c.x < 512);
    CHECK(c.y > 0);
    CHECK(c.y < 512);
    if (f > 0) largest_jump = std::max(largest_jump, std::hypot(c.x - last.x, c.y - last.y));
    last = c;
  }
  MESSAGE("d0: largest frame-to-frame jump of the crop's centre: " << largest_jump << " px");
  CHECK(largest_jump < 6.0);
}

TEST_CASE("face table: the flower clip has no face on any frame") {
  const std::string dir = ScratchDir("face_table_flower");
  const nlohmann::json t = Table(dir, "flower.webm");
  CHECK(t["width"] == 960);
  CHECK(t["height"] == 540);
  CHECK(t["face_size"] == 512);
  REQUIRE(t["frames"].size() == 150);
  CHECK(t["stats"]["tracks"] == 0);
  CHECK(t["stats"]["frames_without_faces"] == 150);
  for (const nlohmann::json& frame : t["frames"]) CHECK(frame.empty());
}

TEST_CASE("face table: a corrupt detector fails before any frame and writes no table") {
  const std::string dir = ScratchDir("face_table_corrupt");
  std::ofstream(dir + "/text.onnx") << "not a network\n";
  RunResult r = FacesTable(
      dir, {TestClip("d0.mp4"), "--detector", dir + "/text.onnx", "--table", dir + "/t.json"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find(dir + "/text.onnx") != std::string::npos);
  CHECK(r.err.find("cannot read it as ONNX") != std::string::npos);
  CHECK_FALSE(std::ifstream(dir + "/t.json").good());
}
