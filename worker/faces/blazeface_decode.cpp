#include "worker/faces/blazeface_decode.h"

#include <algorithm>
#include <cmath>

namespace framemill {

namespace {

// The feature maps: cells per side (as a fraction of the first map's) and anchors per cell.
struct FeatureMap {
  int cells;
  int anchors_per_cell;
};
constexpr FeatureMap kMaps[] = {{kBlazeFaceCellsFirstMap, 2}, {kBlazeFaceCellsFirstMap / 2, 6}};

float Sigmoid(float logit) {
  const float clipped = std::clamp(logit, -100.0f, 100.0f);
  return 1.0f / (1.0f + std::exp(-clipped));
}

}  // namespace

std::vector<Anchor> BlazeFaceAnchors(int input_size) {
  std::vector<Anchor> anchors;
  if (input_size <= 0 || input_size % kBlazeFaceCellsFirstMap != 0) return anchors;
  for (const FeatureMap& map : kMaps) {
    for (int row = 0; row < map.cells; ++row) {
      for (int col = 0; col < map.cells; ++col) {
        const Anchor a{(col + 0.5f) / map.cells, (row + 0.5f) / map.cells};
        for (int i = 0; i < map.anchors_per_cell; ++i) anchors.push_back(a);
      }
    }
  }
  return anchors;
}

Letterbox FitInto(int frame_width, int frame_height, int input_size) {
  Letterbox box;
  if (frame_width <= 0 || frame_height <= 0) return box;
  box.scale = static_cast<float>(input_size) / std::max(frame_width, frame_height);
  box.width = std::clamp(static_cast<int>(std::lround(frame_width * box.scale)), 1, input_size);
  box.height = std::clamp(static_cast<int>(std::lround(frame_height * box.scale)), 1, input_size);
  box.pad_x = static_cast<float>((input_size - box.width) / 2);
  box.pad_y = static_cast<float>((input_size - box.height) / 2);
  return box;
}

std::vector<Face> DecodeBlazeFace(const float* scores, const float* boxes,
                                  const std::vector<Anchor>& anchors, int input_size,
                                  float min_score) {
  std::vector<Face> faces;
  const float s = static_cast<float>(input_size);
  for (size_t i = 0; i < anchors.size(); ++i) {
    const float score = Sigmoid(scores[i]);
    if (score < min_score) continue;
    const float* v = boxes + i * kBlazeFaceValuesPerAnchor;
    const float cx = anchors[i].x * s + v[0];
    const float cy = anchors[i].y * s + v[1];
    Face f;
    f.width = v[2];
    f.height = v[3];
    f.x = cx - f.width / 2;
    f.y = cy - f.height / 2;
    for (int k = 0; k < kFaceKeypoints; ++k) {
      f.keypoints[k] = {anchors[i].x * s + v[4 + 2 * k], anchors[i].y * s + v[5 + 2 * k]};
    }
    f.score = score;
    faces.push_back(f);
  }
  return faces;
}

Face ToFrame(const Face& face, const Letterbox& box, int frame_width, int frame_height) {
  auto fx = [&](float x) { return (x - box.pad_x) / box.scale; };
  auto fy = [&](float y) { return (y - box.pad_y) / box.scale; };
  Face out = face;
  const float x0 = std::clamp(fx(face.x), 0.0f, static_cast<float>(frame_width));
  const float y0 = std::clamp(fy(face.y), 0.0f, static_cast<float>(frame_height));
  const float x1 = std::clamp(fx(face.x + face.width), 0.0f, static_cast<float>(frame_width));
  const float y1 = std::clamp(fy(face.y + face.height), 0.0f, static_cast<float>(frame_height));
  out.x = x0;
  out.y = y0;
  out.width = std::max(0.0f, x1 - x0);
  out.height = std::max(0.0f, y1 - y0);
  for (int k = 0; k < kFaceKeypoints; ++k) {
    out.keypoints[k] = {fx(face.keypoints[k].x), fy(face.keypoints[k].y)};
  }
  return out;
}

}  // namespace framemill
