#include "supervisor/cli/run_command.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/job_file.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/shared_memory.h"
#include "supervisor/cli/job_args.h"
#include "supervisor/cluster/parts_options.h"
#include "supervisor/job/early_spare.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/job/kept_work.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/job/stitch_job.h"
#include "supervisor/report/job_result.h"
#include "supervisor/spool/submitter.h"

namespace framemill {
namespace {

// Job keys that change how a job runs but not a frame it writes: left out of the kept work's
// identity, so that a run continued with more workers (say) keeps what it has. A change that
// moves segment boundaries (encoders, chunk_frames, segment_seconds) is caught by the plan.
constexpr const char* kFrameNeutralKeys[] = {
    "input",         "output",  "model",          "overwrite",   "priority",
    "workers",       "gpus",    "workers_per_gpu", "encoders",   "max_attempts",
    "hang_timeout_s", "recycle", "kill",           "live_mux",   "page_lock_arena"};

// The settings a job's frames are made with, as one canonical text: the config's defaults with
// the job's keys over them (nlohmann orders object keys), and this build's version.
std::string WorkSettings(const Config& config, const nlohmann::json& job) {
  nlohmann::json settings = config.defaults_object.is_object() ? config.defaults_object
                                                               : nlohmann::json::object();
  settings.merge_patch(job);  // nested keys (encoder, recycle) over the defaults' key by key
  for (const char* key : kFrameNeutralKeys) settings.erase(key);
  return std::string("framemill ") + FRAMEMILL_VERSION + " " + DumpJson(settings);
}

// The job document of `args`: the job file's, or one made of the arguments; then the
// KEY=VALUE settings and -y over it. Prints why and returns null when it cannot be had.
nlohmann::json JobDocument(const RunArgs& args) {
  nlohmann::json job;
  if (args.model.empty() && args.output.empty()) {
    Result<nlohmann::json> file =
        ReadJsonFile(args.job_or_input, kMaxJobFileBytes, StatusCode::kInvalidJob);
    if (!file.ok()) {
      std::fprintf(stderr, "framemill: job rejected: %s\n", file.status().ToString().c_str());
      return nullptr;
    }
    if (!file->is_object()) {
      std::fprintf(stderr, "framemill: job rejected: %s is not a JSON object\n",
                   args.job_or_input.c_str());
      return nullptr;
    }
    job = *file;
    Status s = ApplyJobSettings(args.settings, &job);
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.message().c_str());
      return nullptr;
    }
  } else {
    Result<nlohmann::json> made =
        JobFromArgs(args.job_or_input, args.model, args.output, args.settings);
    if (!made.ok()) {
      std::fprintf(stderr, "framemill: %s\n", made.status().message().c_str());
      return nullptr;
    }
    job = *made;
  }
  if (args.overwrite) job["overwrite"] = true;
  return job;
}

// The live progress line (on a terminal): frames, this run's rate, the ETA, what was kept.
std::function<void(const JobProgress&)> ProgressPrinter() {
  const uint64_t start_ms = MonotonicMs();
  auto last_ms = std::make_shared<uint64_t>(0);
  return [start_ms, last_ms](const JobProgress& p) {
    const uint64_t now = MonotonicMs();
    if (now - *last_ms < 250 || p.frames_total <= 0) return;
    *last_ms = now;
    // Frames written count; the model runs ahead of them by the arena's depth.
    const double frac =
        static_cast<double>(p.frames_written) / static_cast<double>(p.frames_total);
    const double fps = FramesPerSecond(p.frames_written - p.frames_resumed,
                                       static_cast<double>(now - start_ms) / 1000.0);
    std::string bar(static_cast<size_t>(frac * 30), '#');
    bar.resize(30, '.');
    std::fprintf(stderr, "\r[%s] %5.1f%% %lld/%lld frames written, %s%s ", bar.c_str(),
                 100.0 * frac, static_cast<long long>(p.frames_written),
                 static_cast<long long>(p.frames_total),
                 RateText(p.frames_written, p.frames_total, fps).c_str(),
                 p.frames_resumed > 0 ? ", resumed" : "");
  };
}

// Finished segments the kept work's done-log lists (0 when there is none): for messages only,
// the job itself opens and checks it by descriptor.
int64_t KeptSegments(const std::string& kept) {
  Result<nlohmann::json> state = ReadJsonFile(kept + "/state.json", 64 << 20, StatusCode::kIo);
  if (!state.ok() || !state->is_object()) return 0;
  const auto done = state->find("segments_done");
  return done != state->end() && done->is_array() ? static_cast<int64_t>(done->size()) : 0;
}

// Where a whole run's unfinished work is kept (for messages; the job opens it by descriptor).
std::string KeptWorkPath(const std::string& output) {
  const std::string abs = ResolvePath(output);
  const size_t slash = abs.rfind('/');
  return (slash == std::string::npos ? std::string(".") : abs.substr(0, slash)) + "/" +
         KeptWorkName(abs);
}

// The submitter a `--submitter UID:GID` names, with its groups from the user database (the
// given GID alone when the uid has none). Errors: kInvalidJob for anything else.
Result<std::optional<UserRights>> SubmitterRights(const std::string& text) {
  if (text.empty()) return std::optional<UserRights>();
  unsigned long uid = 0, gid = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lu:%lu%c", &uid, &gid, &tail) != 2 || uid > UINT32_MAX ||
      gid > UINT32_MAX || text.find_first_not_of("0123456789:") != std::string::npos) {
    return Status(StatusCode::kInvalidJob, "--submitter " + text + ": expected UID:GID");
  }
  return std::optional<UserRights>(
      LookupSubmitter(static_cast<uint32_t>(uid), static_cast<uint32_t>(gid)).rights());
}

constexpr const char* kSubmitterHelp =
    "Check every file the job names against this user's rights too, on the file as opened (the "
    "service passes a spool job's submitter to its Slurm parts and stitch)";

}  // namespace

void DefineRunCommands(CLI::App& app, RunArgs* run, std::string* stitch_job) {
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run one job in the foreground and print a summary. Stopped or killed, it keeps its "
      "finished segments beside the output (.OUTPUT.framemill/), and the same command continues "
      "from them");
  cmd->add_option("job", run->job_or_input,
                  "The job file (JSON: input, model, output, ...); or, with --model and "
                  "--output, the input video")
      ->required()
      ->type_name("JOB.json|INPUT");
  cmd->add_option("--model", run->model, "The model file (with an input video)")->type_name("FILE");
  cmd->add_option("--output", run->output, "Where to write the result (with an input video)")
      ->type_name("FILE");
  cmd->add_option("settings", run->settings,
                  "Job keys as key=value, over the job file's (value read as JSON when it "
                  "parses: workers=2 device=\"cuda:0\")")
      ->type_name("KEY=VALUE");
  cmd->add_flag("-y,--overwrite", run->overwrite, "Replace an existing output");
  cmd->add_flag("--fresh", run->fresh,
                "Start over: throw away the segments an earlier run of this output kept");
  cmd->add_flag("--json", run->json,
                "Print the result as one JSON document (as the service's result.json)");
  cmd->add_option("--part", run->part,
                  "Render only part I of N of the job's segments (for a cluster: each part on "
                  "its own machine, then `framemill stitch`); resumes from its own done-log")
      ->type_name("I/N");
  cmd->add_option("--submitter", run->submitter, kSubmitterHelp)->type_name("UID:GID");

  CLI::App* stitch = app.add_subcommand(
      "stitch", "Join the parts of a job run with --part into its output (mux, verify, rename)");
  stitch->add_option("job", *stitch_job, "The job file the parts ran")
      ->required()
      ->type_name("JOB.json");
  stitch->add_option("--submitter", run->submitter, kSubmitterHelp)->type_name("UID:GID");
}

int RunCommand(const RunArgs& args, const Config& config, const std::atomic<bool>& stop) {
  if (args.model.empty() != args.output.empty()) {
    std::fprintf(stderr, "framemill run: give both --model and --output with an input video, or "
                         "neither with a job file\n");
    return kExitUsage;
  }
  const bool whole = args.part.empty();
  if (!whole && !args.model.empty()) {
    std::fprintf(stderr, "framemill run: --part needs a job file (every part reads the same)\n");
    return kExitUsage;
  }
  const nlohmann::json doc = JobDocument(args);
  if (doc.is_null()) return kExitFailed;
  Result<JobSpec> job = ParseJob(doc, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: job rejected: %s\n", job.status().ToString().c_str());
    return kExitFailed;
  }
  if (int stale = RemoveStaleObjects(); stale > 0) {
    spdlog::info("removed {} shared-memory objects left by dead supervisors", stale);
  }
  JobOptions options;
  Result<std::optional<UserRights>> submitter = SubmitterRights(args.submitter);
  if (!submitter.ok()) {
    std::fprintf(stderr, "framemill: %s\n", submitter.status().message().c_str());
    return kExitUsage;
  }
  options.submitter = *submitter;
  std::string kept;  // a whole run's kept work, for the messages
  if (!whole) {
    Status s = SetPartOptions(args.job_or_input, args.part, &options);
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.message().c_str());
      return kExitUsage;
    }
  } else {
    options.keep_work = true;
    options.fresh_work = args.fresh;
    options.work_settings = WorkSettings(config, doc);
    kept = KeptWorkPath(job->output);
    if (const int64_t n = KeptSegments(kept); n > 0 && !args.fresh) {
      std::fprintf(stderr,
                   "framemill: continuing from the %lld finished segments an earlier run kept in "
                   "%s (--fresh starts over)\n",
                   static_cast<long long>(n), kept.c_str());
    }
  }
  const bool tty = ::isatty(2) != 0;
  if (tty) options.on_progress = ProgressPrinter();
  JobReportFile report_file;
  options.report_file = &report_file;
  const std::string started_at = IsoNow();
  // On a GPU, the job's first worker starts now, its device getting ready while the job is
  // prepared; stopped as the job ends if the job did not take it.
  std::optional<EarlySpare> spare(std::in_place, *job, config);
  options.spares = spare->spares();
  Result<JobReport> report = RunJob(*job, config, stop, options);
  options.spares.clear();
  spare.reset();
  if (tty) std::fprintf(stderr, "\n");
  if (!report.ok()) {
    std::fprintf(stderr, "framemill: job %s: %s\n",
                 report.status().code() == StatusCode::kCancelled ? "stopped" : "failed",
                 report.status().ToString().c_str());
    if (!report_file.path.empty()) {
      std::fprintf(stderr, "framemill: report: %s\n", report_file.path.c_str());
    }
    if (!report_file.warning.empty()) {
      std::fprintf(stderr, "framemill: warning: %s\n", report_file.warning.c_str());
    }
    // Kept: this run's own work, when it finished a segment (another run's is not named).
    const int64_t kept_segments =
        whole && report.status().message().find("another framemill run is writing") ==
                     std::string::npos
            ? KeptSegments(kept)
            : 0;
    if (kept_segments > 0) {
      std::fprintf(stderr,
                   "framemill: %lld finished segments are kept in %s: run the same command again "
                   "to continue from them (--fresh starts over)\n",
                   static_cast<long long>(kept_segments), kept.c_str());
    }
    if (args.json) {
      nlohmann::json result = FailedResultJson("", report.status());
      result.erase("id");
      result["started_at"] = started_at;
      result["finished_at"] = IsoNow();
      // As the service's result.json: whether finished segments were kept; and where.
      result["work_kept"] = kept_segments > 0;
      if (kept_segments > 0) result["work_dir"] = kept;
      std::printf("%s\n", DumpJson(result, 2).c_str());
    }
    return ExitCodeOf(report.status().code());
  }
  if (args.json) {
    nlohmann::json result = DoneResultJson("", *report, started_at, IsoNow());
    result.erase("id");
    std::printf("%s\n", DumpJson(result, 2).c_str());
  } else {
    std::fputs(RunSummary(*report).c_str(), stdout);
  }
  return kExitOk;
}

int StitchCommand(const std::string& job_path, const std::string& submitter, const Config& config,
                  const std::atomic<bool>& stop) {
  Result<std::optional<UserRights>> rights = SubmitterRights(submitter);
  if (!rights.ok()) {
    std::fprintf(stderr, "framemill: %s\n", rights.status().message().c_str());
    return kExitUsage;
  }
  Result<JobSpec> job = LoadJobFile(job_path, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: job rejected: %s\n", job.status().ToString().c_str());
    return kExitFailed;
  }
  const std::string parts_dir = PartsDirFor(job_path);
  Result<JobReport> report =
      StitchJob(*job, config, stop, parts_dir, rights->has_value() ? &**rights : nullptr);
  if (!report.ok()) {
    std::fprintf(stderr, "framemill: stitch failed: %s\n", report.status().ToString().c_str());
    return ExitCodeOf(report.status().code());
  }
  std::fputs(RunSummary(*report).c_str(), stdout);
  // The output is in place: the parts' segments and the plan have served.
  (void)RemoveTree(parts_dir);
  return kExitOk;
}

}  // namespace framemill
