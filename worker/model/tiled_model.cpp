#include "worker/model/tiled_model.h"

#include <algorithm>
#include <vector>

#include <torch/torch.h>

#include "common/log_lines.h"
#include "worker/model/tile_grid.h"

namespace framemill {
namespace {

// Where one tile of a batch lies: its frame, and its spans down and across.
struct TilePlace {
  int64_t frame;
  TileSpan y, x;
};

std::vector<TilePlace> PlaceTiles(int64_t frames, int64_t h, int64_t w, int64_t tile,
                                  int64_t overlap) {
  const std::vector<TileSpan> rows = TileAxis(h, tile, overlap);
  const std::vector<TileSpan> cols = TileAxis(w, tile, overlap);
  std::vector<TilePlace> places;
  places.reserve(static_cast<size_t>(frames) * rows.size() * cols.size());
  for (int64_t n = 0; n < frames; ++n) {
    for (const TileSpan& r : rows) {
      for (const TileSpan& c : cols) places.push_back({n, r, c});
    }
  }
  return places;
}

}  // namespace

TiledModel::TiledModel(std::unique_ptr<FrameModel> inner, const TileSetting& tile,
                       std::string label)
    : inner_(std::move(inner)), setting_(tile), label_(std::move(label)) {
  if (tile.mode == TileMode::kFixed) tile_ = tile.size;
  overlap_ = tile.overlap;
}

Result<torch::Tensor> TiledModel::Run(const torch::Tensor& batch) {
  while (true) {
    Result<torch::Tensor> y = RunOnce(batch);
    if (y.ok() || y.status().code() != StatusCode::kOutOfMemory) return y;
    FM_RETURN_IF_ERROR(FallBack(y.status(), batch.size(2), batch.size(3)));
  }
}

Result<torch::Tensor> TiledModel::RunOnce(const torch::Tensor& x) {
  try {
    return tile_ == 0 ? RunWhole(x) : RunTiles(x);
  } catch (const std::exception& e) {
    // The copies around the model call allocate too (a tile stack, the output frame).
    return ModelRaised(e);
  }
}

int64_t TiledModel::PerCall(int64_t natural, int64_t items) {
  last_call_ = std::min(per_call_ > 0 ? per_call_ : std::max<int64_t>(natural, 1), items);
  return last_call_;
}

Result<torch::Tensor> TiledModel::RunWhole(const torch::Tensor& x) {
  const int64_t n = x.size(0);
  const int64_t g = PerCall(n, n);
  if (g == n) return inner_->Run(x);
  std::vector<torch::Tensor> parts;
  for (int64_t off = 0; off < n; off += g) {
    Result<torch::Tensor> y = inner_->Run(x.narrow(0, off, std::min(g, n - off)));
    if (!y.ok()) return y.status();
    parts.push_back(std::move(*y));
  }
  return torch::cat(parts, 0);
}

Result<torch::Tensor> TiledModel::RunTiles(const torch::Tensor& x) {
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  const int64_t th = TileExtent(h, tile_), tw = TileExtent(w, tile_);
  const std::vector<TilePlace> places = PlaceTiles(n, h, w, tile_, overlap_);
  const int64_t items = static_cast<int64_t>(places.size());
  // As many tiles per call as hold the pixels of the batch's whole frames.
  const int64_t g = PerCall(n * h * w / (th * tw), items);
  torch::Tensor out;
  int64_t sy = 0, sx = 0;
  for (int64_t first = 0; first < items; first += g) {
    const int64_t count = std::min(g, items - first);
    std::vector<torch::Tensor> tiles;
    tiles.reserve(static_cast<size_t>(count));
    for (int64_t i = first; i < first + count; ++i) {
      const TilePlace& p = places[static_cast<size_t>(i)];
      tiles.push_back(x[p.frame].narrow(1, p.y.start, th).narrow(2, p.x.start, tw));
    }
    torch::Tensor in = torch::stack(tiles).contiguous(x.suggest_memory_format());
    Result<torch::Tensor> y = inner_->Run(in);
    if (!y.ok()) return y.status();
    const torch::Tensor& t = *y;
    if (t.dim() != 4 || t.size(0) != count || t.size(1) != 3 || t.size(2) % th != 0 ||
        t.size(3) % tw != 0 || t.size(2) == 0 || t.size(3) == 0) {
      return Status(StatusCode::kModelInvalid, "model output has shape " + c10::str(t.sizes()) +
                                                   " for " + std::to_string(count) + " tiles of " +
                                                   std::to_string(tw) + "x" + std::to_string(th) +
                                                   "; tiles need [" + std::to_string(count) +
                                                   ", 3, H, W] with a whole-number scale");
    }
    if (!out.defined()) {
      sy = t.size(2) / th;
      sx = t.size(3) / tw;
      out = torch::empty({n, 3, h * sy, w * sx}, t.options());
    } else if (t.size(2) != th * sy || t.size(3) != tw * sx) {
      return Status(StatusCode::kModelInvalid, "model output scale changed between tiles");
    }
    for (int64_t j = 0; j < count; ++j) {
      const TilePlace& p = places[static_cast<size_t>(first + j)];
      out[p.frame]
          .narrow(1, p.y.write_begin * sy, (p.y.write_end - p.y.write_begin) * sy)
          .narrow(2, p.x.write_begin * sx, (p.x.write_end - p.x.write_begin) * sx)
          .copy_(t[j].narrow(1, (p.y.write_begin - p.y.start) * sy,
                             (p.y.write_end - p.y.write_begin) * sy)
                     .narrow(2, (p.x.write_begin - p.x.start) * sx,
                             (p.x.write_end - p.x.write_begin) * sx));
    }
  }
  return out;
}

Status TiledModel::FallBack(const Status& oom, int64_t h, int64_t w) {
  ++fallbacks_.events;
  ReleaseCachedMemory(inner_->device());
  const std::string what = tile_ == 0 ? " frames" : " tiles of " + std::to_string(tile_) + " px";
  if (fixed_batch_) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory with " + std::to_string(last_call_) + what +
                      " per model call, and the model takes that batch only (a package made for "
                      "one shape; export it for a smaller batch): " +
                      oom.message());
  }
  if (last_call_ > 1) {
    per_call_ = last_call_ / 2;
    fallbacks_.per_call = per_call_;
    LogWarn(label_ + ": out of memory with " + std::to_string(last_call_) + what +
            " per model call; retrying with " + std::to_string(per_call_) + " (" + oom.message() +
            ")");
    return Status::Ok();
  }
  if (setting_.mode == TileMode::kOff) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory with one whole " + std::to_string(w) + "x" + std::to_string(h) +
                      " frame per model call, and tile is off (set tile to \"auto\" or a size "
                      "to go on in tiles): " +
                      oom.message());
  }
  const int64_t smallest = std::max<int64_t>(kMinTileSize, 2 * overlap_ + kMinTileInterior);
  int64_t next = tile_ == 0 ? (std::max(h, w) + 1) / 2 : tile_ / 2;
  next = std::max((next + 7) / 8 * 8, smallest);
  const int64_t now = tile_ == 0 ? std::max(h, w) : std::min(tile_, std::max(h, w));
  if (next >= now) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory with a single " + std::to_string(std::min(now, w)) + "x" +
                      std::to_string(std::min(now, h)) + " tile per model call, the smallest (" +
                      std::to_string(smallest) + " px with overlap " + std::to_string(overlap_) +
                      "): " + oom.message());
  }
  LogWarn(label_ + ": out of memory with one" +
          (tile_ == 0 ? " whole frame" : " tile of " + std::to_string(tile_) + " px") +
          " per model call; going on in tiles of " + std::to_string(next) + " px, overlap " +
          std::to_string(overlap_) + ", one per call (" + oom.message() + ")");
  tile_ = next;
  per_call_ = 1;
  fallbacks_.per_call = 1;
  fallbacks_.tile = tile_;
  return Status::Ok();
}

}  // namespace framemill
