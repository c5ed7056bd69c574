// PNG encoding of packed RGB24 pictures in memory, with libpng, for `framemill preview`'s contact
// sheet. Built only where OpenCV, libjpeg and libpng are all found (FRAMEMILL_HAVE_OPENCV, see
// CMakeLists.txt); libpng is used directly rather than through OpenCV's imgcodecs for the reason
// given in jpeg_encode.h. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace framemill {

// `rgb`: width*height*3 bytes, rows packed, R G B. Errors (kInternal): a size of 0, or libpng's
// own message.
Result<std::vector<uint8_t>> EncodePng(const uint8_t* rgb, int width, int height);

}  // namespace framemill
