#include "worker/model/tile_grid.h"

#include <cstddef>

namespace framemill {

std::vector<TileSpan> TileAxis(int64_t length, int64_t size, int64_t overlap) {
  if (length <= size) return {{0, 0, length}};
  const int64_t step = size - 2 * overlap;
  // Tiles 0..n-2 at i * step, the last at length - size: n - 1 = ceil((length - size) / step).
  const int64_t n = (length - size + step - 1) / step + 1;
  std::vector<TileSpan> spans(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    TileSpan& s = spans[static_cast<size_t>(i)];
    s.start = i + 1 < n ? i * step : length - size;
    s.write_begin = i == 0 ? 0 : spans[static_cast<size_t>(i - 1)].write_end;
    // A middle tile writes up to `overlap` before its end; the last one to the frame's edge. The
    // last starts at or before (n - 1) * step, so its own inner overlap lies before the previous
    // tile's write_end: (n - 2) * step + size - overlap >= length - size + overlap.
    s.write_end = i + 1 < n ? s.start + size - overlap : length;
  }
  return spans;
}

}  // namespace framemill
