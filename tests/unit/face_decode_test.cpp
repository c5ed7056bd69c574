// BlazeFace's arithmetic without the model: anchors where MediaPipe puts them, an anchor's raw
// values decoded to the box and keypoints they stand for, the letterbox mapping back to the
// frame, weighted suppression, and the PPM pictures `framemill faces` reads from ffmpeg.
#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "worker/faces/blazeface_decode.h"
#include "worker/faces/face_nms.h"
#include "supervisor/faces/faces_in_video.h"

using namespace framemill;

TEST_CASE("faces: 896 anchors, 16x16 cells of 2 then 8x8 cells of 6, at cell centres") {
  for (int size : {128, 256}) {
    const std::vector<Anchor> a = BlazeFaceAnchors(size);
    REQUIRE(a.size() == 896);
    CHECK(a[0].x == doctest::Approx(0.5 / 16));
    CHECK(a[1].x == doctest::Approx(0.5 / 16));  // the cell's second anchor, same place
    CHECK(a[2].x == doctest::Approx(1.5 / 16));
    CHECK(a[2 * 16].y == doctest::Approx(1.5 / 16));  // the second row
    CHECK(a[511].x == doctest::Approx(15.5 / 16));
    CHECK(a[511].y == doctest::Approx(15.5 / 16));
    CHECK(a[512].x == doctest::Approx(0.5 / 8));  // the second map
    CHECK(a[512 + 5].x == doctest::Approx(0.5 / 8));
    CHECK(a[512 + 6].x == doctest::Approx(1.5 / 8));
    CHECK(a[895].y == doctest::Approx(7.5 / 8));
  }
  CHECK(BlazeFaceAnchors(100).empty());
  CHECK(BlazeFaceAnchors(0).empty());
}

TEST_CASE("faces: an anchor's raw values decode to its box and keypoints, scored by sigmoid") {
  const std::vector<Anchor> anchors = BlazeFaceAnchors(128);
  std::vector<float> scores(anchors.size(), -10.0f);  // sigmoid(-10) ~ 0.00005
  std::vector<float> boxes(anchors.size() * kBlazeFaceValuesPerAnchor, 0.0f);
  const int i = 512 + (3 * 8 + 4) * 6 + 2;  // second map, row 3, column 4: centre (72, 56)
  scores[i] = 2.0f;                          // sigmoid(2) = 0.8808
  float* v = &boxes[i * kBlazeFaceValuesPerAnchor];
  v[0] = 4;  // centre offset, input pixels
  v[1] = -6;
  v[2] = 40;  // size
  v[3] = 50;
  for (int k = 0; k < kFaceKeypoints; ++k) {
    v[4 + 2 * k] = static_cast<float>(k);
    v[5 + 2 * k] = static_cast<float>(-k);
  }
  const std::vector<Face> faces = DecodeBlazeFace(scores.data(), boxes.data(), anchors, 128, 0.5f);
  REQUIRE(faces.size() == 1);
  const Face& f = faces[0];
  CHECK(f.score == doctest::Approx(1 / (1 + std::exp(-2.0))));
  CHECK(f.x == doctest::Approx(72 + 4 - 20));
  CHECK(f.y == doctest::Approx(56 - 6 - 25));
  CHECK(f.width == doctest::Approx(40));
  CHECK(f.height == doctest::Approx(50));
  CHECK(f.at(FaceKeypoint::kLeftEar).x == doctest::Approx(72 + 5));
  CHECK(f.at(FaceKeypoint::kLeftEar).y == doctest::Approx(56 - 5));
  // A higher threshold drops it; a lower one lets every anchor through.
  CHECK(DecodeBlazeFace(scores.data(), boxes.data(), anchors, 128, 0.9f).empty());
  CHECK(DecodeBlazeFace(scores.data(), boxes.data(), anchors, 128, 0.0f).size() == 896);
}

TEST_CASE("faces: the letterbox maps input pixels back to the frame, boxes clipped to it") {
  // 1920x1080 into 128: scale 1/15, 72 rows of picture, 28 rows of padding above.
  const Letterbox box = FitInto(1920, 1080, 128);
  CHECK(box.scale == doctest::Approx(128.0 / 1920));
  CHECK(box.width == 128);
  CHECK(box.height == 72);
  CHECK(box.pad_x == 0);
  CHECK(box.pad_y == 28);
  Face in;
  in.x = 64;
  in.y = 28 + 36;
  in.width = 8;
  in.height = 8;
  in.keypoints[0] = {64, 28};
  Face out = ToFrame(in, box, 1920, 1080);
  CHECK(out.x == doctest::Approx(960));
  CHECK(out.y == doctest::Approx(540));
  CHECK(out.width == doctest::Approx(120));
  CHECK(out.keypoints[0].y == doctest::Approx(0));
  // A face running off the frame's top keeps its part inside.
  in.y = 20;
  in.height = 16;  // input rows 20..36: frame rows -120..120
  out = ToFrame(in, box, 1920, 1080);
  CHECK(out.y == 0);
  CHECK(out.height == doctest::Approx(120));
  // A portrait frame pads left and right.
  const Letterbox tall = FitInto(480, 640, 256);
  CHECK(tall.height == 256);
  CHECK(tall.width == 192);
  CHECK(tall.pad_x == 32);
}

TEST_CASE("faces: weighted suppression merges overlapping detections, keeps separate ones") {
  auto face = [](float x, float y, float size, float score) {
    Face f;
    f.x = x;
    f.y = y;
    f.width = size;
    f.height = size;
    f.score = score;
    f.keypoints[0] = {x, y};
    return f;
  };
  const std::vector<Face> in = {face(0, 0, 10, 0.6f), face(100, 100, 20, 0.7f),
                                face(2, 0, 10, 0.9f), face(300, 0, 10, 0.55f)};
  const std::vector<Face> out = WeightedNms(in, 0.3f, 0);
  REQUIRE(out.size() == 3);
  // The best first: the pair at the origin (IoU 8/12), averaged by score, scored by its best.
  CHECK(out[0].score == doctest::Approx(0.9f));
  CHECK(out[0].x == doctest::Approx((2 * 0.9 + 0 * 0.6) / 1.5));
  CHECK(out[0].keypoints[0].x == doctest::Approx((2 * 0.9) / 1.5));
  CHECK(out[1].score == doctest::Approx(0.7f));
  CHECK(out[1].x == doctest::Approx(100));
  CHECK(out[2].score == doctest::Approx(0.55f));
  CHECK(WeightedNms(in, 0.3f, 2).size() == 2);
  CHECK(WeightedNms(in, 0.9f, 0).size() == 4);  // nothing overlaps that much
  CHECK(WeightedNms({}, 0.3f, 0).empty());
}

TEST_CASE("faces: binary PPM pictures parse, anything else is refused") {
  const std::string pixels(2 * 3 * 3, '\x7f');
  Result<RgbPicture> p = ParsePpm("P6\n# from ffmpeg\n2 3\n255\n" + pixels);
  REQUIRE(p.ok());
  CHECK(p->width == 2);
  CHECK(p->height == 3);
  CHECK(p->pixels == pixels);
  CHECK_FALSE(ParsePpm("P5\n2 3\n255\n" + pixels).ok());
  CHECK_FALSE(ParsePpm("P6\n2 3\n65535\n" + pixels).ok());
  CHECK_FALSE(ParsePpm("P6\n2 3\n255\n" + pixels.substr(1)).ok());
  CHECK_FALSE(ParsePpm("P6\n99999999 3\n255\n").ok());
  CHECK_FALSE(ParsePpm("").ok());
}
