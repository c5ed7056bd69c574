// The contact sheet's layout (supervisor/media/contact_sheet.h): cells at the source's display aspect
// ratio, at most kSheetCellWidth wide, even heights, two cells a row.
#include <doctest/doctest.h>

#include "supervisor/media/contact_sheet.h"

using framemill::LayoutFor;
using framemill::Rational;
using framemill::SheetLayout;

TEST_CASE("contact sheet layout: display aspect, width cap, even sizes") {
  SheetLayout square = LayoutFor(640, 480, Rational{1, 1}, 3);
  CHECK(square.cell_width == 480);
  CHECK(square.cell_height == 360);
  CHECK(square.width() == 960);
  CHECK(square.height() == 1080);
  // PAL 4:3 stored as 720x576 with 16:15 pixels shows 768x576: 480x360.
  SheetLayout pal = LayoutFor(720, 576, Rational{16, 15}, 2);
  CHECK(pal.cell_width == 480);
  CHECK(pal.cell_height == 360);
  // Anamorphic 16:9 from 720x576 (64:45 pixels): 480x270.
  CHECK(LayoutFor(720, 576, Rational{64, 45}, 1).cell_height == 270);
  // Portrait (a phone video turned upright) keeps its height.
  CHECK(LayoutFor(1080, 1920, Rational{1, 1}, 1).cell_height == 854);
  // Narrower sources keep their own width, rounded down to even.
  SheetLayout small = LayoutFor(321, 240, Rational{1, 1}, 4);
  CHECK(small.cell_width == 320);
  CHECK(small.cell_height % 2 == 0);
  CHECK(small.height() == 4 * small.cell_height);
}
