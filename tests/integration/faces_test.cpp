// `framemill faces`: the real binary, BlazeFace (the fetched ONNX files) through OpenCV's dnn, on
// real footage. A face is found where a person sees one (the talking heads d0 and d20: exactly
// one on every sampled frame, its box inside the frame and head-sized, its eyes above its mouth
// and on the right sides; the film scene friday.mp4: faces on its frames), none on a clip without
// a face (flower.webm); the drawn frame has its box where the JSON says; a corrupt detector file
// fails before any frame, naming the file and OpenCV's reason.
//
// `framemill faces VIDEO --table OUT`: face mode's face pass (detection, tracking, alignment) over
// every frame. The talking head d0 has one face on every frame, one track, and crops that move
// smoothly (the largest frame-to-frame jump of the crop's centre is a few pixels), the same with
// one detection thread as with two; the flower clip has none; a corrupt detector fails before any
// frame and writes no table. A part of a job (frames 30..59, found by seeking; frames 0..19, the
// decoder stopping by itself) gets the whole video's warps on the frames its smoothing window does
// not reach past its ends; a set stop flag cancels the pass. The alignment's closed-form fit is
// OpenCV's estimateAffinePartial2D on all four points (calib3d is here, not in framemill).
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <opencv2/calib3d.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "harness.h"
#include "common/checked_file.h"
#include "supervisor/faces/face_align.h"
#include "supervisor/faces/job_faces.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/media/source_intake.h"

using namespace framemill::test;

namespace {

const std::string kFront =
    std::string(FRAMEMILL_TEST_FACE_DETECTOR_DIR) + "/face_detection_front_128x128_barracuda.onnx";
const std::string kBack =
    std::string(FRAMEMILL_TEST_FACE_DETECTOR_DIR) + "/face_detection_back_256x256_barracuda.onnx";

// The tests' own processes are not beside framemill: they name the detector's program.
framemill::Config DetectorConfig() {
  framemill::Config c;
  c.face_detector_binary = FRAMEMILL_FACE_DETECTOR_BIN;
  return c;
}

RunResult Faces(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"faces"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = WaitJob(StartFramemill(dir, argv, {}, "faces"), 120);
  // A build without OpenCV's dnn module (configure warns; the GPU image has none) refuses,
  // saying so. On Debian the tests' own configure requires OpenCV, so this runs there.
  if (r.exit_code != 0 && r.err.find("built without OpenCV") != std::string::npos) {
    SkipTest("this framemill was built without OpenCV's dnn module: it cannot detect faces");
  }
  return r;
}

nlohmann::json FacesJson(const std::string& dir, const std::string& clip,
                         const std::string& detector, int frames,
                         const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {TestClip(clip), "--detector", detector, "--frames",
                                   std::to_string(frames), "--json"};
  args.insert(args.end(), more.begin(), more.end());
  RunResult r = Faces(dir, args);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json out = nlohmann::json::parse(r.out);
  REQUIRE(out.at("frames").size() == static_cast<size_t>(frames));
  return out;
}

double X(const nlohmann::json& face, const char* point) { return face["keypoints"][point][0]; }
double Y(const nlohmann::json& face, const char* point) { return face["keypoints"][point][1]; }

// One talking head per frame: the box inside the frame and between a fifth and the whole of its
// width, a confident score, the person's right eye on the picture's left, both eyes above the
// nose and the nose above the mouth, the eyes and the mouth inside the box.
void CheckTalkingHead(const nlohmann::json& frame) {
  INFO("frame: " << frame.dump());
  REQUIRE(frame.at("faces").size() == 1);
  const nlohmann::json& f = frame["faces"][0];
  const double w = frame["width"], h = frame["height"];
  const double bx = f["box"][0], by = f["box"][1], bw = f["box"][2], bh = f["box"][3];
  CHECK(bx >= 0);
  CHECK(by >= 0);
  CHECK(bx + bw <= w);
  CHECK(by + bh <= h);
  CHECK(bw > w / 5);
  CHECK(bw < w);
  CHECK(bh > h / 5);
  CHECK(f["score"].get<double>() > 0.7);
  CHECK(X(f, "right_eye") < X(f, "left_eye"));
  CHECK(Y(f, "right_eye") < Y(f, "nose_tip"));
  CHECK(Y(f, "left_eye") < Y(f, "nose_tip"));
  CHECK(Y(f, "nose_tip") < Y(f, "mouth"));
  for (const char* p : {"right_eye", "left_eye", "mouth"}) {
    CHECK(X(f, p) > bx);
    CHECK(X(f, p) < bx + bw);
    CHECK(Y(f, p) > by);
    CHECK(Y(f, p) < by + bh);
  }
}

// The face table of `clip` by `framemill faces --table` with `threads` detection threads.
nlohmann::json Table(const std::string& dir, const std::string& clip, int threads = 2,
                     const std::vector<std::string>& more = {}) {
  const std::string path = dir + "/" + clip + "." + std::to_string(threads) + ".faces.json";
  std::vector<std::string> args = {
      TestClip(clip), "--detector", kFront, "--table", path, "--threads", std::to_string(threads),
      "--json"};
  args.insert(args.end(), more.begin(), more.end());
  RunResult r = Faces(dir, args);
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

TEST_CASE("faces: one face, eyes above mouth, on each sampled frame of the talking heads") {
  const std::string dir = ScratchDir("faces_talking_heads");
  for (const char* clip : {"d0.mp4", "d20.mp4"}) {
    for (const std::string& detector : {kFront, kBack}) {
      INFO(clip << " with " << detector);
      const nlohmann::json out = FacesJson(dir, clip, detector, 3);
      CHECK(out.at("input_size") == (detector == kFront ? 128 : 256));
      for (const nlohmann::json& frame : out["frames"]) CheckTalkingHead(frame);
    }
  }
}

TEST_CASE("faces: the film scene has faces, the flower none") {
  const std::string dir = ScratchDir("faces_scene");
  const nlohmann::json scene = FacesJson(dir, "friday.mp4", kBack, 3);
  int with_faces = 0;
  for (const nlohmann::json& frame : scene["frames"]) with_faces += !frame["faces"].empty();
  CHECK(with_faces >= 2);
  const nlohmann::json flower = FacesJson(dir, "flower.webm", kBack, 3);
  for (const nlohmann::json& frame : flower["frames"]) CHECK(frame["faces"].empty());
  const nlohmann::json flower_front = FacesJson(dir, "flower.webm", kFront, 3);
  for (const nlohmann::json& frame : flower_front["frames"]) CHECK(frame["faces"].empty());
}

TEST_CASE("faces: --draw writes each frame with its box where the JSON says") {
  const std::string dir = ScratchDir("faces_draw");
  const nlohmann::json out = FacesJson(dir, "d20.mp4", kFront, 1, {"--draw", dir + "/drawn"});
  const nlohmann::json& frame = out["frames"][0];
  REQUIRE(frame.at("faces").size() == 1);
  REQUIRE(frame.at("drawing") == dir + "/drawn/faces-001.png");
  const cv::Mat png = cv::imread(frame["drawing"].get<std::string>(), cv::IMREAD_COLOR);
  REQUIRE(png.cols == frame["width"]);
  REQUIRE(png.rows == frame["height"]);
  // The box's top edge, half way along, is pure green (drawn), as is its left edge.
  const nlohmann::json& box = frame["faces"][0]["box"];
  const int x = static_cast<int>(box[0].get<double>() + box[2].get<double>() / 2);
  const int y = static_cast<int>(box[1].get<double>());
  CHECK(png.at<cv::Vec3b>(y, x) == cv::Vec3b(0, 255, 0));  // B, G, R
  CHECK(png.at<cv::Vec3b>(static_cast<int>(box[1].get<double>() + box[3].get<double>() / 2),
                          static_cast<int>(box[0].get<double>())) == cv::Vec3b(0, 255, 0));
}

TEST_CASE("faces: a corrupt detector file fails before any frame, saying why") {
  const std::string dir = ScratchDir("faces_corrupt");
  // The real file cut in half, and a file that is not ONNX at all.
  std::ifstream in(kFront, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 1000);
  std::ofstream(dir + "/half.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(dir + "/text.onnx") << "not a network\n";
  for (const char* name : {"half.onnx", "text.onnx"}) {
    const std::string path = dir + "/" + name;
    RunResult r = Faces(dir, {TestClip("d0.mp4"), "--detector", path});
    INFO("stderr: " << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find("cannot read it as ONNX") != std::string::npos);
  }
  RunResult missing = Faces(dir, {TestClip("d0.mp4"), "--detector", dir + "/none.onnx"});
  CHECK(missing.exit_code != 0);
  CHECK(missing.err.find("no such file") != std::string::npos);
}

// A 22-byte ONNX file: an initializer that claims 100,000,000 floats and holds 4 bytes. OpenCV
// 4.6 reads past its buffer parsing it and dies of SIGSEGV (in the supervisor it took the
// service down). It is
// parsed in the confined framemill-face-detector now: whatever OpenCV does with it costs that
// process, and framemill says what happened to the detector, for `faces` and the face pass.
TEST_CASE("faces: a hostile detector file costs the detector process, never framemill") {
  const std::string dir = ScratchDir("faces_hostile");
  const std::string tensor = std::string("\x08\x80\xc2\xd7\x2f", 5) +  // dims: 100000000
                             std::string("\x10\x01", 2) +                 // float
                             std::string("\x42\x01w", 3) +                // name "w"
                             std::string("\x4a\x04\0\0\x80\x3f", 6);     // raw_data: 4 bytes
  const std::string graph = std::string("\x2a") + static_cast<char>(tensor.size()) + tensor;
  const std::string model =
      std::string("\x08\x07", 2) + std::string("\x3a") + static_cast<char>(graph.size()) + graph;
  REQUIRE(model.size() == 22);
  const std::string path = dir + "/over.onnx";
  std::ofstream(path, std::ios::binary) << model;
  for (const bool table : {false, true}) {
    std::vector<std::string> args = {TestClip("d0.mp4"), "--detector", path, "--frames", "2"};
    if (table) args = {TestClip("d0.mp4"), "--detector", path, "--table", dir + "/t.json"};
    RunResult r = Faces(dir, args);
    INFO("table " << table << ", stderr: " << r.err);
    CHECK(r.signal == 0);  // framemill itself ended by itself
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("face detector") != std::string::npos);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.err.find("signal") != std::string::npos);  // OpenCV's crash, in the child
    CHECK_FALSE(std::filesystem::exists(dir + "/t.json"));
  }
  // A FIFO where the detector should be fails at once, without blocking on the open.
  const std::string fifo = dir + "/fifo.onnx";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  RunResult r = Faces(dir, {TestClip("d0.mp4"), "--detector", fifo});
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("not a regular file") != std::string::npos);
}

TEST_CASE("faces: the detector runs in its own confined process, and says how") {
  const std::string dir = ScratchDir("faces_sandbox");
  const nlohmann::json out = FacesJson(dir, "d0.mp4", kFront, 1);
  const std::string sandbox = out.at("detector_sandbox").get<std::string>();
  INFO("detector_sandbox: " << sandbox);
  CHECK(sandbox.find("seccomp") != std::string::npos);
  CHECK(sandbox.find("no_new_privs") != std::string::npos);
  CHECK(sandbox.find("rlimits") != std::string::npos);
}

TEST_CASE("face table: the talking head has one face on every frame, its crop moving smoothly") {
  const std::string dir = ScratchDir("face_table_d0");
  const nlohmann::json t = Table(dir, "d0.mp4", 2, {"--face-size", "256"});
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
  // Frames are shared among the detection threads; the table does not depend on how.
  CHECK(Table(dir, "d0.mp4", 1, {"--face-size", "256"})["frames"] == t["frames"]);
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
  RunResult r = Faces(
      dir, {TestClip("d0.mp4"), "--detector", dir + "/text.onnx", "--table", dir + "/t.json"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.err.find(dir + "/text.onnx") != std::string::npos);
  CHECK(r.err.find("cannot read it as ONNX") != std::string::npos);
  CHECK_FALSE(std::ifstream(dir + "/t.json").good());
}

TEST_CASE("face table: the alignment's fit is what cv::estimateAffinePartial2D finds") {
  // Keypoints off a similarity by a few pixels each, so that the fit has something to average.
  const std::array<framemill::FacePoint, framemill::kAlignPoints> from = {
      framemill::FacePoint{210.0f, 180.0f}, {301.5f, 171.0f}, {262.0f, 236.0f}, {259.0f, 290.5f}};
  const std::array<framemill::FacePoint, framemill::kAlignPoints> to =
      framemill::TemplatePoints(512, 0.0);
  std::optional<std::array<float, 6>> mine = framemill::FitSimilarity(from, to);
  REQUIRE(mine.has_value());
  std::vector<cv::Point2f> src, dst;
  for (int i = 0; i < framemill::kAlignPoints; ++i) {
    src.emplace_back(from[i].x, from[i].y);
    dst.emplace_back(to[i].x, to[i].y);
  }
  // RANSAC with a threshold no point misses keeps all four, then refines on them (least squares).
  const cv::Mat cv_fit =
      cv::estimateAffinePartial2D(src, dst, cv::noArray(), cv::RANSAC, 1e6, 2000, 0.99, 100);
  REQUIRE(!cv_fit.empty());
  for (int i = 0; i < 6; ++i) {
    INFO("element " << i);
    CHECK((*mine)[i] == doctest::Approx(cv_fit.at<double>(i / 3, i % 3)).epsilon(1e-3));
  }
}

TEST_CASE("face table: a part's face pass agrees with the whole video's inside the part") {
  const std::string dir = ScratchDir("face_table_part");
  const std::string path = TestClip("d0.mp4");
  const framemill::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.valid());
  framemill::Result<std::vector<std::string>> restrictions =
      framemill::InputRestrictions("ffprobe", framemill::PlaylistInputs::kRefuse);
  REQUIRE(restrictions.ok());
  const framemill::SourceFile source{fd.get(), path, *restrictions};
  framemill::Result<framemill::MediaInfo> media =
      framemill::ProbeMedia("ffprobe", source, /*frame_times=*/true);
  REQUIRE(media.ok());
  framemill::Result<std::vector<std::string>> filters =
      framemill::GeometryFilters(media->video, framemill::Deinterlace::kAuto);
  REQUIRE(filters.ok());
  framemill::JobSettings settings;
  settings.mode = framemill::JobMode::kFaces;
  settings.faces.detector = kFront;
  settings.faces.size = 256;
  const std::atomic<bool> stop{false};
  auto pass = [&](int64_t first, int64_t end) {
    framemill::JobFacesInput input;
    input.source = &source;
    input.media = &*media;
    input.filters = *filters;
    input.first = first;
    input.end = end;
    input.stderr_path = dir + "/decoder.log";
    input.threads = 2;
    framemill::Result<framemill::FaceTable> t =
        framemill::FacesForJob(DetectorConfig(), settings, input, stop);
    REQUIRE_MESSAGE(t.ok(), t.status().ToString());
    CHECK(t->first_frame == first);
    REQUIRE(static_cast<int64_t>(t->frames.size()) == end - first);
    return *t;
  };
  const framemill::FaceTable whole = pass(0, 78);
  {
    // A set stop flag ends the pass before its first batch.
    const std::atomic<bool> stopped{true};
    framemill::JobFacesInput input;
    input.source = &source;
    input.media = &*media;
    input.filters = *filters;
    input.stderr_path = dir + "/decoder.log";
    framemill::Result<framemill::FaceTable> t =
        framemill::FacesForJob(DetectorConfig(), settings, input, stopped);
    CHECK(t.status().code() == framemill::StatusCode::kCancelled);
  }
  // R = 2: frames 2 or more inside a part's ends see the same window as in the whole video.
  for (const auto& [first, end] : {std::pair<int64_t, int64_t>{30, 60}, {0, 20}}) {
    const framemill::FaceTable part = pass(first, end);
    for (int64_t f = first + (first > 0 ? 2 : 0); f < end - 2; ++f) {
      INFO("frame " << f << " of the part " << first << ".." << end - 1);
      REQUIRE(part.frames[f - first].size() == 1);
      REQUIRE(whole.frames[f].size() == 1);
      CHECK(std::memcmp(&part.frames[f - first][0], &whole.frames[f][0],
                        sizeof(framemill::FaceWarp)) == 0);
    }
  }
}

TEST_CASE("faces: without --detector, the long-range model installed with framemill is taken") {
  // A framemill in a build tree inside the source takes the source's .deps/face-detector/.
  const std::string bin_dir = std::filesystem::path(FRAMEMILL_BIN).parent_path().string();
  if (!std::filesystem::exists(bin_dir + "/../.deps/face-detector/"
                               "face_detection_back_256x256_barracuda.onnx")) {
    SkipTest("this framemill's build tree is not inside the source tree (no ../.deps beside it)");
  }
  // Real footage with faces from Debian's opencv-doc: an animated trailer.
  const std::string clip = "/usr/share/doc/opencv-doc/examples/data/Megamind.avi";
  if (!std::filesystem::exists(clip)) SkipTest(clip + " is missing: install opencv-doc");
  const std::string dir = ScratchDir("faces_default_detector");
  RunResult plain = Faces(dir, {clip, "--frames", "4", "--json"});
  INFO("stderr: " << plain.err);
  REQUIRE(plain.exit_code == 0);
  RunResult named = Faces(dir, {clip, "--frames", "4", "--json", "--detector", kBack});
  REQUIRE(named.exit_code == 0);
  // The same faces as the long-range model named, on the same frames.
  nlohmann::json a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(named.out);
  REQUIRE(a.at("frames").size() == 4);
  REQUIRE(b.at("frames").size() == 4);
  for (size_t i = 0; i < 4; ++i) {  // the detection's own time differs from run to run
    a["frames"][i].erase("detect_ms");
    b["frames"][i].erase("detect_ms");
  }
  CHECK(a.at("frames") == b.at("frames"));
}
