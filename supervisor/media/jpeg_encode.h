// JPEG encoding of packed RGB24 pictures in memory, with libjpeg (libjpeg-turbo), for the job
// report's stills. Built only where libjpeg is found (FRAMEMILL_HAVE_JPEG). libjpeg is used
// directly rather than through OpenCV's imgcodecs, whose Debian build pulls in GDAL and about
// 120 more shared libraries: linked into the supervisor they made `framemill --version` take
// 121 ms instead of 5 and 54 MB of memory instead of 6 (with OpenCV's core and imgproc and
// libjpeg: about 15 ms and 13 MB). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace framemill {

// `rgb`: width*height*3 bytes, rows packed, R G B. `quality`: 1-100. Errors (kInternal): a size
// of 0, or libjpeg's own error message; libjpeg never exits the process here.
Result<std::vector<uint8_t>> EncodeJpeg(const uint8_t* rgb, int width, int height, int quality);

}  // namespace framemill
