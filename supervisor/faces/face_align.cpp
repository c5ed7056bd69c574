#include "supervisor/faces/face_align.h"

namespace framemill {
namespace {

// FFHQ's template at 512 pixels (see the header).
constexpr FacePoint kTemplate512[kAlignPoints] = {{192.98138f, 239.94708f},
                                                  {318.90277f, 240.19360f},
                                                  {256.63416f, 314.01935f},
                                                  {257.17511f, 371.28080f}};

}  // namespace

std::array<FacePoint, kAlignPoints> TemplatePoints(int size, double margin) {
  const double scale = size / static_cast<double>(kTemplateSide);
  const double centre = (size - 1) / 2.0;
  const double shrink = 1.0 / (1.0 + margin);
  std::array<FacePoint, kAlignPoints> out{};
  for (int i = 0; i < kAlignPoints; ++i) {
    out[i].x = static_cast<float>(centre + (kTemplate512[i].x * scale - centre) * shrink);
    out[i].y = static_cast<float>(centre + (kTemplate512[i].y * scale - centre) * shrink);
  }
  return out;
}

std::optional<std::array<float, 6>> FitSimilarity(const std::array<FacePoint, kAlignPoints>& from,
                                                  const std::array<FacePoint, kAlignPoints>& to) {
  // u = a x - b y + tx, v = b x + a y + ty. In centred coordinates the normal equations separate:
  // a = sum(x u + y v) / sum(x^2 + y^2), b = sum(x v - y u) / sum(x^2 + y^2).
  double fx = 0, fy = 0, tx = 0, ty = 0;
  for (int i = 0; i < kAlignPoints; ++i) {
    fx += from[i].x, fy += from[i].y, tx += to[i].x, ty += to[i].y;
  }
  fx /= kAlignPoints, fy /= kAlignPoints, tx /= kAlignPoints, ty /= kAlignPoints;
  double norm = 0, dot = 0, cross = 0;
  for (int i = 0; i < kAlignPoints; ++i) {
    const double x = from[i].x - fx, y = from[i].y - fy;
    const double u = to[i].x - tx, v = to[i].y - ty;
    norm += x * x + y * y;
    dot += x * u + y * v;
    cross += x * v - y * u;
  }
  if (norm < 1e-6) return std::nullopt;
  const double a = dot / norm, b = cross / norm;
  if (a * a + b * b < 1e-12) return std::nullopt;
  return std::array<float, 6>{
      static_cast<float>(a), static_cast<float>(-b), static_cast<float>(tx - a * fx + b * fy),
      static_cast<float>(b), static_cast<float>(a),  static_cast<float>(ty - b * fx - a * fy)};
}

std::optional<FaceWarp> AlignFace(const Face& face, int size, double margin, uint32_t track) {
  std::array<FacePoint, kAlignPoints> from{};
  for (int i = 0; i < kAlignPoints; ++i) from[i] = face.at(kAlignKeypoints[i]);
  std::optional<std::array<float, 6>> m = FitSimilarity(from, TemplatePoints(size, margin));
  if (!m) return std::nullopt;
  FaceWarp w{};
  for (int i = 0; i < 6; ++i) w.to_crop[i] = (*m)[i];
  w.present = 1;
  w.track = track;
  return w;
}

FacePoint CropCentreInFrame(const FaceWarp& warp, int size) {
  const double c = (size - 1) / 2.0;
  const double a = warp.to_crop[0], b = warp.to_crop[1], d = warp.to_crop[3], e = warp.to_crop[4];
  const double det = a * e - b * d;
  if (det == 0) return {};
  const double u = c - warp.to_crop[2], v = c - warp.to_crop[5];
  return {static_cast<float>((e * u - b * v) / det), static_cast<float>((a * v - d * u) / det)};
}

}  // namespace framemill
