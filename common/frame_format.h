// How frames lie in the arena's slots, and what a worker needs to turn them into RGB. Input:
// packed rgb24 (ffmpeg converted an 8-bit source: color_conversion accurate | fast), packed
// rgb48 (ffmpeg converted a source of more than 8 bits per component: 16 bits reach the model),
// or the source's own planar YUV 4:2:0, 8-bit (color_conversion device: the worker converts on
// its device, so half the bytes cross the pipe, the arena and the bus, and no CPU time goes to
// swscale). Output: rgb24, rgb48 (an output of more than 8 bits), or yuv420p (frame_convert.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace framemill {

enum class FrameFormat : uint32_t {
  kRgb24 = 0,    // w*h*3 bytes: R, G, B per pixel, rows packed
  kYuv420p = 1,  // planes Y (w*h), U, V (ceil(w/2)*ceil(h/2) each), rows packed
  kRgb48 = 2,    // w*h*6 bytes: R, G, B per pixel, each a little-endian uint16 (ffmpeg's
                 // rgb48le: full scale 65535), rows packed
};
inline constexpr uint32_t kLastFrameFormat = 2;

// ffmpeg's -pix_fmt name of the raw frames (rgb24, yuv420p, rgb48le).
inline const char* FrameFormatName(FrameFormat format) {
  switch (format) {
    case FrameFormat::kYuv420p:
      return "yuv420p";
    case FrameFormat::kRgb48:
      return "rgb48le";
    case FrameFormat::kRgb24:
      break;
  }
  return "rgb24";
}

// YCbCr -> RGB matrices, by the ffprobe colour-space names that select them.
enum class YuvMatrix : uint32_t { kBt601 = 0, kBt709 = 1, kBt2020 = 2, kSmpte240m = 3, kFcc = 4 };

inline size_t FrameBytes(FrameFormat format, uint32_t width, uint32_t height) {
  if (format == FrameFormat::kYuv420p) {
    size_t cw = (size_t{width} + 1) / 2, ch = (size_t{height} + 1) / 2;
    return size_t{width} * height + 2 * cw * ch;
  }
  if (format == FrameFormat::kRgb48) return size_t{width} * height * 6;
  return size_t{width} * height * 3;
}

// The matrix ffmpeg would convert a frame of this colour space with; unknown or unspecified
// spaces get BT.601, as swscale gives them.
inline YuvMatrix MatrixForColorSpace(const std::string& color_space) {
  if (color_space == "bt709") return YuvMatrix::kBt709;
  if (color_space == "bt2020nc" || color_space == "bt2020c") return YuvMatrix::kBt2020;
  if (color_space == "smpte240m") return YuvMatrix::kSmpte240m;
  if (color_space == "fcc") return YuvMatrix::kFcc;
  return YuvMatrix::kBt601;
}

// Luma weights of red and blue (green's is 1 - kr - kb).
inline void MatrixWeights(YuvMatrix m, double* kr, double* kb) {
  switch (m) {
    case YuvMatrix::kBt709:
      *kr = 0.2126, *kb = 0.0722;
      return;
    case YuvMatrix::kBt2020:
      *kr = 0.2627, *kb = 0.0593;
      return;
    case YuvMatrix::kSmpte240m:
      *kr = 0.212, *kb = 0.087;
      return;
    case YuvMatrix::kFcc:
      *kr = 0.30, *kb = 0.11;
      return;
    case YuvMatrix::kBt601:
      break;
  }
  *kr = 0.299, *kb = 0.114;
}

// Pixel formats whose frames reach the arena unchanged as kYuv420p: 8-bit 4:2:0 planar, limited
// (yuv420p) or full range (yuvj420p).
inline bool IsPlanarYuv420(const std::string& pix_fmt) {
  return pix_fmt == "yuv420p" || pix_fmt == "yuvj420p";
}

}  // namespace framemill
