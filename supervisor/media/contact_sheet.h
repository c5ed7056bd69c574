// The contact sheet of `framemill preview`: one row per sampled frame, the source's frame on the
// left and the model's output on the right, both scaled to one cell size, each source frame
// labelled with its time. Drawn and encoded as PNG with OpenCV, which is optional at build time
// (the GPU image has none): without it ContactSheetSupported() is false and EncodeContactSheet
// fails. Pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "supervisor/media/media_probe.h"

namespace framemill {

// The sheet's geometry. Every frame is shown at the source's display aspect ratio in a cell
// `cell_width` wide and `cell_height` high (even, at least 2); the sheet is two cells wide and
// one cell high per row.
struct SheetLayout {
  int cell_width = 0;
  int cell_height = 0;
  int rows = 0;
  int width() const { return 2 * cell_width; }
  int height() const { return rows * cell_height; }
};

// The widest cell framemill draws, in pixels; narrower sources keep their own width.
inline constexpr int kSheetCellWidth = 480;

// The layout for `rows` frames of `display_w` x `display_h` pixels of aspect `sar` (the upright
// frames the model gets): cells min(kSheetCellWidth, display_w rounded down to even) wide,
// their height from the display aspect ratio, rounded to an even number.
SheetLayout LayoutFor(int display_w, int display_h, const Rational& sar, int rows);

// Whether this build can draw contact sheets (it was built with OpenCV).
bool ContactSheetSupported();

// The PNG bytes of the sheet. `before` and `after`: `layout.rows` frames each, rgb24, cell-sized
// (cell_width x cell_height x 3 bytes); `labels`: one text per row, drawn on its source frame.
// Errors: kInternal when the sizes do not match, or (no OpenCV) a message that this build
// cannot draw contact sheets; kIo when OpenCV cannot encode the PNG.
Result<std::string> EncodeContactSheet(const SheetLayout& layout,
                                       const std::vector<std::string>& before,
                                       const std::vector<std::string>& after,
                                       const std::vector<std::string>& labels);

}  // namespace framemill
