#include "supervisor/media/png_encode.h"

#include <cstring>
#include <string>

#include <png.h>

namespace framemill {

Result<std::vector<uint8_t>> EncodePng(const uint8_t* rgb, int width, int height) {
  if (rgb == nullptr || width <= 0 || height <= 0) {
    return Status(StatusCode::kInternal, "PNG: an empty picture");
  }
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = PNG_FORMAT_RGB;
  // First the size it needs, then the bytes.
  png_alloc_size_t size = 0;
  if (!png_image_write_get_memory_size(image, size, /*convert_to_8_bit=*/0, rgb,
                                       /*row_stride=*/0, nullptr)) {
    std::string why = image.message;
    png_image_free(&image);
    return Status(StatusCode::kInternal, "PNG: " + why);
  }
  std::vector<uint8_t> png(size);
  if (!png_image_write_to_memory(&image, png.data(), &size, 0, rgb, 0, nullptr)) {
    std::string why = image.message;
    png_image_free(&image);
    return Status(StatusCode::kInternal, "PNG: " + why);
  }
  png.resize(size);
  return png;
}

}  // namespace framemill
