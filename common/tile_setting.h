// The job key `tile`: whether a worker splits frames into overlapping tiles before the model
// (worker/model/tiled_model.h), and how. Parsed once where the JSON is read (config.cpp's
// ReadJobSettings), handed to each worker as one command-line word (--tile, Name()), and part of
// the warm-pool key (supervisor/job/warm_key.h).
//
//   absent, "off"                whole frames; an out-of-memory error halves the batch down to 1
//                                frame per model call, and fails the chunk beyond that
//   "auto"                       whole frames until the device runs out of memory: then the batch
//                                is halved down to 1, then frames are cut into tiles of half the
//                                frame's longer side (overlap kAutoTileOverlap), halved again on
//                                each further out-of-memory error down to kMinTileSize
//   {"size": N, "overlap": M}    tiles of N x N input pixels from the start, neighbours sharing
//                                M pixels on each inner side (M >= the network's receptive field
//                                makes the output equal the whole frame's); out of memory halves
//                                the tiles per call, then the tile size
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace framemill {

enum class TileMode {
  kOff,    // whole frames, never tiles
  kAuto,   // whole frames; tiles only after an out-of-memory error at one frame per call
  kFixed,  // tiles of `size` from the first frame
};

// Bounds of `size` and `overlap` (input pixels). A tile must keep at least kMinTileInterior pixels
// of its own between its two overlaps: size >= 2 * overlap + kMinTileInterior.
inline constexpr int kMinTileSize = 64;
inline constexpr int kMaxTileSize = 16384;
inline constexpr int kMaxTileOverlap = 1024;
inline constexpr int kMinTileInterior = 32;
// The overlap of "auto" tiles: more than the receptive field of every example model (the deepest,
// `restore`, 18 3x3 convolutions, sees 18 pixels on each side). A deeper network needs a fixed
// setting with its own overlap (its model card's receptive_field).
inline constexpr int kAutoTileOverlap = 32;

struct TileSetting {
  TileMode mode = TileMode::kOff;
  int size = 0;     // kFixed: tile side in input pixels
  int overlap = 0;  // kFixed: pixels shared with each neighbour, per side; kAuto: kAutoTileOverlap

  bool operator==(const TileSetting& o) const {
    return mode == o.mode && size == o.size && overlap == o.overlap;
  }
};

// "off", "auto", or "SIZE:OVERLAP" ("256:16"): the worker's --tile word and the warm-key part.
std::string Name(const TileSetting& tile);
// Parses Name()'s forms (bounds checked as for the job key); nullopt for anything else.
std::optional<TileSetting> ParseTileSetting(const std::string& word);

// Reads the JSON value of the key `tile` (a string or an object as above). The error message
// names `key_path` ("job.tile") and what was wrong; the Status code is `code`.
Result<TileSetting> ReadTileSetting(const nlohmann::json& value, const std::string& key_path,
                                    StatusCode code);

}  // namespace framemill
