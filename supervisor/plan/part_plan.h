// Parts of one job: a job's segment plan (job_plan.h) cut into N parts of contiguous whole
// segments, so that N machines can each render one part (`framemill run job.json --part I/N`)
// and one more joins them (`framemill stitch job.json`). Pure functions and plain data; the plan
// file that carries them between machines is job/parts_dir.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/status.h"
#include "supervisor/plan/job_plan.h"

namespace framemill {

// Part `index` (1..count) of `count`. count == 0: the whole job, no parts.
struct PartRef {
  int index = 0;
  int count = 0;
  bool whole() const { return count == 0; }
  std::string ToString() const;  // "2/3"
};

// The most parts a job may be cut into (a Slurm array of this many tasks is already large).
inline constexpr int kMaxParts = kMaxSlurmParts;

// "I/N" with 1 <= I <= N <= kMaxParts. Errors: kInvalidJob naming what is wrong.
Result<PartRef> ParsePartRef(const std::string& text);

// One part: segments [first_segment, first_segment + segment_count), frames likewise.
struct PartRange {
  int64_t first_segment = 0;
  int64_t segment_count = 0;
  int64_t first_frame = 0;
  int64_t frames = 0;
  int64_t end_segment() const { return first_segment + segment_count; }
};

// The plan of a job cut into parts, as written once beside the job file and read by every part
// and by the stitch. `version` is kPartsPlanVersion.
struct PartsPlan {
  std::string input, model, output;  // as the job names them (for checks and people)
  int64_t frame_count = 0;
  int32_t chunk_frames = 0;
  int64_t chunks_per_segment = 0;
  int64_t segments = 0;
  std::vector<PartRange> parts;  // parts[i] is part i + 1

  nlohmann::json ToJson() const;
};

inline constexpr int kPartsPlanVersion = 1;

// Cuts `plan` into `count` parts of contiguous whole segments, as even as whole segments allow
// (part i gets segments floor(i*S/count) .. floor((i+1)*S/count)). Errors: kInvalidJob when
// count < 1 or the job has fewer segments than parts (lower segment_seconds to cut it finer).
Result<std::vector<PartRange>> SplitIntoParts(const JobPlan& plan, int count);

// Parses a plan file's JSON (kInvalidJob on a wrong version, a missing or mistyped key, or
// parts that do not tile the segments in order).
Result<PartsPlan> ParsePartsPlan(const nlohmann::json& j);

// Whether `file` (read from disk) is the plan `mine` (made here from this job and its probe):
// same input, model, frame count, chunk and segment sizes and parts. Ok, or kInvalidJob saying
// what differs.
Status SamePartsPlan(const PartsPlan& file, const PartsPlan& mine);

}  // namespace framemill
