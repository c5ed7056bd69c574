#include "supervisor/report/job_result.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include <fmt/format.h>

#include "common/json_fields.h"

namespace framemill {
namespace {

// printf into a string (the summary's lines keep their printf formats, figure for figure).
__attribute__((format(printf, 2, 3))) void Appendf(std::string* out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    const size_t at = out->size();
    out->resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(&(*out)[at], static_cast<size_t>(n) + 1, format, again);
    out->resize(at + static_cast<size_t>(n));
  }
  va_end(again);
}

const char* ArenaText(const std::string& arena) {
  if (arena == "kept") return "kept from the previous job";
  if (arena == "early") return "made while the workers started";
  if (arena == "made") return "made after the workers' probe";
  return "none";
}

}  // namespace

std::string StageTimes::Summary() const {
  auto pct = [](double part, double whole) {
    return whole > 0 ? static_cast<int>(100.0 * part / whole + 0.5) : 0;
  };
  double capacity = pipeline_s * std::max(1, workers);
  double encode_capacity = pipeline_s * std::max(1, encoders);
  const std::string faces = faces_s > 0 ? fmt::format("faces {:.2f} s, ", faces_s) : "";
  return fmt::format(
      "prepare {:.2f} s, {}start {:.2f} s ({:.2f} s until a worker was ready), pipeline {:.2f} s "
      "[decode {:.2f} s busy ({}%){}, {:.2f} s waiting for a slot; workers {:.2f} s busy ({}% of "
      "{}); encode {:.2f} s busy ({}% of {}), {:.2f} s waiting for output; {:.2f} s after the "
      "workers' last chunk], mux {:.2f} s{}",
      prepare_s, faces, start_s, workers_wait_s, pipeline_s, decode_s, pct(decode_s, pipeline_s),
      decode_early_s > 0
          ? fmt::format(" and {:.2f} s before it, while the workers started", decode_early_s)
          : std::string(),
      decode_wait_s, workers_busy_s, pct(workers_busy_s, capacity), workers, encode_s,
      pct(encode_s, encode_capacity), encoders, encode_wait_s, tail_s, mux_s,
      stop_s > 0 ? fmt::format(", the workers' exit {:.2f} s", stop_s) : std::string());
}

nlohmann::json StageTimes::ToJson() const {
  return {{"prepare_s", prepare_s},
          {"faces_s", faces_s},
          {"start_s", start_s},
          {"workers_wait_s", workers_wait_s},
          {"pipeline_s", pipeline_s},
          {"decode_s", decode_s},
          {"decode_wait_s", decode_wait_s},
          {"decode_early_s", decode_early_s},
          {"workers_busy_s", workers_busy_s},
          {"workers", workers},
          {"encode_s", encode_s},
          {"encode_wait_s", encode_wait_s},
          {"encoders", encoders},
          {"tail_s", tail_s},
          {"mux_s", mux_s},
          {"stop_s", stop_s}};
}

nlohmann::json JobReport::FaultsJson() const {
  return {{"decoder_restarts", decoder_restarts},
          {"attempts", attempts},
          {"faults_retried", faults_retried}};
}

int ExitCodeOf(StatusCode code) {
  if (code == StatusCode::kOk) return kExitOk;
  return code == StatusCode::kCancelled ? kExitStopped : kExitFailed;
}

std::string IsoUtc(std::time_t t) {
  std::tm utc{};
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", ::gmtime_r(&t, &utc));
  return buf;
}

std::string IsoNow() { return IsoUtc(std::time(nullptr)); }

int TotalRecycles(const DispatchStats& d) {
  int recycles = 0;
  for (const auto& [reason, n] : d.recycles) recycles += n;
  return recycles;
}

std::string JobReport::SkippedPacketsReason() const {
  const bool leading = skipped_packets > damaged_pictures, damaged = damaged_pictures > 0;
  return std::string(leading ? kLeadingPacketsReason : "") + (leading && damaged ? "; " : "") +
         (damaged ? kDamagedPicturesReason : "");
}

nlohmann::json JobReport::SkippedPacketsJson() const {
  return {{"count", skipped_packets}, {"reason", SkippedPacketsReason()}};
}

nlohmann::json JobReport::TruncatedJson() const {
  if (frames_announced <= 0) return nullptr;
  const int64_t lost = std::max<int64_t>(frames_announced - frames, 0);
  return {{"frames_announced", frames_announced},
          {"frames_rendered", frames},
          {"frames_lost", lost},
          {"seconds_lost", frame_rate > 0 ? static_cast<double>(lost) / frame_rate : 0.0}};
}

nlohmann::json DoneResultJson(const std::string& id, const JobReport& r,
                              const std::string& started_at, const std::string& finished_at) {
  nlohmann::json result = {{"version", kResultVersion},
          {"id", id},
          {"status", "done"},
          {"output", r.output},
          {"frames", r.frames},
          {"seconds", r.seconds},
          {"started_at", started_at},
          {"finished_at", finished_at},
          {"workers_started", r.dispatch.workers_started},
          {"recycles", TotalRecycles(r.dispatch)},
          {"recycles_by_reason", r.dispatch.recycles},
          {"crashes", r.dispatch.crashes},
          {"kills", r.dispatch.kills},
          {"chunk_retries", r.dispatch.chunk_retries},
          {"segments", r.segments},
          {"segments_resumed", r.segments_resumed},
          {"frames_resumed", r.frames_resumed},
          {"stages", r.stages.ToJson()},
          {"worker_input_format", r.worker_input_format},
          {"output_pix_fmt", r.output_pix_fmt},
          {"warnings", r.warnings},
          {"worker_sandbox", r.worker_sandbox},
          {"worker_start", r.dispatch.StartupFigures()},
          {"workers_wait_s", r.stages.workers_wait_s},
          {"workers_warm", r.workers_warm},
          {"workers_spare", r.workers_spare},
          {"mux", r.mux},
          {"arena", r.arena},
          {"faults", r.FaultsJson()},
          {"model_fallbacks", ModelFallbacksJson(r.dispatch)},
          {"skipped_packets", r.SkippedPacketsJson()},
          {"truncated", r.TruncatedJson()}};
  if (r.faces.present) result["faces"] = r.faces.ToJson();
  return result;
}

nlohmann::json ModelFallbacksJson(const DispatchStats& d) {
  auto figure = [](uint32_t v) { return v == 0 ? nlohmann::json() : nlohmann::json(v); };
  return {{"events", d.fallback_events},
          {"batch", figure(d.fallback_per_call)},
          {"tile", figure(d.fallback_tile)}};
}

std::string ModelFallbacksLine(const DispatchStats& d) {
  if (d.fallback_events == 0) return "";
  std::string line = "the model ran out of memory " + std::to_string(d.fallback_events) +
                     (d.fallback_events == 1 ? " time" : " times");
  if (d.fallback_per_call != 0) {
    line += ": now " + std::to_string(d.fallback_per_call) + " per call";
  }
  if (d.fallback_tile != 0) line += ", tiles of " + std::to_string(d.fallback_tile) + " px";
  return line;
}

nlohmann::json FailedResultJson(const std::string& id, const std::string& reason_code,
                                const std::string& message) {
  return {{"version", kResultVersion},
          {"id", id},
          {"status", "failed"},
          {"reason", {{"code", reason_code}, {"message", message}}}};
}

nlohmann::json FailedResultJson(const std::string& id, const Status& s) {
  return FailedResultJson(id, StatusCodeName(s.code()), s.message());
}

std::string ResultReasonCode(const nlohmann::json& result) {
  if (!result.is_object()) return "";
  auto reason = result.find("reason");
  if (reason == result.end() || !reason->is_object()) return "";
  auto code = reason->find("code");
  return code != reason->end() && code->is_string() ? code->get<std::string>() : "";
}

std::string ResultOutput(const nlohmann::json& result) {
  if (!result.is_object()) return "";
  auto output = result.find("output");
  return output != result.end() && output->is_string() ? output->get<std::string>() : "";
}

std::string RunSummary(const JobReport& r) {
  const DispatchStats& d = r.dispatch;
  std::string out;
  // The rate is this run's: the frames it rendered over its time, not those an earlier run kept.
  const int64_t rendered = r.frames - r.frames_resumed;
  // A run that started no workers rendered nothing (a stitch joins what parts rendered): no rate,
  // and no worker lines of zeros.
  const bool no_workers = d.workers_started == 0;
  if (no_workers) {
    Appendf(&out, "framemill: wrote %s: %lld frames %dx%d, %lld segments joined in %.1f s\n",
            r.output.c_str(), static_cast<long long>(r.frames), r.out_width, r.out_height,
            static_cast<long long>(r.segments), r.seconds);
  } else {
    // On a resumed run the time and rate are this run's, and the line says so.
    std::string rate = fmt::format("{:.1f} fps", FramesPerSecond(rendered, r.seconds));
    if (r.frames_resumed > 0)
      rate += fmt::format(" over the {} frames this run rendered", rendered);
    Appendf(&out,
            "framemill: %s %s: %lld frames %dx%d (%s to the workers) -> %dx%d in %.1f s (%s), "
            "%lld chunks, %lld segments\n",
            r.mux.empty() ? "rendered a part into" : "wrote", r.output.c_str(),
            static_cast<long long>(r.frames), r.in_width, r.in_height,
            r.worker_input_format.c_str(), r.out_width, r.out_height, r.seconds, rate.c_str(),
            static_cast<long long>(r.chunks), static_cast<long long>(r.segments));
  }
  if (r.segments_resumed > 0) {
    Appendf(&out,
            "framemill: resumed: %lld of %lld segments (%lld frames) kept from an earlier run; "
            "this run rendered %lld frames\n",
            static_cast<long long>(r.segments_resumed), static_cast<long long>(r.segments),
            static_cast<long long>(r.frames_resumed), static_cast<long long>(rendered));
  }
  Appendf(&out, "framemill: output pixel format %s\n", r.output_pix_fmt.c_str());
  if (r.faces.present) Appendf(&out, "framemill: faces: %s\n", r.faces.Summary().c_str());
  if (r.skipped_packets > 0) {
    Appendf(&out, "framemill: skipped %lld packets: %s\n",
            static_cast<long long>(r.skipped_packets), r.SkippedPacketsReason().c_str());
  }
  if (nlohmann::json t = r.TruncatedJson(); t.is_object()) {
    Appendf(&out, "framemill: truncated input: %lld of %lld frames announced rendered, %.2f s lost\n",
            static_cast<long long>(r.frames), static_cast<long long>(r.frames_announced),
            t["seconds_lost"].get<double>());
  }
  for (const std::string& w : r.warnings) Appendf(&out, "framemill: warning: %s\n", w.c_str());
  if (no_workers) {
    Appendf(&out, "framemill: stages: %s\n", r.stages.Summary().c_str());
    return out;
  }
  std::string by_reason;
  for (const auto& [reason, n] : d.recycles) {
    by_reason += (by_reason.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  }
  Appendf(&out,
          "framemill: workers started %d, recycled %d%s%s%s, crashed %d, killed %d; "
          "chunks retried %d\n",
          d.workers_started, TotalRecycles(d), by_reason.empty() ? "" : " (", by_reason.c_str(),
          by_reason.empty() ? "" : ")", d.crashes, d.kills, d.chunk_retries);
  for (const auto& p : d.peaks) {
    Appendf(&out,
            "framemill:   worker %d gen %llu: %llu frames, peak rss %.0f MiB, peak gpu "
            "reserved %.0f MiB\n",
            p.worker, static_cast<unsigned long long>(p.generation),
            static_cast<unsigned long long>(p.frames), p.rss_bytes / 1048576.0,
            p.gpu_reserved_bytes / 1048576.0);
  }
  const std::string fallbacks = ModelFallbacksLine(d);
  if (!fallbacks.empty()) Appendf(&out, "framemill: %s\n", fallbacks.c_str());
  Appendf(&out, "framemill: worker sandbox: %s\n", r.worker_sandbox.c_str());
  Appendf(&out, "framemill: worker start: %s\n", d.StartupSummary().c_str());
  Appendf(&out, "framemill: workers %s, first ready after %.2f s; arena %s\n",
          r.workers_warm    ? "warm (kept loaded from the previous job)"
          : r.workers_spare ? "loaded by a spare (started before the job)"
                            : "started for this job",
          r.stages.workers_wait_s, ArenaText(r.arena));
  Appendf(&out, "framemill: stages: %s%s\n", r.stages.Summary().c_str(),
          r.mux == "live" ? " (joined beside the render)" : "");
  Appendf(&out, "framemill: memory timeline: %s\n", r.timeline.c_str());
  if (!r.report.empty()) Appendf(&out, "framemill: report: %s\n", r.report.c_str());
  Appendf(&out, "framemill: faults survived: decoder restarts %lld, job attempts %lld%s\n",
          static_cast<long long>(r.decoder_restarts), static_cast<long long>(r.attempts),
          r.faults_retried.empty() ? "" : " (ffmpeg crashed and was retried)");
  return out;
}

double FramesPerSecond(int64_t frames, double seconds) {
  return seconds > 0 ? static_cast<double>(frames) / seconds : 0.0;
}

double EtaSeconds(int64_t frames_done, int64_t frames_total, double fps) {
  return fps > 0 ? static_cast<double>(frames_total - frames_done) / fps : 0.0;
}

std::string DurationText(double seconds) {
  const long long s = seconds > 0 ? static_cast<long long>(seconds + 0.5) : 0;
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string RateText(int64_t frames_done, int64_t frames_total, double fps) {
  if (fps <= 0) return "no rate yet";
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.1f fps, ETA %s", fps,
                DurationText(EtaSeconds(frames_done, frames_total, fps)).c_str());
  return buf;
}

nlohmann::json ProgressJson(const std::string& id, const JobProgress& p, double elapsed_s) {
  nlohmann::json progress = {{"id", id},
                             {"frames_done", p.frames_done},
                             {"frames_total", p.frames_total},
                             {"segments_done", p.segments_done},
                             {"segments_total", p.segments_total},
                             {"frames_written", p.frames_written},
                             {"frames_resumed", p.frames_resumed},
                             {"elapsed_s", elapsed_s},
                             // This run's rate of frames written: the frames an earlier run kept
                             // are not in it, nor those the model has done ahead of the encoders.
                             {"fps", FramesPerSecond(p.frames_written - p.frames_resumed,
                                                     elapsed_s)},
                             {"workers", nlohmann::json::array()}};
  if (!p.waiting.empty()) {
    progress["waiting"] = p.waiting;
    progress["waiting_s"] = p.waiting_s;
  }
  for (const WorkerSnapshot& w : p.workers) {
    progress["workers"].push_back(
        {{"worker", w.worker},
         {"gen", w.generation},
         {"pid", w.pid},
         {"frames", w.frames},
         {"rss_mb", static_cast<double>(w.rss_bytes) / (1 << 20)},
         {"gpu_reserved_mb", static_cast<double>(w.gpu_reserved_bytes) / (1 << 20)}});
  }
  return progress;
}

namespace {

// "[0, 1]" of a JSON array of GPU indices (anything else in it skipped).
std::string GpuListText(const nlohmann::json& gpus) {
  std::string s;
  for (const nlohmann::json& g : gpus) {
    if (g.is_number_integer()) s += (s.empty() ? "" : ", ") + std::to_string(g.get<int>());
  }
  return "[" + s + "]";
}

}  // namespace

std::string ProgressLine(const nlohmann::json& progress) {
  if (!progress.is_object()) return "starting";
  if (auto w = progress.find("waiting_for_gpus"); w != progress.end() && w->is_array()) {
    return w->empty() ? "waiting for a free GPU" : "waiting for GPUs " + GpuListText(*w);
  }
  // Frames written: what is done. (A progress.json of an older framemill has frames_done only.)
  const int64_t modelled = ValueOr(progress, "frames_done", int64_t{0});
  const int64_t done = ValueOr(progress, "frames_written", modelled);
  const int64_t total = ValueOr(progress, "frames_total", int64_t{0});
  if (auto w = progress.find("waiting"); w != progress.end() && w->is_string()) {
    // A full disk (job/space_wait.h): the workers are stopped, the segments kept.
    return "waiting for disk space for " + DurationText(ValueOr(progress, "waiting_s", 0.0)) +
           " (" + w->get<std::string>() + "); " + std::to_string(done) + "/" +
           std::to_string(total) + " frames written and kept";
  }
  const double fps = ValueOr(progress, "fps", 0.0);
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%lld/%lld frames written (%.1f%%), ",
                static_cast<long long>(done), static_cast<long long>(total),
                total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0.0);
  std::string line = buf + RateText(done, total, fps);
  if (modelled > done) line += ", model at " + std::to_string(modelled);
  if (const int64_t kept = ValueOr(progress, "frames_resumed", int64_t{0}); kept > 0) {
    line += ", resumed (" + std::to_string(kept) + " frames kept from an earlier run)";
  }
  if (auto g = progress.find("service_gpus"); g != progress.end() && g->is_array() && !g->empty()) {
    line += ", on GPUs " + GpuListText(*g);
  }
  return line;
}

std::vector<std::string> ProgressWorkerLines(const nlohmann::json& progress) {
  std::vector<std::string> lines;
  if (!progress.is_object()) return lines;
  for (const nlohmann::json& w : ArrayOr(progress, "workers")) {
    std::string line;
    Appendf(&line, "worker %d gen %d pid %d: %lld frames, rss %.0f MiB, gpu reserved %.0f MiB",
            ValueOr(w, "worker", 0), ValueOr(w, "gen", 0), ValueOr(w, "pid", 0),
            static_cast<long long>(ValueOr(w, "frames", int64_t{0})), ValueOr(w, "rss_mb", 0.0),
            ValueOr(w, "gpu_reserved_mb", 0.0));
    lines.push_back(line);
  }
  return lines;
}

}  // namespace framemill
