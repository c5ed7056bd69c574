#include "supervisor/job/free_space.h"

#include <algorithm>

namespace framemill {

SpaceNeeded EstimateSpace(int64_t input_bytes, int64_t out_pixels, int64_t source_pixels,
                          int64_t segments_done, int64_t segments_total) {
  const double scale = static_cast<double>(std::max<int64_t>(1, out_pixels)) /
                       static_cast<double>(std::max<int64_t>(1, source_pixels));
  const double remaining = 1.0 - static_cast<double>(segments_done) /
                                     static_cast<double>(std::max<int64_t>(1, segments_total));
  SpaceNeeded need;
  need.segments = static_cast<int64_t>(static_cast<double>(input_bytes) * scale * 1.5 * remaining);
  need.output = static_cast<int64_t>(static_cast<double>(input_bytes) * scale * 1.5);
  return need;
}

Status CheckSpace(const SpaceNeeded& need, const SpaceFree& free) {
  auto fail = [](const std::string& dir, int64_t needed, int64_t have) {
    return Status(StatusCode::kNoSpace, dir + ": about " + std::to_string(needed >> 20) +
                                            " MiB needed, " + std::to_string(have >> 20) +
                                            " MiB free");
  };
  const bool same_fs = free.scratch == free.output;
  if (same_fs && free.output >= 0 && free.output < need.segments + need.output) {
    return fail(free.output_dir, need.segments + need.output, free.output);
  }
  if (!same_fs && free.scratch >= 0 && free.scratch < need.segments) {
    return fail(free.scratch_dir, need.segments, free.scratch);
  }
  if (!same_fs && free.output >= 0 && free.output < need.output) {
    return fail(free.output_dir, need.output, free.output);
  }
  return Status::Ok();
}

}  // namespace framemill
