// A FrameModel that wraps another and keeps frames of any size running: it cuts frames into
// overlapping tiles when the job asks for them (common/tile_setting.h), and it answers the
// device running out of memory by doing less per model call instead of failing the chunk.
//
// Tiles (tile_grid.h): every tile of a batch has the same size (min(tile, side) on each side),
// so tiles from all frames of the batch run together, `per call` at a time. Each tile's output is
// cropped to the pixels it owns (overlap x scale on its inner sides) and written into the output
// frame; nothing is blended. With overlap >= the network's receptive field each output pixel
// equals the whole frame's to float rounding (a convolution library may pick another algorithm
// for another shape: measured on the CPU, at most 1e-5 apart in [0, 1], which after rounding to
// 8 bits is at most one level, on few pixels). The scale is the tile output's size over its
// input's, and must be a whole number on each side. A network that downsamples inside (stride 2,
// pooling) also needs tile starts that are multiples of its total stride: not handled; leave such
// models untiled.
//
// Out of memory (a Status kOutOfMemory from the inner model, frame_model.h ModelRaised): the
// cached memory is released, then, one step per error, sticking for the wrapper's life (no
// return to bigger calls, so no oscillation):
//   1. items per call (frames, or tiles once tiled) halved, down to 1;
//   2. at 1 per call, with tile "auto": tiles of half the frame's longer side (rounded up to 8),
//      overlap kAutoTileOverlap, one per call; with a tile size: the tile halved;
//   3. each further error halves the tile, down to max(kMinTileSize, 2 * overlap +
//      kMinTileInterior); an error at that size (or at 1 whole frame with tile "off") is returned.
// Each step is logged (warn) and counted (fallbacks()).
//
// Not thread-safe: one model per worker process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/tile_setting.h"
#include "worker/model/frame_model.h"

namespace framemill {

// What out-of-memory errors made a TiledModel do.
struct ModelFallbacks {
  int64_t per_call = 0;  // items per model call once halved (frames; tiles once tiled); 0 = never
  int64_t tile = 0;      // tile side in effect because of errors (input pixels); 0 = none
  int64_t events = 0;    // out-of-memory errors met, in all
};

class TiledModel : public FrameModel {
 public:
  // `label` names the model in log lines.
  TiledModel(std::unique_ptr<FrameModel> inner, const TileSetting& tile, std::string label);

  // The inner model's output for `batch`, computed whole or in tiles, in one call or several.
  // kOutOfMemory only once the last fallback failed too; the inner model's other errors as they
  // are; kModelInvalid for a tile output whose size is no whole multiple of the tile's.
  Result<torch::Tensor> Run(const torch::Tensor& batch) override;

  const torch::Device& device() const override { return inner_->device(); }
  torch::ScalarType dtype() const override { return inner_->dtype(); }

  const ModelFallbacks& fallbacks() const { return fallbacks_; }
  // A model that takes one batch size only (a package made for one shape): out of memory is not
  // met with fewer frames per call, which it would refuse, but reported as it is.
  void set_fixed_batch(bool fixed) { fixed_batch_ = fixed; }
  // The tile side in use now (input pixels); 0 = whole frames.
  int64_t tile() const { return tile_; }

 private:
  Result<torch::Tensor> RunOnce(const torch::Tensor& x);
  Result<torch::Tensor> RunWhole(const torch::Tensor& x);
  Result<torch::Tensor> RunTiles(const torch::Tensor& x);
  // Items per call: per_call_ once set, else `natural`; remembered as the size of the last call.
  int64_t PerCall(int64_t natural, int64_t items);
  // Takes the next step after an out-of-memory error `oom` on a batch of h x w frames, or
  // returns why there is none.
  Status FallBack(const Status& oom, int64_t h, int64_t w);

  std::unique_ptr<FrameModel> inner_;
  TileSetting setting_;
  std::string label_;
  int64_t tile_ = 0;       // tile side now; 0 = whole frames
  int64_t overlap_ = 0;    // the tiles' overlap
  int64_t per_call_ = 0;   // items per call once halved; 0 = as they come
  int64_t last_call_ = 0;  // items in the last model call
  ModelFallbacks fallbacks_;
  bool fixed_batch_ = false;
};

}  // namespace framemill
