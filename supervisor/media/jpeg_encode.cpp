#include "supervisor/media/jpeg_encode.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <jpeglib.h>

namespace framemill {
namespace {

// libjpeg reports errors by calling error_exit, which by default exits the process: this one
// jumps back to EncodeJpeg with the message instead (libjpeg's documented way; a C++ exception
// must not unwind through its C frames).
struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void OnError(j_common_ptr info) {
  ErrorManager* err = reinterpret_cast<ErrorManager*>(info->err);
  (*info->err->format_message)(info, err->message);
  std::longjmp(err->jump, 1);
}

}  // namespace

Result<std::vector<uint8_t>> EncodeJpeg(const uint8_t* rgb, int width, int height, int quality) {
  if (width <= 0 || height <= 0) return Status(StatusCode::kInternal, "jpeg: empty picture");
  jpeg_compress_struct c{};
  ErrorManager err{};
  c.err = jpeg_std_error(&err.base);
  err.base.error_exit = OnError;
  // libjpeg's output buffer (malloc'ed by it, freed here): on the heap, so that its value is
  // still right after a jump back (an automatic variable changed after setjmp would not be).
  struct Dest {
    unsigned char* data = nullptr;
    unsigned long size = 0;
    ~Dest() { std::free(data); }
  };
  auto dest = std::make_unique<Dest>();
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_compress(&c);
    return Status(StatusCode::kInternal, std::string("jpeg: ") + err.message);
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &dest->data, &dest->size);
  c.image_width = static_cast<JDIMENSION>(width);
  c.image_height = static_cast<JDIMENSION>(height);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb + size_t{c.next_scanline} * width * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return std::vector<uint8_t>(dest->data, dest->data + dest->size);
}

}  // namespace framemill
