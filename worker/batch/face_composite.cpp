#include "worker/batch/face_composite.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace framemill {
namespace {

namespace F = torch::nn::functional;

// One present face of a batch: its frame and its maps both ways (row-major 2x3, double so that
// the inverse and the bounding box lose nothing before the float32 grids).
struct Face {
  int64_t frame = 0;
  double to_crop[6] = {};
  double to_frame[6] = {};
};

// The inverse of the affine map `m`; false when it has none or a value is not finite.
bool InvertAffine(const double m[6], double inv[6]) {
  const double det = m[0] * m[4] - m[1] * m[3];
  if (!std::isfinite(det) || det == 0.0) return false;
  inv[0] = m[4] / det;
  inv[1] = -m[1] / det;
  inv[3] = -m[3] / det;
  inv[4] = m[0] / det;
  inv[2] = -(inv[0] * m[2] + inv[1] * m[5]);
  inv[5] = -(inv[3] * m[2] + inv[4] * m[5]);
  for (int i = 0; i < 6; ++i) {
    if (!std::isfinite(inv[i]) || !std::isfinite(m[i])) return false;
  }
  return true;
}

// grid_sample's grid [h, w, 2] for the pixels (x0 + col, y0 + row) of an h x w block, mapped by
// the affine `m` into a target of tw x th pixels, in the target's normalised coordinates
// (align_corners=false: pixel p of a side of n lies at (2p + 1) / n - 1). float32 on `options`'
// device.
torch::Tensor AffineGrid(const double m[6], int64_t x0, int64_t y0, int64_t w, int64_t h, double tw,
                         double th, const torch::TensorOptions& options) {
  const torch::Tensor xs = torch::arange(x0, x0 + w, options).view({1, w});
  const torch::Tensor ys = torch::arange(y0, y0 + h, options).view({h, 1});
  const torch::Tensor gx =
      xs * (2.0 * m[0] / tw) + ys * (2.0 * m[1] / tw) + ((2.0 * m[2] + 1.0) / tw - 1.0);
  const torch::Tensor gy =
      xs * (2.0 * m[3] / th) + ys * (2.0 * m[4] / th) + ((2.0 * m[5] + 1.0) / th - 1.0);
  return torch::stack({gx, gy}, -1);
}

torch::Tensor Sample(const torch::Tensor& input, const torch::Tensor& grid) {
  return F::grid_sample(input, grid,
                        F::GridSampleFuncOptions()
                            .mode(torch::kBilinear)
                            .padding_mode(torch::kBorder)
                            .align_corners(false));
}

// The feathered mask [1, 1, h, w] at the crop points of `grid` (normalised crop coordinates):
// a point's distance to the crop square's nearest edge, in crop pixels, is S/2 (1 - |g|) on each
// axis; the mask is that over `blend`, clamped to [0, 1] (with blend 0: 1 inside, 0 outside).
torch::Tensor FeatherMask(const torch::Tensor& grid, int64_t size, int64_t blend) {
  const torch::Tensor edge =
      (1.0 - grid.abs()).mul_(0.5 * static_cast<double>(size)).amin(-1);  // [h, w]
  torch::Tensor m = blend > 0 ? (edge / static_cast<double>(blend)).clamp_(0.0, 1.0)
                              : (edge > 0.0).to(torch::kFloat32);
  return m.unsqueeze(0).unsqueeze(0);
}

// The batch's present faces, in order: frame by frame, slot by slot.
Result<std::vector<Face>> CollectFaces(const FaceWarp* warps, int64_t frames, int64_t slots) {
  std::vector<Face> faces;
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t j = 0; j < slots; ++j) {
      FaceWarp w;
      std::memcpy(&w, warps + f * slots + j, sizeof(w));
      if (w.present == 0) continue;
      Face face;
      face.frame = f;
      for (int i = 0; i < 6; ++i) face.to_crop[i] = w.to_crop[i];
      if (!InvertAffine(face.to_crop, face.to_frame)) {
        return Status(StatusCode::kInternal, "face warp " + std::to_string(j) + " of frame " +
                                                 std::to_string(f) +
                                                 " of the batch is not an invertible finite map");
      }
      faces.push_back(face);
    }
  }
  return faces;
}

// The crops of `faces` [faces, 3, S, S], float32: one grid_sample per frame, its faces' grids
// stacked along the grid's height, so that no frame is copied per face.
torch::Tensor Crops(const torch::Tensor& frames, const std::vector<Face>& faces, int64_t size) {
  const double h = static_cast<double>(frames.size(2)), w = static_cast<double>(frames.size(3));
  const auto options = torch::TensorOptions().device(frames.device()).dtype(torch::kFloat32);
  std::vector<torch::Tensor> crops;
  for (size_t i = 0; i < faces.size();) {
    const int64_t f = faces[i].frame;
    std::vector<torch::Tensor> grids;
    for (; i < faces.size() && faces[i].frame == f; ++i) {
      grids.push_back(AffineGrid(faces[i].to_frame, 0, 0, size, size, w, h, options));
    }
    const int64_t k = static_cast<int64_t>(grids.size());
    torch::Tensor frame = frames.narrow(0, f, 1).to(torch::kFloat32);
    torch::Tensor sampled = Sample(frame, torch::cat(grids, 0).unsqueeze(0));  // [1,3,k*S,S]
    crops.push_back(sampled.reshape({3, k, size, size}).transpose(0, 1));
  }
  return torch::cat(crops, 0);
}

// Pastes the model's output `face` [3, S', S'] of `f` into `out` (in place), over the frame
// pixels of its crop square's bounding box.
void Paste(torch::Tensor& out, const Face& f, const torch::Tensor& face, int64_t size,
           int64_t blend) {
  const double h = static_cast<double>(out.size(2)), w = static_cast<double>(out.size(3));
  double lo_x = INFINITY, hi_x = -INFINITY, lo_y = INFINITY, hi_y = -INFINITY;
  const double edge[2] = {-0.5, static_cast<double>(size) - 0.5};
  for (double u : edge) {
    for (double v : edge) {
      const double x = f.to_frame[0] * u + f.to_frame[1] * v + f.to_frame[2];
      const double y = f.to_frame[3] * u + f.to_frame[4] * v + f.to_frame[5];
      lo_x = std::min(lo_x, x);
      hi_x = std::max(hi_x, x);
      lo_y = std::min(lo_y, y);
      hi_y = std::max(hi_y, y);
    }
  }
  // Clamped in double before the casts: a face far off the frame has no box.
  const int64_t x0 = static_cast<int64_t>(std::clamp(std::floor(lo_x), 0.0, w));
  const int64_t x1 = static_cast<int64_t>(std::clamp(std::ceil(hi_x), -1.0, w - 1.0));
  const int64_t y0 = static_cast<int64_t>(std::clamp(std::floor(lo_y), 0.0, h));
  const int64_t y1 = static_cast<int64_t>(std::clamp(std::ceil(hi_y), -1.0, h - 1.0));
  if (x0 > x1 || y0 > y1) return;
  const int64_t bw = x1 - x0 + 1, bh = y1 - y0 + 1;
  const auto options = torch::TensorOptions().device(out.device()).dtype(torch::kFloat32);
  const double s = static_cast<double>(size);
  const torch::Tensor grid = AffineGrid(f.to_crop, x0, y0, bw, bh, s, s, options);
  const torch::Tensor mask = FeatherMask(grid, size, blend);
  const torch::Tensor src = face.unsqueeze(0).to(torch::kFloat32).clamp(0.0, 1.0);
  const torch::Tensor pasted = Sample(src, grid.unsqueeze(0));  // [1, 3, bh, bw]
  torch::Tensor region = out.narrow(0, f.frame, 1).narrow(2, y0, bh).narrow(3, x0, bw);
  const torch::Tensor before = region.to(torch::kFloat32);
  const torch::Tensor blended = before * (1.0 - mask) + pasted * mask;
  // Where the mask is 0 the frame's own value, not frame * 1 + face * 0: a face pixel that is
  // not finite must not leak out through a zero weight.
  region.copy_(torch::where(mask > 0.0, blended, before));
}

torch::Tensor ModelCrops(const torch::Tensor& crops, const torch::Device& device,
                         torch::ScalarType dtype) {
  // Channels-last, as ToModelInput hands whole frames to a model (frame_convert.cpp).
  return crops.to(device, dtype).contiguous(torch::MemoryFormat::ChannelsLast);
}

}  // namespace

FaceCompositor::FaceCompositor(FrameModel& face_model, const FaceSettings& settings)
    : model_(face_model), settings_(settings) {}

Result<torch::Tensor> FaceCompositor::Run(const torch::Tensor& frames, const FaceWarp* warps,
                                          int64_t frames_with_faces) {
  const int64_t size = settings_.size, per_call = std::max<int64_t>(settings_.per_call, 1);
  try {
    Result<std::vector<Face>> collected =
        CollectFaces(warps, std::min(frames_with_faces, frames.size(0)), settings_.slots);
    if (!collected.ok()) return collected.status();
    const std::vector<Face>& faces = *collected;
    if (faces.empty()) return frames;
    const int64_t count = static_cast<int64_t>(faces.size());
    const torch::Tensor crops = Crops(frames, faces, size);
    // Each call's faces are pasted before the next call: a model may hand back a buffer it owns
    // and reuses. The crops were all taken before the first paste.
    torch::Tensor out = frames;  // a handle on the caller's tensor: written in place
    for (int64_t off = 0; off < count; off += per_call) {
      const int64_t n = std::min(per_call, count - off);
      torch::Tensor in = crops.narrow(0, off, n);
      if (n < per_call) {
        in = torch::cat({in, torch::zeros({per_call - n, 3, size, size}, in.options())});
      }
      Result<torch::Tensor> y = model_.Run(ModelCrops(in, model_.device(), model_.dtype()));
      ++stats_.model_calls;
      if (!y.ok()) return y.status();
      const torch::Tensor& t = *y;
      if (t.dim() != 4 || t.size(0) != per_call || t.size(1) != 3 || t.size(2) != t.size(3) ||
          t.size(2) < size || t.size(2) % size != 0) {
        return Status(StatusCode::kModelInvalid,
                      "face model output has shape " + c10::str(t.sizes()) + " for " +
                          std::to_string(per_call) + " crops of " + std::to_string(size) + "x" +
                          std::to_string(size) + "; expected [" + std::to_string(per_call) +
                          ", 3, S, S] with S a whole multiple of " + std::to_string(size));
      }
      for (int64_t j = 0; j < n; ++j) {
        Paste(out, faces[static_cast<size_t>(off + j)], t[j], size, settings_.blend);
      }
    }
    stats_.faces += count;
    return out;
  } catch (const std::exception& e) {
    const Status raised = ModelRaised(e);
    return Status(raised.code() == StatusCode::kOutOfMemory ? StatusCode::kOutOfMemory
                                                            : StatusCode::kModelInvalid,
                  "face compositing: " + FirstLine(e.what()));
  }
}

Status WarmUpFaceModel(FrameModel& face_model, const FaceSettings& settings) {
  try {
    torch::InferenceMode guard;
    const int64_t per_call = std::max<int64_t>(settings.per_call, 1);
    const torch::Tensor crops = torch::rand({per_call, 3, settings.size, settings.size});
    Result<torch::Tensor> y =
        face_model.Run(ModelCrops(crops, face_model.device(), face_model.dtype()));
    if (!y.ok()) return y.status();
    (void)y->sum().item<float>();  // wait for the device to finish
    return Status::Ok();
  } catch (const std::exception& e) {
    return ModelRaised(e);
  }
}

}  // namespace framemill
