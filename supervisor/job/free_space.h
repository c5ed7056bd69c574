// Whether a job's files fit on disk before it starts: the encoded segments (in the scratch
// directory) and the final file (in the output directory) coexist until the end. The estimate is
// a guess from the input's size; a wrong one fails later, cleanly, with kNoSpace. Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace framemill {

// Bytes a job still has to write.
struct SpaceNeeded {
  int64_t segments = 0;  // the segments not yet finished, in the scratch directory
  int64_t output = 0;    // the final file, in the output directory
};

// The input's size scaled by the output's pixel count over the source's, with a 50% margin;
// the segments only for the share of segments not yet finished (`segments_done` of
// `segments_total`). Pixel counts and totals below 1 count as 1.
SpaceNeeded EstimateSpace(int64_t input_bytes, int64_t out_pixels, int64_t source_pixels,
                          int64_t segments_done, int64_t segments_total);

// Free bytes where the job writes; -1 = unknown (not checked).
struct SpaceFree {
  std::string scratch_dir;
  int64_t scratch = -1;
  std::string output_dir;
  int64_t output = -1;
};

// kNoSpace naming the directory, the MiB needed and the MiB free when `need` does not fit in
// `free`. Two directories with the same free byte count are taken to be one file system, which
// then has to hold both.
Status CheckSpace(const SpaceNeeded& need, const SpaceFree& free);

}  // namespace framemill
