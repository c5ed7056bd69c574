// A face found in a picture: its box, six keypoints and the detector's confidence, in the
// picture's own pixel coordinates (x to the right, y down, (0, 0) the top-left corner of the
// top-left pixel). Plain values; no OpenCV here, so every folder above can hold them.
#pragma once

#include <array>

namespace framemill {

// BlazeFace's keypoints, in the model's output order. "Right" and "left" are the person's own:
// on a face turned to the camera, the right eye is on the picture's left.
enum class FaceKeypoint { kRightEye, kLeftEye, kNoseTip, kMouth, kRightEar, kLeftEar };
inline constexpr int kFaceKeypoints = 6;

// "right_eye", "left_eye", "nose_tip", "mouth", "right_ear", "left_ear".
const char* Name(FaceKeypoint k);

struct FacePoint {
  float x = 0;
  float y = 0;
};

struct Face {
  float x = 0;  // box: top-left corner and size, pixels
  float y = 0;
  float width = 0;
  float height = 0;
  std::array<FacePoint, kFaceKeypoints> keypoints{};  // indexed by FaceKeypoint
  float score = 0;                                    // the model's confidence, 0..1

  const FacePoint& at(FaceKeypoint k) const { return keypoints[static_cast<int>(k)]; }
};

// Intersection over union of two boxes: 0 when they do not overlap (or both are empty), 1 when
// they are the same.
float BoxIou(const Face& a, const Face& b);

}  // namespace framemill
