// Alignment: a face's keypoints (frame pixels) to the FaceWarp (common/face_warp.h) that maps the
// frame onto the face model's square input, as the FFHQ faces that GFPGAN and GPEN learnt from
// are aligned. Pure C++ (no OpenCV): it runs, and is tested, in every build. Thread-safe.
//
// Points used: both eyes, the nose tip and the mouth (BlazeFace's mouth point is the mouth's
// centre). BlazeFace's ear points (tragions) are left out: they wander with the head's turn and
// sit on the hair line or off the face in profile.
//
// Template, in a crop of 512 x 512 (OpenCV's pixel centres; FFHQ's five-point template as
// facexlib aligns faces for GFPGAN, its two mouth corners averaged into one mouth centre):
//   right eye (picture-left) (192.98, 239.95)   left eye (318.90, 240.19)
//   nose tip                 (256.63, 314.02)   mouth    (257.18, 371.28)
// For a crop of side S the points are scaled by S / 512, then by 1 / (1 + margin) about the
// crop's centre ((S - 1) / 2, both axes): face_margin m gives the crop (1 + m) times
// the context (common/face_setting.h).
//
// Fit: the least-squares similarity (rotation, uniform scale, shift: 4 parameters) from the four
// keypoints to the four template points, in closed form (centred coordinates; no reflection). It
// is what cv::estimateAffinePartial2D finds on all four points (faces_test checks it) without
// OpenCV's calib3d in framemill; its robust methods (RANSAC, LMEDS) fit 2-point subsets and can
// drop a point, which four points cannot afford.
#pragma once

#include <array>
#include <optional>

#include "common/face_warp.h"
#include "common/face.h"

namespace framemill {

inline constexpr int kAlignPoints = 4;
// The template side the points below are given at.
inline constexpr float kTemplateSide = 512.0f;

// The keypoints used, in template order.
inline constexpr std::array<FaceKeypoint, kAlignPoints> kAlignKeypoints = {
    FaceKeypoint::kRightEye, FaceKeypoint::kLeftEye, FaceKeypoint::kNoseTip, FaceKeypoint::kMouth};

// The template points in a crop of `size` pixels with `margin` (see above).
std::array<FacePoint, kAlignPoints> TemplatePoints(int size, double margin);

// The least-squares similarity from `from` to `to` as a row-major 2x3 matrix; nullopt when the
// `from` points all coincide (no scale can be fitted).
std::optional<std::array<float, 6>> FitSimilarity(const std::array<FacePoint, kAlignPoints>& from,
                                                  const std::array<FacePoint, kAlignPoints>& to);

// The FaceWarp (present, `track`) of `face` for a crop of `size` with `margin`; nullopt when its
// keypoints coincide.
std::optional<FaceWarp> AlignFace(const Face& face, int size, double margin, uint32_t track);

// Where the crop's centre lies in the frame (the inverse map of the crop centre): for tests and
// log lines.
FacePoint CropCentreInFrame(const FaceWarp& warp, int size);

}  // namespace framemill
