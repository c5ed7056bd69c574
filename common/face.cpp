#include "common/face.h"

#include <algorithm>

namespace framemill {

const char* Name(FaceKeypoint k) {
  switch (k) {
    case FaceKeypoint::kRightEye: return "right_eye";
    case FaceKeypoint::kLeftEye: return "left_eye";
    case FaceKeypoint::kNoseTip: return "nose_tip";
    case FaceKeypoint::kMouth: return "mouth";
    case FaceKeypoint::kRightEar: return "right_ear";
    case FaceKeypoint::kLeftEar: return "left_ear";
  }
  return "unknown";
}

float BoxIou(const Face& a, const Face& b) {
  const float w = std::min(a.x + a.width, b.x + b.width) - std::max(a.x, b.x);
  const float h = std::min(a.y + a.height, b.y + b.height) - std::max(a.y, b.y);
  if (w <= 0 || h <= 0) return 0;
  const float inter = w * h;
  const float uni = a.width * a.height + b.width * b.height - inter;
  return uni > 0 ? inter / uni : 0;
}

}  // namespace framemill
