// Alignment (supervisor/faces/face_align.h): a face drawn at a known similarity of the template
// lands on the template within half a pixel; the fit is least squares (a noisy point moves the
// others less than it); face_margin shrinks the template about the crop's centre.
#include <cmath>

#include <doctest/doctest.h>

#include "supervisor/faces/face_align.h"

using namespace framemill;

namespace {

// `p` mapped by `m` (row-major 2x3).
FacePoint Apply(const float* m, FacePoint p) {
  return {m[0] * p.x + m[1] * p.y + m[2], m[3] * p.x + m[4] * p.y + m[5]};
}

// A face whose keypoints are the template of `size` taken to the frame by rotation `angle`
// (radians), scale `scale` and shift (dx, dy): the inverse of the warp the fit should find.
Face FaceAt(int size, double angle, double scale, double dx, double dy) {
  const std::array<FacePoint, kAlignPoints> t = TemplatePoints(size, 0.0);
  Face f;
  for (int i = 0; i < kAlignPoints; ++i) {
    const double x = t[i].x, y = t[i].y;
    f.keypoints[static_cast<int>(kAlignKeypoints[i])] = {
        static_cast<float>(scale * (std::cos(angle) * x - std::sin(angle) * y) + dx),
        static_cast<float>(scale * (std::sin(angle) * x + std::cos(angle) * y) + dy)};
  }
  // The ears, unused, far off: they must not pull the fit.
  f.keypoints[static_cast<int>(FaceKeypoint::kRightEar)] = {-5000, 7000};
  f.keypoints[static_cast<int>(FaceKeypoint::kLeftEar)] = {9000, -3000};
  return f;
}

}  // namespace

TEST_CASE("align: a face at a known similarity lands on the template within 0.5 px") {
  for (int size : {256, 512, 1024}) {
    for (double angle : {0.0, 0.3, -0.7, 3.0}) {
      for (double scale : {0.2, 0.9, 2.5}) {
        INFO("size " << size << " angle " << angle << " scale " << scale);
        const Face face = FaceAt(size, angle, scale, 1234.5, 321.25);
        std::optional<FaceWarp> w = AlignFace(face, size, 0.0, 7);
        REQUIRE(w.has_value());
        CHECK(w->present == 1);
        CHECK(w->track == 7);
        const std::array<FacePoint, kAlignPoints> t = TemplatePoints(size, 0.0);
        for (int i = 0; i < kAlignPoints; ++i) {
          const FacePoint c = Apply(w->to_crop, face.at(kAlignKeypoints[i]));
          CHECK(std::fabs(c.x - t[i].x) < 0.5);
          CHECK(std::fabs(c.y - t[i].y) < 0.5);
        }
        // A similarity: equal scale on both axes, no shear; the scale is the inverse of the
        // face's.
        CHECK(w->to_crop[0] == doctest::Approx(w->to_crop[4]).epsilon(1e-4));
        CHECK(w->to_crop[1] == doctest::Approx(-w->to_crop[3]).epsilon(1e-4));
        CHECK(std::hypot(w->to_crop[0], w->to_crop[3]) ==
              doctest::Approx(1.0 / scale).epsilon(1e-4));
      }
    }
  }
}

TEST_CASE("align: the template is FFHQ's at 512, and face_margin shrinks it about the centre") {
  const std::array<FacePoint, kAlignPoints> t = TemplatePoints(512, 0.0);
  CHECK(t[0].x == doctest::Approx(192.98).epsilon(1e-3));  // the right eye, on the picture's left
  CHECK(t[1].x == doctest::Approx(318.90).epsilon(1e-3));
  CHECK(t[3].y == doctest::Approx(371.28).epsilon(1e-3));  // the mouth
  const std::array<FacePoint, kAlignPoints> wide = TemplatePoints(512, 1.0);
  const double c = 255.5;
  for (int i = 0; i < kAlignPoints; ++i) {
    CHECK(wide[i].x - c == doctest::Approx((t[i].x - c) / 2).epsilon(1e-4));
    CHECK(wide[i].y - c == doctest::Approx((t[i].y - c) / 2).epsilon(1e-4));
  }
  // Half the size: the same layout at half the scale.
  const std::array<FacePoint, kAlignPoints> half = TemplatePoints(256, 0.0);
  CHECK(half[2].x == doctest::Approx(t[2].x / 2).epsilon(1e-3));
}

TEST_CASE("align: least squares: one point off spreads its error, coinciding points fail") {
  const int size = 512;
  Face face = FaceAt(size, 0.1, 1.0, 100, 50);
  face.keypoints[static_cast<int>(FaceKeypoint::kNoseTip)].x += 8;  // the nose tip 8 px off
  std::optional<FaceWarp> w = AlignFace(face, size, 0.0, 0);
  REQUIRE(w.has_value());
  const std::array<FacePoint, kAlignPoints> t = TemplatePoints(size, 0.0);
  double nose_error = 0, largest_other = 0;
  for (int i = 0; i < kAlignPoints; ++i) {
    const FacePoint c = Apply(w->to_crop, face.at(kAlignKeypoints[i]));
    const double e = std::hypot(c.x - t[i].x, c.y - t[i].y);
    if (kAlignKeypoints[i] == FaceKeypoint::kNoseTip) {
      nose_error = e;
    } else {
      largest_other = std::max(largest_other, e);
    }
  }
  CHECK(nose_error < 8);       // the fit moved toward it
  CHECK(largest_other > 0.5);  // by moving the others a little (no point is dropped)
  CHECK(largest_other < nose_error);

  Face flat;
  for (FacePoint& p : flat.keypoints) p = {10, 10};
  CHECK_FALSE(AlignFace(flat, size, 0.0, 0).has_value());
}

TEST_CASE("align: the crop's centre maps back to the frame where the face is") {
  const Face face = FaceAt(512, 0.2, 1.5, 300, 200);
  std::optional<FaceWarp> w = AlignFace(face, 512, 0.0, 0);
  REQUIRE(w.has_value());
  const FacePoint centre = CropCentreInFrame(*w, 512);
  const FacePoint back = Apply(w->to_crop, centre);
  CHECK(back.x == doctest::Approx(255.5).epsilon(1e-4));
  CHECK(back.y == doctest::Approx(255.5).epsilon(1e-4));
}
