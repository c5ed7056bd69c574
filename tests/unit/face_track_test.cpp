// Tracking (supervisor/faces/face_track.h) on synthetic detections: jittered keypoints come out
// smoother (measured), a missed frame or two is filled, two faces crossing keep their ids, small
// faces are dropped and the largest max_faces kept.
#include <cmath>
#include <cstdint>

#include <doctest/doctest.h>

#include "supervisor/faces/face_track.h"

using namespace framemill;

namespace {

// A face of box side `side` whose top-left corner is at (x, y), keypoints inside it.
Face Square(float x, float y, float side) {
  Face f;
  f.x = x, f.y = y, f.width = side, f.height = side, f.score = 0.9f;
  const float offsets[kFaceKeypoints][2] = {{0.3f, 0.4f},  {0.7f, 0.4f},   {0.5f, 0.6f},
                                            {0.5f, 0.75f}, {0.05f, 0.45f}, {0.95f, 0.45f}};
  for (int k = 0; k < kFaceKeypoints; ++k) {
    f.keypoints[k] = {x + offsets[k][0] * side, y + offsets[k][1] * side};
  }
  return f;
}

// Deterministic noise in [-amplitude, amplitude].
struct Noise {
  uint64_t state = 12345;
  float operator()(float amplitude) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return amplitude * (static_cast<float>(state >> 40) / static_cast<float>(1ull << 24) * 2 - 1);
  }
};

float RightEyeX(const Face& f) { return f.at(FaceKeypoint::kRightEye).x; }

}  // namespace

TEST_CASE("track: jittered keypoints come out smoother, and a steady motion is not delayed") {
  const int frames = 80;
  Noise noise;
  std::vector<std::vector<Face>> detections(frames);
  std::vector<Face> truth(frames);
  for (int f = 0; f < frames; ++f) {
    truth[f] = Square(100 + 3.0f * f, 200 + 1.0f * f, 120);
    Face jittered = truth[f];
    for (FacePoint& p : jittered.keypoints) p.x += noise(4), p.y += noise(4);
    jittered.x += noise(4), jittered.y += noise(4);
    detections[f].push_back(jittered);
  }
  const FaceTracks out = TrackFaces(detections, FaceTrackOptions{});
  CHECK(out.tracks == 1);
  double raw = 0, smooth = 0, bias = 0;
  int n = 0;
  for (int f = 2; f < frames - 2; ++f) {  // inside the window's reach of both ends
    REQUIRE(out.frames[f].size() == 1);
    for (int k = 0; k < kFaceKeypoints; ++k) {
      const FacePoint t = truth[f].keypoints[k];
      const FacePoint d = detections[f][0].keypoints[k];
      const FacePoint s = out.frames[f][0].face.keypoints[k];
      raw += std::pow(d.x - t.x, 2) + std::pow(d.y - t.y, 2);
      smooth += std::pow(s.x - t.x, 2) + std::pow(s.y - t.y, 2);
      bias += s.x - t.x;
      ++n;
    }
  }
  const double raw_rms = std::sqrt(raw / n), smooth_rms = std::sqrt(smooth / n);
  MESSAGE("keypoint error against the true path: " << raw_rms << " px detected, " << smooth_rms
                                                   << " px smoothed (R = 2)");
  // Uniform noise of +-4 px: 2.3 px RMS per axis; a 5-frame mean divides it by about sqrt(5).
  CHECK(smooth_rms < 0.6 * raw_rms);
  CHECK(std::fabs(bias / n) < 0.3);  // a steady 3 px a frame is not delayed
  // Frame-to-frame steps are steadier too.
  double raw_step = 0, smooth_step = 0;
  for (int f = 3; f < frames - 2; ++f) {
    raw_step += std::fabs((RightEyeX(detections[f][0]) - RightEyeX(detections[f - 1][0])) - 3);
    smooth_step +=
        std::fabs((RightEyeX(out.frames[f][0].face) - RightEyeX(out.frames[f - 1][0].face)) - 3);
  }
  CHECK(smooth_step < 0.5 * raw_step);
}

TEST_CASE("track: a face missed for two frames is filled, three frames start a new track") {
  std::vector<std::vector<Face>> detections(30);
  for (int f = 0; f < 30; ++f) {
    if (f == 10 || f == 11 || (f >= 20 && f <= 22)) continue;  // missed
    detections[f].push_back(Square(100 + 2.0f * f, 100, 100));
  }
  FaceTrackOptions options;
  options.smooth_radius = 0;  // the filled values alone
  const FaceTracks out = TrackFaces(detections, options);
  CHECK(out.tracks == 2);
  for (int f : {10, 11}) {
    REQUIRE(out.frames[f].size() == 1);
    CHECK(out.frames[f][0].filled);
    CHECK(out.frames[f][0].track == out.frames[9][0].track);
    CHECK(out.frames[f][0].face.x == doctest::Approx(100 + 2.0 * f));  // on the line
  }
  CHECK_FALSE(out.frames[12][0].filled);
  CHECK(out.frames[12][0].track == out.frames[9][0].track);
  for (int f = 20; f <= 22; ++f) CHECK(out.frames[f].empty());
  REQUIRE(out.frames[23].size() == 1);
  CHECK(out.frames[23][0].track != out.frames[19][0].track);
}

TEST_CASE("track: two faces crossing keep their ids") {
  const int frames = 40;
  std::vector<std::vector<Face>> detections(frames);
  for (int f = 0; f < frames; ++f) {
    // One goes right, one left, a little apart vertically; they overlap mid-way. Listed in an
    // order that changes, so that ids cannot come from the order.
    Face right = Square(100 + 10.0f * f, 100, 100), left = Square(490 - 10.0f * f, 140, 110);
    detections[f] = f % 2 ? std::vector<Face>{left, right} : std::vector<Face>{right, left};
  }
  const FaceTracks out = TrackFaces(detections, FaceTrackOptions{});
  CHECK(out.tracks == 2);
  uint32_t going_right = 0;
  for (const TrackedFace& t : out.frames[0]) {
    if (t.face.x < 300) going_right = t.track;
  }
  for (int f = 0; f < frames; ++f) {
    REQUIRE(out.frames[f].size() == 2);
    for (const TrackedFace& t : out.frames[f]) {
      INFO("frame " << f);
      // The track going right is the one with the 100 px box all along.
      CHECK((t.track == going_right) == (t.face.width < 105));
    }
  }
}

TEST_CASE("track: faces under face_min_size are dropped, the largest max_faces kept") {
  std::vector<std::vector<Face>> detections(5);
  for (auto& frame : detections) {
    frame = {Square(0, 0, 20), Square(100, 0, 60), Square(300, 0, 90), Square(500, 0, 40)};
  }
  FaceTrackOptions options;
  options.min_size = 32;
  options.max_faces = 2;
  const FaceTracks out = TrackFaces(detections, options);
  for (const auto& frame : out.frames) {
    REQUIRE(frame.size() == 2);
    CHECK(frame[0].face.width == doctest::Approx(90));  // largest first
    CHECK(frame[1].face.width == doctest::Approx(60));
  }
  CHECK(out.tracks == 3);  // the 20 px face never made a track
}
