#include "supervisor/workers/model_probe.h"

#include <algorithm>

namespace framemill {

bool PlainDevice(const std::string& d) {
  if (d == "cpu") return true;
  if (d.rfind("cuda:", 0) != 0 || d.size() == 5 || d.size() > 8) return false;
  return std::all_of(d.begin() + 5, d.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void ModelProbe::Take(const ProbeReport& first, uint32_t in_width, uint32_t in_height,
                      const DeviceSetting& configured) {
  width_ = first.width;
  height_ = first.height;
  in_width_ = in_width;
  in_height_ = in_height;
  device_ = PlainDevice(first.device) ? first.device : Name(configured);
}

std::string ModelProbe::Device(int gpu, const DeviceSetting& configured) const {
  if (gpu >= 0) return "cuda:" + std::to_string(gpu);
  return device_.empty() ? Name(configured) : device_;
}

}  // namespace framemill
