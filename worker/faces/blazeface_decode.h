// Turning BlazeFace's raw outputs into faces: its anchors, the decoding of each anchor's box and
// keypoints, and the mapping from the model's square input back to the frame. No OpenCV: the
// arithmetic alone, so that it is tested on its own (tests/unit/face_decode_test.cpp).
//
// The facts, from MediaPipe's face detection graphs (SsdAnchorsCalculator and
// TensorsToDetectionsCalculator options) and the model files themselves:
// - The input is a square picture of S x S pixels (S = 128 for the short-range model, 256 for the
//   long-range one), RGB, values in [-1, 1], the frame scaled to fit with its aspect ratio kept
//   and the rest padded (letterbox).
// - Anchors sit at the centres of the cells of two feature maps: 16 x 16 cells with 2 anchors
//   each, then 8 x 8 cells with 6 anchors each (MediaPipe's four layers with strides S/16, S/8,
//   S/8, S/8: layers of one stride share a map and each brings 2 anchors per cell), 896 in all,
//   row by row, anchors of one cell together. The anchors have a fixed size of 1 (the whole
//   input), so the raw box sizes are pixel sizes.
// - Per anchor: one raw score (a logit; MediaPipe clips it to [-100, 100] before the sigmoid)
//   and 16 numbers: box centre offset x, y and size w, h, then the six keypoints' offsets x, y,
//   all in input pixels, relative to the anchor's centre.
#pragma once

#include <vector>

#include "common/face.h"

namespace framemill {

inline constexpr int kBlazeFaceValuesPerAnchor = 16;
inline constexpr int kBlazeFaceCellsFirstMap = 16;  // the first map is 16 x 16 cells, any S

struct Anchor {
  float x = 0;  // centre, as a fraction of the input's width and height (0..1)
  float y = 0;
};

// The anchors of a BlazeFace model whose input is `input_size` pixels square: 16 x 16 cells x 2,
// then 8 x 8 cells x 6, in output order. Empty when input_size is not a positive multiple of 16.
std::vector<Anchor> BlazeFaceAnchors(int input_size);

// Where a frame of `frame_width` x `frame_height` sits in the model's square input when scaled
// to fit (aspect kept) and centred: input = frame * scale + pad.
struct Letterbox {
  float scale = 1;
  float pad_x = 0;  // input pixels left of the frame
  float pad_y = 0;  // input pixels above it
  int width = 0;    // the scaled frame's size in the input, pixels (at least 1)
  int height = 0;
};
Letterbox FitInto(int frame_width, int frame_height, int input_size);

// The faces whose score (sigmoid of the clipped logit) is at least `min_score`, decoded from
// `scores` (one logit per anchor) and `boxes` (16 values per anchor) for `anchors`, in the
// model's input pixels (before suppression; in anchor order).
std::vector<Face> DecodeBlazeFace(const float* scores, const float* boxes,
                                  const std::vector<Anchor>& anchors, int input_size,
                                  float min_score);

// `face` moved from input pixels to frame pixels through `box`; its box then clipped to the
// frame (`frame_width` x `frame_height`): a face partly outside keeps the part inside.
// Keypoints are not clipped (an ear may lie outside).
Face ToFrame(const Face& face, const Letterbox& box, int frame_width, int frame_height);

}  // namespace framemill
