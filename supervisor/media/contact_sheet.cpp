#include "supervisor/media/contact_sheet.h"

#include <algorithm>
#include <cmath>

#ifdef FRAMEMILL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "supervisor/media/png_encode.h"
#endif

#include "supervisor/media/source_geometry.h"

namespace framemill {

SheetLayout LayoutFor(int display_w, int display_h, const Rational& sar, int rows) {
  SheetLayout l;
  l.rows = rows;
  l.cell_width = std::max(2, std::min(kSheetCellWidth, display_w / 2 * 2));
  double aspect = DisplayAspect(display_w, display_h, sar);
  if (!(aspect > 0)) aspect = display_h > 0 ? static_cast<double>(display_w) / display_h : 1.0;
  l.cell_height = std::max(2, static_cast<int>(std::lround(l.cell_width / aspect / 2)) * 2);
  return l;
}

#ifdef FRAMEMILL_HAVE_OPENCV

bool ContactSheetSupported() { return true; }

Result<std::string> EncodeContactSheet(const SheetLayout& layout,
                                       const std::vector<std::string>& before,
                                       const std::vector<std::string>& after,
                                       const std::vector<std::string>& labels) {
  const size_t cell_bytes = static_cast<size_t>(layout.cell_width) * layout.cell_height * 3;
  const size_t rows = static_cast<size_t>(layout.rows);
  if (before.size() != rows || after.size() != rows || labels.size() != rows) {
    return Status(StatusCode::kInternal, "contact sheet: wrong number of frames");
  }
  cv::Mat sheet(layout.height(), layout.width(), CV_8UC3, cv::Scalar(0, 0, 0));
  for (size_t r = 0; r < rows; ++r) {
    if (before[r].size() != cell_bytes || after[r].size() != cell_bytes) {
      return Status(StatusCode::kInternal, "contact sheet: a frame is not cell-sized");
    }
    const int y = static_cast<int>(r) * layout.cell_height;
    for (int side = 0; side < 2; ++side) {
      const std::string& rgb = side == 0 ? before[r] : after[r];
      // OpenCV only reads the frame here (copied into the sheet), so the const_cast is safe.
      cv::Mat cell(layout.cell_height, layout.cell_width, CV_8UC3, const_cast<char*>(rgb.data()));
      cell.copyTo(
          sheet(cv::Rect(side * layout.cell_width, y, layout.cell_width, layout.cell_height)));
    }
    const double scale = std::max(0.35, layout.cell_width / 960.0);
    const cv::Point at(6, y + static_cast<int>(22 * scale / 0.5));
    cv::putText(sheet, labels[r], at, cv::FONT_HERSHEY_SIMPLEX, scale, cv::Scalar(0, 0, 0), 3,
                cv::LINE_AA);
    cv::putText(sheet, labels[r], at, cv::FONT_HERSHEY_SIMPLEX, scale, cv::Scalar(255, 255, 255), 1,
                cv::LINE_AA);
  }
  // The sheet holds R G B in OpenCV's three channels (it draws no colour but black and white).
  Result<std::vector<uint8_t>> png = EncodePng(sheet.data, sheet.cols, sheet.rows);
  if (!png.ok()) return Status(StatusCode::kIo, "contact sheet: " + png.status().message());
  return std::string(png->begin(), png->end());
}

#else  // no OpenCV in this build

bool ContactSheetSupported() { return false; }

Result<std::string> EncodeContactSheet(const SheetLayout&, const std::vector<std::string>&,
                                       const std::vector<std::string>&,
                                       const std::vector<std::string>&) {
  return Status(StatusCode::kInternal,
                "this framemill was built without OpenCV and cannot draw contact sheets "
                "(install libopencv-dev and build again)");
}

#endif

}  // namespace framemill
