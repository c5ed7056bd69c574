#include "worker/faces/face_nms.h"

#include <algorithm>

namespace framemill {

std::vector<Face> WeightedNms(std::vector<Face> faces, float min_iou, int max_faces) {
  std::stable_sort(faces.begin(), faces.end(),
                   [](const Face& a, const Face& b) { return a.score > b.score; });
  std::vector<Face> kept;
  std::vector<bool> taken(faces.size(), false);
  for (size_t i = 0; i < faces.size(); ++i) {
    if (taken[i]) continue;
    if (max_faces > 0 && static_cast<int>(kept.size()) >= max_faces) break;
    Face sum;  // score-weighted sums of box and keypoints
    float weight = 0;
    for (size_t j = i; j < faces.size(); ++j) {
      if (taken[j] || BoxIou(faces[i], faces[j]) < min_iou) continue;
      taken[j] = true;
      const Face& f = faces[j];
      const float w = f.score;
      sum.x += f.x * w;
      sum.y += f.y * w;
      sum.width += f.width * w;
      sum.height += f.height * w;
      for (int k = 0; k < kFaceKeypoints; ++k) {
        sum.keypoints[k].x += f.keypoints[k].x * w;
        sum.keypoints[k].y += f.keypoints[k].y * w;
      }
      weight += w;
    }
    if (weight <= 0) {  // every score 0: keep the face as it is
      kept.push_back(faces[i]);
      continue;
    }
    Face mean = sum;
    mean.x /= weight;
    mean.y /= weight;
    mean.width /= weight;
    mean.height /= weight;
    for (FacePoint& p : mean.keypoints) {
      p.x /= weight;
      p.y /= weight;
    }
    mean.score = faces[i].score;
    kept.push_back(mean);
  }
  return kept;
}

}  // namespace framemill
