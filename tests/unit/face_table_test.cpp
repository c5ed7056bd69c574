// Face tables (supervisor/faces/face_table.h): a table written and read back is the same to the
// bit; a table that does not fit the job (frame size, face_size, the video's frames, the frames
// needed) is a clear error; a damaged file is refused naming what is wrong; tracks become warps
// and the figures of result.json (supervisor/report/face_figures.h).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <doctest/doctest.h>

#include "common/file_util.h"
#include "supervisor/faces/face_pass.h"
#include "supervisor/faces/face_table.h"
#include "supervisor/faces/job_faces.h"
#include "supervisor/report/face_figures.h"
#include "supervisor/report/job_result.h"

using namespace framemill;
namespace fs = std::filesystem;

namespace {

std::string TempDir(const std::string& name) {
  std::string dir = fs::temp_directory_path().string() + "/framemill-face-table-" + name + "-" +
                    std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

FaceWarp Warp(float a, float b, float tx, float ty, uint32_t track) {
  FaceWarp w{};
  w.to_crop[0] = a, w.to_crop[1] = -b, w.to_crop[2] = tx;
  w.to_crop[3] = b, w.to_crop[4] = a, w.to_crop[5] = ty;
  w.present = 1;
  w.track = track;
  return w;
}

// A table of `frames` frames of 1920x1080, one face each (none on every tenth), values with
// awkward decimals.
FaceTable Sample(int64_t frames) {
  FaceTable t;
  t.width = 1920, t.height = 1080, t.face_size = 512, t.face_margin = 0.1;
  t.video_frames = frames + 100, t.first_frame = 100;
  for (int64_t f = 0; f < frames; ++f) {
    std::vector<FaceWarp> warps;
    if (f % 10 != 0) {
      warps.push_back(Warp(1.0f / 3 + f * 1e-4f, 0.0123456789f, -1234.56789f + f, -98.7654321f, 0));
    }
    if (f % 7 == 0) warps.push_back(Warp(2.2f, -0.3f, 1e-7f, 3e5f, 4));
    t.frames.push_back(std::move(warps));
  }
  t.stats.tracks = 5;
  t.stats.detection_s = 1.25;
  t.stats.threads = 2;
  t.CountFaces();
  return t;
}

std::string Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("face table: written and read back, the same to the bit") {
  const std::string dir = TempDir("round");
  const FaceTable t = Sample(300);
  REQUIRE(WriteFaceTable(dir + "/t.json", t).ok());
  Result<FaceTable> back = ReadFaceTable(dir + "/t.json");
  REQUIRE(back.ok());
  CHECK(back->width == 1920);
  CHECK(back->height == 1080);
  CHECK(back->face_size == 512);
  CHECK(back->face_margin == doctest::Approx(0.1));
  CHECK(back->video_frames == 400);
  CHECK(back->first_frame == 100);
  REQUIRE(back->frames.size() == t.frames.size());
  for (size_t f = 0; f < t.frames.size(); ++f) {
    REQUIRE(back->frames[f].size() == t.frames[f].size());
    for (size_t i = 0; i < t.frames[f].size(); ++i) {
      CHECK(std::memcmp(&back->frames[f][i], &t.frames[f][i], sizeof(FaceWarp)) == 0);
    }
  }
  CHECK(back->stats.faces_found == t.stats.faces_found);
  CHECK(back->stats.frames_without_faces == 30 - 5);  // every tenth, less those with the 7th's
  CHECK(back->stats.faces_per_frame == t.stats.faces_per_frame);
  CHECK(back->stats.tracks == 5);
  CHECK(back->stats.detection_s == doctest::Approx(1.25));
  fs::remove_all(dir);
}

TEST_CASE("face table: 30,000 frames of one face make a file of a few megabytes") {
  const std::string dir = TempDir("size");
  FaceTable t = Sample(30000);
  REQUIRE(WriteFaceTable(dir + "/t.json", t).ok());
  const auto bytes = fs::file_size(dir + "/t.json");
  MESSAGE("a face table of 30,000 frames (" << t.stats.faces_found << " faces): " << bytes
                                            << " bytes");
  CHECK(bytes < 4u * 1000 * 1000);
  fs::remove_all(dir);
}

TEST_CASE("face table: a table that does not fit the job is refused, saying which value") {
  const FaceTable t = Sample(300);  // frames 100..399 of a 400-frame video, 1920x1080, S 512
  const FaceTableNeed good{1920, 1080, 512, 400, 150, 100};
  CHECK(CheckFaceTable(t, good, "t.json").ok());
  auto error = [&](FaceTableNeed need) {
    Status s = CheckFaceTable(t, need, "t.json");
    CHECK(s.code() == StatusCode::kInvalidJob);
    CHECK(s.message().rfind("t.json: ", 0) == 0);
    return s.message();
  };
  FaceTableNeed n = good;
  n.width = 1280;
  CHECK(error(n).find("made for frames of 1920x1080, the job's are 1280x1080") !=
        std::string::npos);
  n = good;
  n.face_size = 1024;
  CHECK(error(n).find("face_size is 512, the job's is 1024") != std::string::npos);
  n = good;
  n.video_frames = 401;
  CHECK(error(n).find("frame count is 400, the job's is 401") != std::string::npos);
  n = good;
  n.first_frame = 50;
  CHECK(error(n).find("holds frames 100..399, the job needs 50..149") != std::string::npos);
  n = good;
  n.frames = 300;
  CHECK(error(n).find("the job needs 150..449") != std::string::npos);
}

TEST_CASE("face table: a damaged or foreign file is refused, naming what is wrong") {
  const std::string dir = TempDir("bad");
  CHECK(ReadFaceTable(dir + "/none.json").status().code() == StatusCode::kInputMissing);
  REQUIRE(WriteFaceTable(dir + "/t.json", Sample(3)).ok());
  std::ifstream in(dir + "/t.json");
  nlohmann::json good = nlohmann::json::parse(in);
  auto refused = [&](const nlohmann::json& doc, const std::string& words) {
    Result<FaceTable> r = ReadFaceTable(Write(dir + "/x.json", doc.dump()));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInputInvalid);
    INFO(r.status().message());
    CHECK(r.status().message().find(words) != std::string::npos);
  };
  refused(nlohmann::json{{"frames", 1}}, "not a framemill face table");
  // Fields of another type are refused or left out, never thrown (a fuzz finding: a "format"
  // that is a list ended the supervisor).
  nlohmann::json j = good;
  j["format"] = {{{0, 0}}};
  refused(j, "not a framemill face table");
  j = good;
  j["stats"]["tracks"] = "many";
  j["stats"]["detection_s"] = {1};
  Result<FaceTable> odd_stats = ReadFaceTable(Write(dir + "/s.json", j.dump()));
  REQUIRE(odd_stats.ok());
  CHECK(odd_stats->stats.tracks == 0);
  CHECK(odd_stats->stats.detection_s == 0.0);
  j = good;
  j["version"] = 2;
  refused(j, "version 2");
  j = good;
  j["frame_count"] = 4;
  refused(j, "frame_count (4)");
  j = good;
  j["frames"][1] = {{0, 0, 0, 5, 0, 0, 5}};  // a matrix of zeros at its left
  refused(j, "frame 101: a matrix that cannot be inverted");
  j = good;
  j["frames"][1] = {{0, 1, 0, 5}};
  refused(j, "a face must be [track, m0");
  j = good;
  j["face_size"] = 8;
  refused(j, "face_size");
  Result<FaceTable> text = ReadFaceTable(Write(dir + "/y.json", "{not json"));
  CHECK(text.status().code() == StatusCode::kInputInvalid);
  fs::remove_all(dir);
}

TEST_CASE("face table: tracks become warps, and the figures of result.json") {
  FaceTracks tracks;
  tracks.tracks = 2;
  Face face;
  face.width = face.height = 100;
  face.keypoints = {FacePoint{30, 40}, {70, 40}, {50, 60}, {50, 75}, {5, 45}, {95, 45}};
  tracks.frames = {{{0, face, false}}, {}, {{0, face, true}, {1, face, false}}, {}};
  const FaceTable t = TableFromTracks(tracks, FaceSetting{}, 640, 360, 10, 6);
  CHECK(t.first_frame == 6);
  CHECK(t.frames[2].size() == 2);
  CHECK(t.frames[2][1].track == 1);
  CHECK(t.stats.faces_found == 3);
  CHECK(t.stats.faces_filled == 1);
  CHECK(t.stats.frames_without_faces == 2);
  CHECK(t.stats.faces_per_frame == std::vector<int64_t>{2, 1, 1});

  const FaceFigures figures = FaceFiguresOf(t, 25.0);
  const nlohmann::json j = figures.ToJson();
  CHECK(j["frames"] == 4);
  CHECK(j["frames_without_faces"] == 2);
  CHECK(j["faces_found"] == 3);
  CHECK(j["faces_per_second"].get<double>() == doctest::Approx(3 * 25.0 / 4));
  CHECK(j["tracks"] == 2);
  JobReport report;
  CHECK_FALSE(DoneResultJson("j1", report, "a", "b").contains("faces"));
  report.faces = figures;
  CHECK(DoneResultJson("j1", report, "a", "b")["faces"] == j);
}

TEST_CASE("face table: a job with face_table gets its own frames of it, or a clear error") {
  const std::string dir = TempDir("job");
  const FaceTable t = Sample(300);  // frames 100..399 of a 400-frame video
  REQUIRE(WriteFaceTable(dir + "/t.json", t).ok());
  MediaInfo media;
  media.video.display_width = 1920;
  media.video.display_height = 1080;
  media.video.frame_count = 400;
  JobSettings settings;
  settings.mode = JobMode::kFaces;
  settings.faces.table = dir + "/t.json";
  JobFacesInput input;
  input.media = &media;
  input.first = 150;
  input.end = 250;
  const std::atomic<bool> stop{false};
  Result<FaceTable> mine = FacesForJob(Config{}, settings, input, stop);
  REQUIRE(mine.ok());
  CHECK(mine->first_frame == 150);
  REQUIRE(mine->frames.size() == 100);
  for (size_t f = 0; f < 100; ++f) {
    REQUIRE(mine->frames[f].size() == t.frames[f + 50].size());
    for (size_t i = 0; i < t.frames[f + 50].size(); ++i) {
      CHECK(std::memcmp(&mine->frames[f][i], &t.frames[f + 50][i], sizeof(FaceWarp)) == 0);
    }
  }
  // Sample's frames 50, 60, ..., 140 have no first face; 70 and 140 have the second.
  CHECK(mine->stats.frames_without_faces == 10 - 2);
  // max_faces holds for a table too: the first (largest) face of each frame is kept.
  {
    JobSettings one = settings;
    one.faces.max_faces = 1;
    Result<FaceTable> capped = FacesForJob(Config{}, one, input, stop);
    REQUIRE(capped.ok());
    int64_t faces = 0;
    for (size_t f = 0; f < 100; ++f) {
      REQUIRE(capped->frames[f].size() == std::min<size_t>(1, t.frames[f + 50].size()));
      if (!capped->frames[f].empty()) {
        CHECK(std::memcmp(&capped->frames[f][0], &t.frames[f + 50][0], sizeof(FaceWarp)) == 0);
      }
      faces += static_cast<int64_t>(capped->frames[f].size());
    }
    CHECK(capped->stats.faces_found == faces);
    CHECK(faces < mine->stats.faces_found);  // the sample has frames with two faces
  }

  settings.faces.size = 256;
  Result<FaceTable> other = FacesForJob(Config{}, settings, input, stop);
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == StatusCode::kInvalidJob);
  CHECK(other.status().message().find("job.face_table " + dir + "/t.json: its face_size is 512") !=
        std::string::npos);
  settings.faces.table = dir + "/none.json";
  Result<FaceTable> none = FacesForJob(Config{}, settings, input, stop);
  CHECK(none.status().code() == StatusCode::kInputMissing);
  CHECK(none.status().message().rfind("job.face_table: ", 0) == 0);
  fs::remove_all(dir);
}
