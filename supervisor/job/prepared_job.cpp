#include "supervisor/job/prepared_job.h"

#include <utility>

#include "common/checked_file.h"
#include "common/log.h"
#include "supervisor/engines/engine_choice.h"
#include "supervisor/job/supervisor_hooks.h"
#include "supervisor/job/job_limits.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/media/alpha_join.h"
#include "supervisor/media/output_muxer.h"
#include "supervisor/media/pixel_format.h"
#include "supervisor/media/source_geometry.h"
#include "supervisor/plan/part_plan.h"

namespace framemill {
namespace {

// The source's alpha: kept (the encoder's pix_fmt then holds it), or dropped with a warning,
// or the job refused, by its `alpha` key (alpha_join.h DecideAlpha).
Status ResolveAlpha(const JobSpec& job, const Config& config, PreparedJob* p) {
  if (!p->media.video.alpha) return Status::Ok();
  Result<std::vector<std::string>> supported =
      EncoderPixelFormats(config.ffmpeg, p->encoder.codec);
  if (!supported.ok()) return supported.status();
  Result<AlphaDecision> alpha = DecideAlpha(job.alpha, p->media.video, p->encoder.codec,
                                            p->encoder.pix_fmt, *supported);
  if (!alpha.ok()) return alpha.status().WithContext(job.input);
  p->keep_alpha = alpha->keep;
  if (alpha->keep) {
    p->encoder.pix_fmt = alpha->pix_fmt;
    spdlog::info("{}: the source's alpha is kept: joined at encode, written as {}", job.input,
                 alpha->pix_fmt);
  } else {
    spdlog::warn("{}: {}", job.input, alpha->warning);
    p->warnings.push_back(alpha->warning);
  }
  return Status::Ok();
}

// depth: the colour path, the output pixel format (pix_fmt "auto": the source's depth and chroma
// layout where the encoder has them) and the arena's output format.
Status ResolveDepth(const JobSpec& job, const Config& config, PreparedJob* p) {
  const VideoStreamInfo& v = p->media.video;
  p->color_path = ResolveColorPath(v);
  p->encoder = job.settings.encoder;
  if (p->color_path.assumed) {
    spdlog::info("{}: no colour-space tag; converting and tagging as {} ({} at {}x{})", job.input,
                 p->color_path.color_space, p->color_path.color_space == "bt709" ? "HD" : "SD",
                 v.width, v.height);
  }
  if (p->encoder.pix_fmt == "auto") {
    Result<std::vector<std::string>> supported =
        EncoderPixelFormats(config.ffmpeg, p->encoder.codec);
    if (!supported.ok()) return supported.status();
    PixelFormatChoice choice = ChoosePixelFormat(ParsePixelFormat(v.pix_fmt), *supported);
    p->encoder.pix_fmt = choice.pix_fmt;
    if (!choice.warning.empty()) {
      std::string w = p->encoder.codec + ": " + choice.warning;
      spdlog::warn("{}: {}", job.input, w);
      p->warnings.push_back(w);
    }
  }
  FM_RETURN_IF_ERROR(ResolveAlpha(job, config, p));
  for (const std::string& fitted : FitColorTags(p->encoder.codec, &p->color_path)) {
    std::string w = p->encoder.codec + ": " + fitted;
    spdlog::warn("{}: {}", job.input, w);
    p->warnings.push_back(w);
  }
  p->out_format =
      ParsePixelFormat(p->encoder.pix_fmt).bits > 8 ? FrameFormat::kRgb48 : FrameFormat::kRgb24;
  spdlog::info("{}: {} ({}-bit {}) -> {}", job.input, v.pix_fmt, v.bits_per_component,
               v.chroma_layout, p->encoder.pix_fmt);
  return Status::Ok();
}

// The compiled engine of a job with model_optimization compile or auto (engine_choice.h): one
// from the cache, taken now; or one to build beside the job (compile; auto on a job of at least
// kAutoEngineMinFrames, where the build pays); or none, and the log says why (auto: when an
// engine could apply at all).
void ChooseJobEngine(const JobSpec& job, JobFiles& files, const VideoStreamInfo& v,
                     PreparedJob* p) {
  const JobSettings& settings = job.settings;
  const bool compile = settings.model_optimization == ModelOptimization::kCompile;
  EngineChoice engine = ChooseEngine(settings, files.model.get(), job.model, v.display_width,
                                     v.display_height, EngineCacheDir());
  if (engine.package.valid()) {
    spdlog::info("{}", engine.note);
    // The engine takes the job's frames and batch alone: the workers probe it at those.
    files.engine = std::move(engine.package);
    p->probe_in = {static_cast<uint32_t>(engine.key.width),
                   static_cast<uint32_t>(engine.key.height),
                   static_cast<uint32_t>(engine.key.batch)};
    p->card_scale = engine.scale;
    return;
  }
  const std::string stand_in = compile ? InstalledSupervisorHooks().EngineStandIn() : "";
  if (!stand_in.empty()) {  // a test's (supervisor_hooks.h)
    EngineKey key;
    key.width = v.display_width;
    key.height = v.display_height;
    key.batch = settings.batch;
    p->engine_to_build = key;
    return;
  }
  if (engine.buildable && (compile || v.frame_count >= kAutoEngineMinFrames)) {
    spdlog::info(
        "{} (yet: one is built beside the job, and the workers move to it at a chunk "
        "boundary; `{}` builds it ahead)",
        engine.note, engine.build_command);
    p->engine_to_build = engine.key;
    return;
  }
  if (compile) {
    spdlog::info("{}{}", engine.note,
                 engine.buildable ? " (`" + engine.build_command + "` builds it)" : "");
  } else if (engine.key.width > 0) {
    spdlog::debug("{}", engine.note);
  }
}

// The card beside the model (model_fit.h), read beside its resolved path: an input or a setting
// the model cannot take fails here, before a worker starts or a frame is decoded. In face mode
// the model sees face_size x face_size crops, never a whole frame.
Status CheckModel(const JobSpec& job, const Config& config, JobFiles& files, PreparedJob* p) {
  const JobSettings& settings = job.settings;
  const VideoStreamInfo& v = p->media.video;
  const bool faces = settings.mode == JobMode::kFaces;
  const std::string model_path = FdRealPath(files.model.get());
  Result<std::optional<ModelCard>> card =
      LoadModelCard(model_path, config.allowed_model_roots, files.user);
  if (!card.ok()) return card.status();
  if (card->has_value()) FM_RETURN_IF_ERROR(CheckModelDigest(**card, files.model.get(), model_path));
  FM_RETURN_IF_ERROR(CheckModelFitsJob(*card, model_path, settings,
                                       faces ? settings.faces.size : v.display_width,
                                       faces ? settings.faces.size : v.display_height));
  p->probe_in = ProbeShapeFor(*card, settings);
  if (card->has_value()) p->card_scale = (*card)->scale;
  if (settings.model_optimization == ModelOptimization::kCompile ||
      settings.model_optimization == ModelOptimization::kAuto) {
    ChooseJobEngine(job, files, v, p);
  }
  return Status::Ok();
}

}  // namespace

Result<PreparedJob> PrepareJob(const JobSpec& job, const Config& config, JobFiles* files,
                               bool every_picture) {
  PreparedJob p;
  Result<SourceFile> source = OpenJobPaths(job, config, files);
  if (!source.ok()) return source.status();
  p.source = std::move(*source);
  Result<MediaInfo> media = ProbeMedia(config.ffprobe, p.source, /*frame_times=*/true,
                                       job.truncated_input, every_picture);
  if (!media.ok()) return media.status();
  p.media = std::move(*media);
  const VideoStreamInfo& v = p.media.video;
  FM_RETURN_IF_ERROR(CheckJobLimits(v, config).WithContext(job.input));
  if (v.undecodable_packets > 0) {
    std::string w = "the video's first " + std::to_string(v.undecodable_packets) +
                    " packets give no picture (the stream begins mid-stream, without the headers "
                    "or reference pictures they need); rendering the " +
                    std::to_string(v.frame_count) + " frames that decode, from " +
                    fmt::format("{:.3f}", v.start_time) + " s";
    spdlog::warn("{}: {}", job.input, w);
    p.warnings.push_back(w);
  }
  if (v.damaged_pictures > 0) {
    std::string w = fmt::format(
        "pictures inside the video that do not decode (damaged): {}; their packets are there, "
        "their pictures are not, and a player skips them too; rendering the {} frames that "
        "decode, each at its own time",
        v.damaged_pictures, v.frame_count);
    spdlog::warn("{}: {}", job.input, w);
    p.warnings.push_back(w);
  }
  if (v.lost_frames > 0) {
    std::string w = fmt::format(
        "the input is truncated: its header announces {} video frames, {} are there and decode "
        "({} lost, {:.2f} s); rendering those (truncated_input accept)",
        v.header_frames, v.frame_count, v.lost_frames, v.lost_frames / v.frame_rate.value());
    spdlog::warn("{}: {}", job.input, w);
    p.warnings.push_back(w);
  }
  FM_RETURN_IF_ERROR(CheckModel(job, config, *files, &p));
  if (job.settings.mode == JobMode::kFaces) {
    Result<FaceSetting> faces = OpenFaceFiles(job, config, files);
    if (!faces.ok()) return faces.status();
    p.faces = std::move(*faces);
  }
  FM_RETURN_IF_ERROR(ResolveDepth(job, config, &p));
  Result<std::vector<std::string>> filters = GeometryFilters(v, job.settings.deinterlace);
  if (!filters.ok()) return filters.status().WithContext(job.input);
  p.geometry_filters = std::move(*filters);
  if (!v.constant_rate) {
    spdlog::info("{}: variable frame rate; every frame keeps its source timestamp", job.input);
  }
  Result<JobPlan> plan = PlanJob(v.frame_count, v.frame_rate.value(), job.settings);
  if (!plan.ok()) return plan.status();
  p.plan = std::move(*plan);
  spdlog::info(
      "{}: video stream #{} {} {}x{} @ {} fps, {} frames, {} audio, {} subtitle; "
      "plan: {} chunks of {}, {} segments",
      job.input, v.index, v.codec, v.width, v.height, v.frame_rate.ToString(), v.frame_count,
      p.media.audio.size(), p.media.subtitles.size(), p.plan.chunks.size(), p.plan.chunk_frames,
      p.plan.segments.size());
  return p;
}

void FillPlanFigures(const JobSpec& job, const PreparedJob& prepared, JobReport* report) {
  report->output = job.output;
  report->frames = prepared.plan.frame_count;
  report->chunks = static_cast<int64_t>(prepared.plan.chunks.size());
  report->segments = static_cast<int64_t>(prepared.plan.segments.size());
  report->in_width = prepared.media.video.display_width;
  report->in_height = prepared.media.video.display_height;
  const VideoStreamInfo& v = prepared.media.video;
  report->skipped_packets = v.undecodable_packets + v.damaged_pictures;
  report->damaged_pictures = v.damaged_pictures;
  report->frames_announced = v.lost_frames > 0 ? v.header_frames : 0;
  report->frame_rate = v.frame_rate.value();
}

Result<RenderRange> ChooseRange(const JobSpec& job, const JobPlan& plan,
                                const JobOptions& options) {
  RenderRange r;
  r.seg_end = static_cast<int64_t>(plan.segments.size());
  r.end_chunk = static_cast<int64_t>(plan.chunks.size());
  if (options.part.whole()) return r;
  Result<PartsPlan> mine = MakePartsPlan(job, plan, options.part.count);
  if (!mine.ok()) return mine.status();
  Result<PartsPlan> parts = WritePartsPlanOnce(options.parts_dir, *mine);
  if (!parts.ok()) return parts.status();
  const PartRange& part = parts->parts[static_cast<size_t>(options.part.index - 1)];
  r.seg_begin = part.first_segment;
  r.seg_end = part.end_segment();
  if (r.seg_end < static_cast<int64_t>(plan.segments.size())) {
    r.end_chunk = plan.segments[r.seg_end].first_chunk;
  }
  spdlog::info("part {}: segments {}..{}, frames {}..{}", options.part.ToString(), r.seg_begin,
               r.seg_end - 1, part.first_frame, part.first_frame + part.frames - 1);
  return r;
}

}  // namespace framemill
