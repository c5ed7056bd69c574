// What a job is, once its files are open and its input probed, before any worker or frame: the
// source, the plan, the model's card, the colour path and the encoder's settings (the probe, the
// card and the config's limits all passed), and which of the plan's segments this run renders.
// Every stage reads it; none changes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/frame_format.h"
#include "common/job_file.h"
#include "common/status.h"
#include "supervisor/job/job_files.h"
#include "supervisor/job/job_options.h"
#include "supervisor/engines/engine_key.h"
#include "supervisor/job/model_fit.h"
#include "supervisor/media/color_path.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/plan/job_plan.h"
#include "supervisor/report/job_result.h"

namespace framemill {

struct PreparedJob {
  SourceFile source;  // the input as ffprobe and ffmpeg get it
  MediaInfo media;
  JobPlan plan;
  // The input the workers probe the model with (model_fit.h ProbeShapeFor): kProbeSize square,
  // face_size in face mode (a face model may take nothing else), a one-shape package's shape.
  ProbeShape probe_in;
  std::optional<int> card_scale;  // the model card's scale, when the model has a card
  // The compiled engine to build beside the job (engine_beside.h): none is cached for its key,
  // and the job's model_optimization asks for one (compile, or auto on a long job).
  std::optional<EngineKey> engine_to_build;
  // depth: the matrix, range and tags both ways; the encoder's settings with pix_fmt "auto"
  // resolved to the source's depth and chroma layout where the encoder has them; how output
  // frames lie in the arena.
  ColorPath color_path;
  EncoderSettings encoder;
  FrameFormat out_format = FrameFormat::kRgb24;
  // The source's alpha travels beside the model and is joined at encode (alpha_join.h); the
  // encoder's pix_fmt then holds it.
  bool keep_alpha = false;
  // The decoder's geometry filters (deinterlace, turn upright): the source's alone, so known
  // before any worker, and an early decoder can start with them.
  std::vector<std::string> geometry_filters;
  // The job's face settings, its detector and table as opened (job_files.h OpenFaceFiles).
  FaceSetting faces;
  std::vector<std::string> warnings;  // for the report (the encoder's depth, ...)

  // The first frame of the plan's chunk `k`; the plan's frame_count for k past the last chunk.
  int64_t ChunkStartFrame(int64_t k) const {
    return k < static_cast<int64_t>(plan.chunks.size()) ? plan.chunks[k].first_frame
                                                        : plan.frame_count;
  }
};

// Opens the job's paths (job_files.h), probes the input, checks it against the config's limits
// and the model's card, resolves the colour path and the encoder's pixel format, and plans the
// chunks and segments. With `every_picture`, the probe decodes the whole video to find damaged
// pictures inside it (ProbeMedia): for a run after a decoder showed fewer pictures than the
// packets promised (job_runner.h).
Result<PreparedJob> PrepareJob(const JobSpec& job, const Config& config, JobFiles* files,
                               bool every_picture = false);

// The report's figures of the job's plan: output, frames, chunks, segments, input size.
void FillPlanFigures(const JobSpec& job, const PreparedJob& prepared, JobReport* report);

// What one run renders: segments [seg_begin, seg_end) and chunks [first_chunk, end_chunk) of
// the plan: the whole plan, or a part of it, less what earlier runs finished.
struct RenderRange {
  int64_t seg_begin = 0, seg_end = 0;
  int64_t first_chunk = 0;  // after the segments found finished (set once the done-log is read)
  int64_t end_chunk = 0;
};

// The segments this run renders: all of them, or one part's (the parts plan written once beside
// the job: supervisor/plan/part_plan.h).
Result<RenderRange> ChooseRange(const JobSpec& job, const JobPlan& plan, const JobOptions& options);

}  // namespace framemill
