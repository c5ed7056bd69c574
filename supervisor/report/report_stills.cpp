#include "supervisor/report/report_stills.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/mutex.h"

#ifdef FRAMEMILL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "supervisor/media/jpeg_encode.h"
#endif

namespace framemill {
namespace {

uint8_t Clamp8(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

#ifdef FRAMEMILL_HAVE_OPENCV
std::string Base64(const std::vector<uint8_t>& bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  o.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    for (int s = 18; s >= 0; s -= 6) o += kAlphabet[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    if (i + 1 < bytes.size()) v |= uint32_t{bytes[i + 1]} << 8;
    o += kAlphabet[(v >> 18) & 63];
    o += kAlphabet[(v >> 12) & 63];
    o += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    o += '=';
  }
  return o;
}
#endif

}  // namespace

bool StillsAvailable() {
#ifdef FRAMEMILL_HAVE_OPENCV
  return true;
#else
  return false;
#endif
}

std::vector<uint8_t> FrameToRgb24(const uint8_t* frame, FrameFormat format, uint32_t width,
                                  uint32_t height, YuvMatrix matrix, bool full_range,
                                  uint32_t step) {
  step = std::max<uint32_t>(step, 1);
  const uint32_t ow = (width + step - 1) / step, oh = (height + step - 1) / step;
  std::vector<uint8_t> rgb(size_t{ow} * oh * 3);
  double kr = 0, kb = 0;
  MatrixWeights(matrix, &kr, &kb);
  const double kg = 1.0 - kr - kb;
  const size_t pixels = size_t{width} * height;
  const uint32_t cw = (width + 1) / 2, ch = (height + 1) / 2;
  for (uint32_t orow = 0; orow < oh; ++orow) {
    const uint32_t r = orow * step;
    for (uint32_t ocol = 0; ocol < ow; ++ocol) {
      const uint32_t c = ocol * step;
      const size_t i = size_t{r} * width + c;
      uint8_t* px = &rgb[(size_t{orow} * ow + ocol) * 3];
      if (format == FrameFormat::kRgb24) {
        std::memcpy(px, frame + 3 * i, 3);
      } else if (format == FrameFormat::kRgb48) {  // little-endian uint16, full scale 65535
        for (int k = 0; k < 3; ++k) {
          const uint8_t* v = frame + 6 * i + 2 * k;
          px[k] = Clamp8((v[0] | (v[1] << 8)) / 257.0);
        }
      } else {  // yuv420p: the worker's conversion (worker/batch/frame_convert.h), on the CPU
        const size_t ci = size_t{r / 2} * cw + c / 2;
        double y = frame[i], cb = frame[pixels + ci] - 128.0,
               cr = frame[pixels + size_t{cw} * ch + ci] - 128.0;
        if (full_range) {
          y /= 255.0, cb /= 255.0, cr /= 255.0;
        } else {
          y = (y - 16.0) / 219.0, cb /= 224.0, cr /= 224.0;
        }
        px[0] = Clamp8(255.0 * (y + cr * 2.0 * (1.0 - kr)));
        px[1] = Clamp8(255.0 *
                       (y - cb * (2.0 * kb * (1.0 - kb) / kg) - cr * (2.0 * kr * (1.0 - kr) / kg)));
        px[2] = Clamp8(255.0 * (y + cb * 2.0 * (1.0 - kb)));
      }
    }
  }
  return rgb;
}

std::string RgbToDataUri(const std::vector<uint8_t>& rgb, int width, int height) {
#ifdef FRAMEMILL_HAVE_OPENCV
  if (width <= 0 || height <= 0 || rgb.size() != size_t(width) * size_t(height) * 3) return "";
  cv::Mat picture(height, width, CV_8UC3, const_cast<uint8_t*>(rgb.data()));
  try {
    if (width > kStillWidth) {
      const int h =
          std::max(1, static_cast<int>(std::lround(double(height) * kStillWidth / width)));
      cv::Mat small;
      cv::resize(picture, small, cv::Size(kStillWidth, h), 0, 0, cv::INTER_AREA);
      picture = small;
    }
  } catch (const cv::Exception&) {
    return "";
  }
  Result<std::vector<uint8_t>> jpeg =
      EncodeJpeg(picture.ptr<uint8_t>(0), picture.cols, picture.rows, kStillQuality);
  if (!jpeg.ok()) return "";
  return "data:image/jpeg;base64," + Base64(*jpeg);
#else
  (void)rgb, (void)width, (void)height;
  return "";
#endif
}

StillCrop CenterCrop(int width, int height) {
  StillCrop c;
  c.width = std::clamp(width, 0, kCropSide);
  c.height = std::clamp(height, 0, kCropSide);
  c.x = (std::max(width, 0) - c.width) / 2;
  c.y = (std::max(height, 0) - c.height) / 2;
  return c;
}

std::vector<uint8_t> CropRgb(const std::vector<uint8_t>& rgb, int width, const StillCrop& crop) {
  std::vector<uint8_t> out(size_t(crop.width) * size_t(crop.height) * 3);
  for (int r = 0; r < crop.height; ++r) {
    std::memcpy(&out[size_t(r) * crop.width * 3], &rgb[(size_t(crop.y + r) * width + crop.x) * 3],
                size_t(crop.width) * 3);
  }
  return out;
}

std::vector<uint8_t> ScaledCrop(const std::vector<uint8_t>& rgb, int in_width, int in_height,
                                int out_width, int out_height, const StillCrop& crop) {
#ifdef FRAMEMILL_HAVE_OPENCV
  if (in_width <= 0 || in_height <= 0 || out_width <= 0 || out_height <= 0 || crop.width <= 0 ||
      crop.height <= 0 || rgb.size() != size_t(in_width) * size_t(in_height) * 3) {
    return {};
  }
  try {
    // Only the crop is computed: output pixel X is source coordinate (X + 0.5) / scale - 0.5, as
    // cv::resize maps it, sampled with the same bicubic kernel.
    const double sx = double(out_width) / in_width, sy = double(out_height) / in_height;
    const cv::Matx23d to_source(1 / sx, 0, (crop.x + 0.5) / sx - 0.5, 0, 1 / sy,
                                (crop.y + 0.5) / sy - 0.5);
    cv::Mat source(in_height, in_width, CV_8UC3, const_cast<uint8_t*>(rgb.data()));
    std::vector<uint8_t> out(size_t(crop.width) * size_t(crop.height) * 3);
    cv::Mat scaled(crop.height, crop.width, CV_8UC3, out.data());
    cv::warpAffine(source, scaled, to_source, scaled.size(), cv::INTER_CUBIC | cv::WARP_INVERSE_MAP,
                   cv::BORDER_REPLICATE);
    return out;
  } catch (const cv::Exception&) {
    return {};
  }
#else
  (void)rgb, (void)in_width, (void)in_height, (void)out_width, (void)out_height, (void)crop;
  return {};
#endif
}

StillCapture::StillCapture(std::vector<int64_t> chunk_first_frames, const ArenaGeometry& arena)
    : first_frames_(std::move(chunk_first_frames)), arena_(arena) {
  const int64_t n = static_cast<int64_t>(first_frames_.size());
  if (!StillsAvailable() || n == 0) return;
  const int64_t k = std::min<int64_t>(kStillCount, n);
  for (int64_t i = 0; i < k; ++i) {
    // Spread over the job: the first chunk, the last and evenly between.
    int64_t c = k == 1 ? 0 : i * (n - 1) / (k - 1);
    if (wanted_.empty() || wanted_.back() != c) wanted_.push_back(c);
  }
}

bool StillCapture::Wants(int64_t chunk) const {
  return std::binary_search(wanted_.begin(), wanted_.end(), chunk);
}

void StillCapture::Capture(int64_t chunk, const uint8_t* in, const uint8_t* out) {
  if (!Wants(chunk)) return;
  ReportStill s;
  s.frame = first_frames_[static_cast<size_t>(chunk)];
  {
    MutexLock lock(&mu_);
    ++captured_;
    for (const ReportStill& r : stills_) {
      if (r.frame == s.frame) return;  // sent twice (a retried chunk)
    }
  }
  // Converted and encoded here, once: only a few small JPEGs are kept, never whole frames. Only
  // every step-th pixel of a frame over twice the still's width is converted; OpenCV's area
  // resize then makes the still from what is left.
  auto still = [](const uint8_t* frame, FrameFormat format, uint32_t w, uint32_t h,
                  YuvMatrix matrix, bool full_range) {
    const uint32_t step = std::max<uint32_t>(1, w / (2 * kStillWidth));
    return RgbToDataUri(FrameToRgb24(frame, format, w, h, matrix, full_range, step),
                        static_cast<int>((w + step - 1) / step),
                        static_cast<int>((h + step - 1) / step));
  };
  if (arena_.out_width == arena_.in_width && arena_.out_height == arena_.in_height) {
    s.input_uri = still(in, arena_.in_format, arena_.in_width, arena_.in_height, arena_.in_matrix,
                        arena_.in_full_range != 0);
    s.output_uri = still(out, arena_.out_format, arena_.out_width, arena_.out_height,
                         arena_.in_matrix, arena_.in_full_range != 0);
  } else {
    CaptureCrop(in, out, &s);
  }
  if (s.input_uri.empty() || s.output_uri.empty()) return;
  MutexLock lock(&mu_);
  stills_.push_back(std::move(s));
}

void StillCapture::CaptureCrop(const uint8_t* in, const uint8_t* out, ReportStill* s) const {
  const int iw = static_cast<int>(arena_.in_width), ih = static_cast<int>(arena_.in_height);
  const int ow = static_cast<int>(arena_.out_width), oh = static_cast<int>(arena_.out_height);
  const StillCrop crop = CenterCrop(ow, oh);
  const std::vector<uint8_t> source =
      FrameToRgb24(in, arena_.in_format, arena_.in_width, arena_.in_height, arena_.in_matrix,
                   arena_.in_full_range != 0);
  // Only the crop's rows of the output are converted where its rows lie apart (packed RGB, as
  // a model's output is): an upscaler's output is the largest frame of the job.
  const bool packed = arena_.out_format != FrameFormat::kYuv420p;
  const int first = packed ? crop.y : 0, count = packed ? crop.height : oh;
  const std::vector<uint8_t> rows = FrameToRgb24(
      out + FrameBytes(arena_.out_format, arena_.out_width, 1) * size_t(first), arena_.out_format,
      arena_.out_width, static_cast<uint32_t>(count), arena_.in_matrix,
      arena_.in_full_range != 0);
  StillCrop in_rows = crop;
  in_rows.y = crop.y - first;
  s->input_uri = RgbToDataUri(ScaledCrop(source, iw, ih, ow, oh, crop), crop.width, crop.height);
  s->output_uri = RgbToDataUri(CropRgb(rows, ow, in_rows), crop.width, crop.height);
  char note[200];
  std::snprintf(note, sizeof(note),
                "1:1 crops (%dx%d at %d,%d) of the %dx%d output; the source scaled to %dx%d "
                "with bicubic interpolation, the same crop",
                crop.width, crop.height, crop.x, crop.y, ow, oh, ow, oh);
  s->crop_note = note;
}

std::vector<ReportStill> StillCapture::Encode(std::string* note) const {
  if (!StillsAvailable()) {
    *note = "this build has no OpenCV";
    return {};
  }
  MutexLock lock(&mu_);
  std::vector<ReportStill> out = stills_;
  std::sort(out.begin(), out.end(),
            [](const ReportStill& a, const ReportStill& b) { return a.frame < b.frame; });
  if (out.empty()) {
    *note = captured_ == 0 ? "no chosen chunk reached the encoder" : "OpenCV could not encode them";
  }
  return out;
}

}  // namespace framemill
