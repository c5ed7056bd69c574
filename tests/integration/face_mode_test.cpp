// Face mode (`"mode": "faces"`) end to end: the real framemill and its workers.
//
// - Exactness: a generated clip and a face table written by the test, whose faces sit where the
//   test put them (squares moved by whole pixels, so a crop is exactly the frame's pixels). The
//   face model is `invert`. Every pixel away from the faces' squares is the whole-frame `identity`
//   run's, bit for bit (lossless output); inside each square, past the feather, it is the inverse
//   of that run's pixel; frames without a face are identical whole.
// - Real footage: d0 (a talking head) with the BlazeFace detector and `invert`: the job says it
//   found one face on every frame; every pixel outside the face's crop (as `framemill faces
//   --table`, the same face pass, places it) is the identity run's, and inside it is inverted.
// - Resume: a face-mode job of the service killed (SIGKILL) after two of its four segments, then
//   served again, reads back its face table instead of detecting again and writes the very
//   frames an uninterrupted run writes.
// - Memory: the `leak` model (it keeps every batch it is given) as the face model, with a memory
//   limit: workers are recycled and every frame comes out in its place.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "fault_harness.h"
#include "harness.h"
#include "service_harness.h"

using namespace framemill::test;
namespace fs = std::filesystem;

namespace {

constexpr int kW = 320, kH = 240, kFrames = 24, kFace = 64, kBlend = 8;

struct Square {
  int x = 0, y = 0;  // the top-left pixel of the face's kFace x kFace square in the frame
};

// Frame f's faces: A moves right by 2 pixels a frame on frames 0-19; B sits still on the even
// frames 0-18; frames 20-23 have none.
std::vector<Square> FacesOf(int f) {
  std::vector<Square> faces;
  if (f < 20) faces.push_back({40 + 2 * f, 30});
  if (f < 20 && f % 2 == 0) faces.push_back({200, 120});
  return faces;
}

// A face table (supervisor/faces/face_table.h) with FacesOf's squares: crop (u, v) = (x - sx,
// y - sy), a shift by whole pixels.
void WriteTable(const std::string& path) {
  nlohmann::json frames = nlohmann::json::array();
  for (int f = 0; f < kFrames; ++f) {
    nlohmann::json faces = nlohmann::json::array();
    int track = 0;
    for (const Square& s : FacesOf(f)) {
      faces.push_back({track++, 1.0, 0.0, -s.x, 0.0, 1.0, -s.y});
    }
    frames.push_back(faces);
  }
  nlohmann::json t = {{"format", "framemill-face-table"},
                      {"version", 1},
                      {"width", kW},
                      {"height", kH},
                      {"face_size", kFace},
                      {"face_margin", 0.0},
                      {"video_frames", kFrames},
                      {"first_frame", 0},
                      {"frame_count", kFrames},
                      {"frames", frames}};
  std::ofstream(path) << t.dump();
}

// LosslessJob (harness.h) in chunks of 8 frames, 4 frames a model call, output replaced.
nlohmann::json FaceTestJob(const std::string& input, const std::string& output,
                           const std::string& model) {
  nlohmann::json job = LosslessJob(input, output, model);
  job["batch"] = 4;
  job["chunk_frames"] = 8;
  job["overwrite"] = true;
  return job;
}

// The short-range BlazeFace file, or the test ends as skipped where it is not built in.
std::string FrontDetectorOrSkip() {
#ifdef FRAMEMILL_TEST_FACE_DETECTOR_DIR
  return std::string(FRAMEMILL_TEST_FACE_DETECTOR_DIR) +
         "/face_detection_front_128x128_barracuda.onnx";
#else
  SkipTest("built without the real-footage tests (FRAMEMILL_REAL_FOOTAGE_TESTS): no detector");
#endif
}

// Ends the test as skipped when `r` failed because this framemill cannot detect faces.
void SkipWithoutDetection(const RunResult& r) {
  if (r.exit_code != 0 && r.err.find("built without OpenCV") != std::string::npos) {
    SkipTest("this framemill was built without OpenCV's dnn module: it cannot detect faces");
  }
}

// Runs `clip` whole through `identity` and in face mode (`face_keys` added) through `invert`, both
// lossless; returns the face run and fills the decoded frames of each (w x h).
RunResult IdentityAndFaces(const std::string& dir, const std::string& clip,
                           const nlohmann::json& face_keys, int w, int h,
                           std::vector<std::vector<uint8_t>>* identity,
                           std::vector<std::vector<uint8_t>>* faces);

std::vector<std::vector<uint8_t>> Frames(const std::string& path, int w, int h) {
  std::vector<std::vector<uint8_t>> frames;
  DecodeFrames(path, w, h, [&](const uint8_t* rgb) {
    frames.emplace_back(rgb, rgb + static_cast<size_t>(w) * h * 3);
  });
  return frames;
}

RunResult IdentityAndFaces(const std::string& dir, const std::string& clip,
                           const nlohmann::json& face_keys, int w, int h,
                           std::vector<std::vector<uint8_t>>* identity,
                           std::vector<std::vector<uint8_t>>* faces) {
  RunResult ident = RunJob(dir, FaceTestJob(clip, dir + "/identity.mp4", ModelPath("identity")));
  REQUIRE_MESSAGE(ident.exit_code == 0, ident.err);
  nlohmann::json job = FaceTestJob(clip, dir + "/faces.mp4", ModelPath("invert"));
  job["mode"] = "faces";
  job.update(face_keys);
  RunResult r = RunJob(dir, job);
  SkipWithoutDetection(r);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  *identity = Frames(dir + "/identity.mp4", w, h);
  *faces = Frames(dir + "/faces.mp4", w, h);
  REQUIRE(faces->size() == identity->size());
  return r;
}

// Segments a job's done-log (state.json) lists as finished.
int SegmentsDone(const std::string& state_path) {
  nlohmann::json st = ReadJson(state_path);
  if (!st.is_object()) return 0;
  return static_cast<int>(st.value("segments_done", nlohmann::json::array()).size());
}

// Pixel (x, y)'s distance inside square s (negative: outside it), in pixels.
int Inside(const Square& s, int x, int y) {
  return std::min({x - s.x, s.x + kFace - 1 - x, y - s.y, s.y + kFace - 1 - y});
}

}  // namespace

TEST_CASE("face mode: outside the faces every pixel is the identity run's, inside the face model's") {
  const std::string dir = ScratchDir("face_mode_exact");
  const std::string clip = dir + "/in.mp4";
  RunResult made = Shell("ffmpeg -nostdin -v error -y -f lavfi -i testsrc2=size=" +
                         std::to_string(kW) + "x" + std::to_string(kH) + ":rate=25 -frames:v " +
                         std::to_string(kFrames) +
                         " -c:v libx264 -preset ultrafast -qp 0 -pix_fmt yuv444p " + clip);
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  WriteTable(dir + "/faces.json");

  std::vector<std::vector<uint8_t>> a, b;
  RunResult faces = IdentityAndFaces(
      dir, clip, {{"face_table", dir + "/faces.json"}, {"face_size", kFace}, {"blend", kBlend}},
      kW, kH, &a, &b);
  // The job says what it pasted: 20 faces A, 10 faces B, 4 frames without one.
  CHECK(faces.out.find("framemill: faces: 30 in 24 frames") != std::string::npos);
  CHECK(faces.out.find("4 frames without a face") != std::string::npos);
  // The job report has the same line.
  CHECK(ReadText(dir + "/faces.mp4.report.html").find("30 in 24 frames") != std::string::npos);

  REQUIRE(a.size() == static_cast<size_t>(kFrames));
  int outside_changed = 0, inside_wrong = 0, inside_checked = 0, worst_inside = 0;
  for (int f = 0; f < kFrames; ++f) {
    const std::vector<Square> squares = FacesOf(f);
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < kW; ++x) {
        int deepest = -1000;
        for (const Square& s : squares) deepest = std::max(deepest, Inside(s, x, y));
        for (int c = 0; c < 3; ++c) {
          const size_t i = (static_cast<size_t>(y) * kW + x) * 3 + c;
          const int id = a[f][i], fm = b[f][i];
          if (deepest < 0) {
            outside_changed += id != fm;  // outside every square: untouched, bit for bit
          } else if (deepest >= kBlend + 1) {
            // Past the feather: the inverse, to the rounding of the YUV 4:4:4 round trip.
            const int err = std::abs(fm - (255 - id));
            worst_inside = std::max(worst_inside, err);
            inside_wrong += err > 3;
            ++inside_checked;
          }
        }
      }
    }
  }
  INFO("worst difference from the inverse inside a face: " << worst_inside);
  CHECK(outside_changed == 0);
  CHECK(inside_checked > 0);
  CHECK(inside_wrong == 0);
}

TEST_CASE("face mode: a talking head with the detector: one face a frame, changed, the rest not") {
  const std::string detector = FrontDetectorOrSkip();
  const std::string dir = ScratchDir("face_mode_d0");
  const std::string clip = TestClip("d0.mp4");  // 512x512, 78 frames, one face
  constexpr int kSide = 512, kClip = 78, kS = 128, kFeather = 8;
  // The faces the job will find: `framemill faces --table` runs the same face pass.
  const std::string table = dir + "/d0-faces.json";
  RunResult made = WaitJob(StartFramemill(dir,
                                          {"faces", clip, "--detector", detector, "--table", table,
                                           "--face-size", std::to_string(kS)},
                                          {}, "faces"),
                           120);
  SkipWithoutDetection(made);
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  nlohmann::json t = nlohmann::json::parse(std::ifstream(table));

  std::vector<std::vector<uint8_t>> a, b;
  RunResult faces = IdentityAndFaces(
      dir, clip, {{"face_detector", detector}, {"face_size", kS}, {"blend", kFeather}}, kSide,
      kSide, &a, &b);
  CHECK(faces.out.find("framemill: faces: 78 in 78 frames") != std::string::npos);
  CHECK(faces.out.find("0 frames without a face") != std::string::npos);

  REQUIRE(a.size() == static_cast<size_t>(kClip));
  REQUIRE(t.at("frames").size() == a.size());
  // Each pixel's place in its frame's face crop (the table's warp): outside the crop square (with
  // a pixel to spare for the bilinear reach) it must be the identity run's; well inside, past
  // the feather, the inverse of it (to resampling: the face went through two bilinear warps).
  int64_t outside = 0, outside_changed = 0, inside = 0, inside_inverted = 0;
  for (int f = 0; f < kClip; ++f) {
    const nlohmann::json& fs_ = t.at("frames")[f];
    REQUIRE(fs_.size() == 1u);
    std::vector<double> m;
    for (int k = 1; k <= 6; ++k) m.push_back(fs_[0][k].get<double>());
    for (int y = 0; y < kSide; ++y) {
      for (int x = 0; x < kSide; ++x) {
        const double u = m[0] * x + m[1] * y + m[2], v = m[3] * x + m[4] * y + m[5];
        const double depth = std::min({u, kS - 1 - u, v, kS - 1 - v});
        const size_t i = (static_cast<size_t>(y) * kSide + x) * 3;
        if (depth < -2) {
          ++outside;
          for (int c = 0; c < 3; ++c) outside_changed += a[f][i + c] != b[f][i + c];
        } else if (depth > kFeather + 2) {
          ++inside;
          int worst = 0;
          for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(b[f][i + c] - (255 - a[f][i + c])));
          inside_inverted += worst <= 24;
        }
      }
    }
  }
  INFO("outside " << outside << ", inside " << inside << ", inverted " << inside_inverted);
  CHECK(outside > 0);
  CHECK(outside_changed == 0);
  CHECK(inside > 0);
  CHECK(inside_inverted > inside * 9 / 10);
}

TEST_CASE("face mode: a leaking face model is recycled by its memory limit, every frame in place") {
  const std::string dir = ScratchDir("face_mode_leak");
  // A worker lives about 170 frames on the CPU (1,000 frames made 6 recycles): 512 make 3 or so.
  constexpr int kIw = 320, kIh = 240, kIndexFrames = 512;
  const std::string clip = dir + "/index.mp4";
  MakeIndexVideo(clip, kIndexFrames, kIw, kIh, 25, /*tone_hz=*/0);
  // Two faces of 256 on every frame, moved by whole pixels (the leak is the identity: the frame
  // comes back as it went in). A crop batch is 0.79 MB a face in float: 50 MB a chunk of 32.
  nlohmann::json frames = nlohmann::json::array();
  for (int f = 0; f < kIndexFrames; ++f) {
    frames.push_back({{0, 1.0, 0.0, -10.0, 0.0, 1.0, 0.0}, {1, 1.0, 0.0, -60.0, 0.0, 1.0, 0.0}});
  }
  nlohmann::json t = {{"format", "framemill-face-table"}, {"version", 1},
                      {"width", kIw},  {"height", kIh},  {"face_size", 256},
                      {"video_frames", kIndexFrames},  {"first_frame", 0},
                      {"frame_count", kIndexFrames},   {"frames", frames}};
  std::ofstream(dir + "/faces.json") << t.dump();
  nlohmann::json job = {{"input", clip},
                        {"output", dir + "/out.mp4"},
                        {"model", ModelCopy("leak", dir)},
                        {"workers", 2},
                        {"chunk_frames", 32},
                        {"device", TestDevice()},
                        {"overwrite", true},
                        {"mode", "faces"},
                        {"face_table", dir + "/faces.json"},
                        {"face_size", 256}};
  const bool cuda = TestDevice() != "cpu";
  const char* key = cuda ? "gpu_reserved_mb" : "rss_mb";
  job["recycle"] = {{key, cuda ? 300 : 400}};
  job["kill"] = {{key, cuda ? 1500 : 1200}};
  RunResult r = RunJob(dir, job);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(OutOfPlace(FrameIndices(dir + "/out.mp4", kIw, kIh), kIndexFrames) == 0);
  CHECK(r.out.find("recycled") != std::string::npos);
  CHECK(r.out.find("recycled 0") == std::string::npos);
  CHECK(r.out.find("crashed 0, killed 0") != std::string::npos);
}

TEST_CASE("face mode: a service killed mid-job resumes with its face table, frame for frame") {
  const std::string detector = FrontDetectorOrSkip();
  Service s = MakeService("face_resume", WithFaultWorker());  // its hang at frame 60
  constexpr int kSide = 512;
  nlohmann::json job =
      FaceTestJob(TestClip("d0.mp4"), s.dir + "/out.mp4", ModelCopy("invert", s.dir));
  job.erase("overwrite");
  job["mode"] = "faces";
  job["face_detector"] = detector;
  job["face_size"] = 128;
  job["segment_seconds"] = 1;  // d0 is 25 fps: segments of 3 chunks of 8, four of them
  // The uninterrupted run.
  nlohmann::json whole = job;
  whole["output"] = s.dir + "/whole.mp4";
  whole["overwrite"] = true;
  RunResult ref = RunJob(s.dir, whole);
  SkipWithoutDetection(ref);
  REQUIRE_MESSAGE(ref.exit_code == 0, ref.err);

  Drop(s, "talk", job.dump());
  const std::string work = s.spool + "/active/talk/work";
  // The worker stops at frame 60 (the third segment) and never comes back: the service is killed
  // there, with two segments finished.
  BackgroundJob first = Serve(s, {{"FRAMEMILL_TEST_FAULT", "hang@60"}});
  KillOnExit guard_first{first};
  REQUIRE(WaitUntil([&] { return SegmentsDone(work + "/state.json") >= 2; }, 120));
  CHECK(fs::exists(work + "/faces.json"));
  ::kill(first.pid, SIGKILL);
  WaitJob(first, 10);
  CHECK(WaitUntil([&] { return WorkerPids(s.dir).empty(); }, 20));

  BackgroundJob second = Serve(s, {}, "serve2");
  KillOnExit guard_second{second};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/talk/result.json"); }, 120));
  nlohmann::json r = ReadJson(s.spool + "/done/talk/result.json");
  CHECK(r["segments_resumed"].get<int>() >= 2);
  CHECK(r["faces"]["faces_found"].get<int>() == 78);
  ::kill(second.pid, SIGTERM);
  RunResult served = WaitJob(second, 60);
  CHECK(served.err.find("faces: the table of the first run") != std::string::npos);
  CHECK(FrameHashes(s.dir + "/out.mp4", kSide, kSide) ==
        FrameHashes(s.dir + "/whole.mp4", kSide, kSide));
}

// A detector file that kills OpenCV (an initializer claiming 100,000,000 floats with 4 bytes of
// data: SIGSEGV in OpenCV 4.6) once took the service down with it, and the job crash-looped it.
// Parsed in the confined detector process now, it fails its own job by name, and the job after
// it, with the real detector, is done by the same service process.
TEST_CASE("face mode: a detector that crashes OpenCV fails its job, and the service goes on") {
  const std::string detector = FrontDetectorOrSkip();
  Service s = MakeService("face_hostile_detector");
  const std::string tensor = std::string("\x08\x80\xc2\xd7\x2f", 5) + std::string("\x10\x01", 2) +
                             std::string("\x42\x01w", 3) + std::string("\x4a\x04\0\0\x80\x3f", 6);
  const std::string graph = std::string("\x2a") + static_cast<char>(tensor.size()) + tensor;
  std::ofstream(s.dir + "/over.onnx", std::ios::binary)
      << std::string("\x08\x07\x3a", 3) + static_cast<char>(graph.size()) + graph;
  nlohmann::json job =
      FaceTestJob(TestClip("d0.mp4"), s.dir + "/bad.mp4", ModelCopy("invert", s.dir));
  job["mode"] = "faces";
  job["face_size"] = 128;
  job["face_detector"] = s.dir + "/over.onnx";
  Drop(s, "hostile", job.dump());
  job["face_detector"] = detector;
  job["output"] = s.dir + "/good.mp4";
  job["priority"] = -1;  // after the hostile one
  Drop(s, "good", job.dump());
  BackgroundJob serve = Serve(s);
  KillOnExit guard{serve};
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/failed/hostile/result.json"); }, 120));
  const nlohmann::json failed = ReadJson(s.spool + "/failed/hostile/result.json");
  INFO(failed.dump());
  CHECK(failed["reason"]["code"] == "model_invalid");
  CHECK(failed["reason"]["message"].get<std::string>().find("face detector") !=
        std::string::npos);
  REQUIRE(WaitUntil([&] { return fs::exists(s.spool + "/done/good/result.json"); }, 180));
  CHECK(::kill(serve.pid, 0) == 0);  // the one service process did both
  ::kill(serve.pid, SIGTERM);
  RunResult served = WaitJob(serve, 60);
  CHECK(served.exit_code == 0);  // a crash of the service would show here
}
