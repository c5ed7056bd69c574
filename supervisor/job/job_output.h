// A job's output: its segments joined beside the render (live_mux.h) when the job can follow it,
// else (or when that join failed) after it (output_muxer.h), with the source's other streams and
// metadata, verified and renamed into place. Owns the live mux.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/prepared_job.h"
#include "supervisor/media/carried_metadata.h"
#include "supervisor/media/live_mux.h"
#include "supervisor/media/output_muxer.h"
#include "supervisor/report/job_result.h"

namespace framemill {

// The segments to join, in order, and the frames of each.
struct SegmentList {
  std::vector<std::string> paths;
  std::vector<int64_t> frames;
};

// The mux request of a job's output, but for its segments: the source, the checked output
// directory and name, the output's geometry, pixel format and colour path; `scratch_fd` (and its
// name `scratch`) holds the segments and the mux's own files.
MuxRequest OutputRequest(const Config& config, const JobSpec& job, const PreparedJob& prepared,
                         const JobFiles& files, uint32_t output_reader_uid,
                         const OutputGeometry& geometry, const EncoderSettings& encoder,
                         int scratch_fd, const std::string& scratch);

class JobOutput {
 public:
  // `request`: everything but the segments; its source_carried is filled from `carried` when
  // that was read (else the mux probes the source again).
  JobOutput(MuxRequest request, std::optional<Result<CarriedMetadata>> carried);

  // Starts the live mux over `segments` when `asked` (the job's live_mux, for a whole job of a
  // constant-rate source whose metadata was read); the first `ready` are finished already.
  void StartLive(bool asked, const SegmentList& segments, int64_t ready);
  // Segment `index` is finished (any thread).
  void SegmentReady(int64_t index);
  // The live mux's output, or when there is none or it failed, MuxAndVerify's (report.mux says
  // which; a failed live mux is a warning).
  Status Finish(const SegmentList& segments, const std::string& output, JobReport* report);

 private:
  MuxRequest For(const SegmentList& segments) const;

  MuxRequest request_;
  // The live mux, when the job has one. Its ffmpeg reads the job's files: a JobOutput is
  // destroyed before them.
  std::unique_ptr<LiveMux> live_;
};

}  // namespace framemill
