// Where the tiles of a frame lie, along one axis (the same rule serves rows and columns). Pure
// arithmetic, no LibTorch.
//
// A frame side of `length` pixels, tiles of `size` (at most `length`) sharing `overlap` pixels with
// each neighbour: tiles start every size - 2 * overlap pixels, and the last one is moved back so
// that it ends at the frame's edge (no padding beyond the frame: the model sees only real pixels,
// and its own zero padding at the frame's border, as for the whole frame). Each output pixel is
// written by exactly one tile, which has at least `overlap` pixels of real input on each side of
// it, or reaches the frame's edge on that side. So with overlap >= the network's receptive field
// (in input pixels, per side) every written pixel equals the whole frame's: tiles are cropped,
// not blended.
#pragma once

#include <cstdint>
#include <vector>

namespace framemill {

struct TileSpan {
  int64_t start = 0;        // first input pixel the tile covers; it covers `size` pixels
  int64_t write_begin = 0;  // the pixels [write_begin, write_end) come from this tile
  int64_t write_end = 0;
};

// The tiles along a side of `length` pixels. Needs length >= 1, size >= 1 and (when more than one
// tile is needed) size > 2 * overlap. A side no longer than `size` is one tile of the whole
// side (TileExtent). The spans' write ranges partition [0, length) in order.
std::vector<TileSpan> TileAxis(int64_t length, int64_t size, int64_t overlap);

// The pixels a tile covers along a side of `length`: min(size, length).
inline int64_t TileExtent(int64_t length, int64_t size) { return length < size ? length : size; }

}  // namespace framemill
