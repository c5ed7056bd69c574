// framemill: the supervisor's command line.
//
//   framemill run JOB.json                     run one job in the foreground
//   framemill serve                            drain the spool (config spool_dir), for systemd
//   framemill submit INPUT --model M --output O [--priority P] [key=value ...]
//   framemill list | status [JOB] [--follow] | cancel JOB | retry JOB
//   framemill model export NAME PATH [--target FILE]  write an example TorchScript model
//   framemill model list                       names of the example models
//   framemill version
// Every command takes --config FILE.
//
// Exit codes: 0 success, 1 the job failed (the message names the reason), 2 usage error,
// 3 no such job, 130 stopped by SIGINT/SIGTERM.
#include <cstdint>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/config.h"
#include "common/file_util.h"
#include "common/job_spec.h"
#include "common/log.h"
#include "common/shared_memory.h"
#include "supervisor/job_runner.h"
#include "supervisor/service.h"
#include "supervisor/spool_commands.h"
#include "supervisor/subprocess.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitStopped = 130;

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a dead ffmpeg shows up as EPIPE on write, handled there
}

int Usage() {
  std::fprintf(stderr,
               "usage: framemill [--config FILE] run JOB.json\n"
               "       framemill [--config FILE] serve\n"
               "       framemill [--config FILE] submit INPUT --model M --output O [--priority P] "
               "[key=value ...]\n"
               "       framemill [--config FILE] list | status [JOB] [--follow] | cancel JOB | "
               "retry JOB\n"
               "       framemill model export NAME PATH [--target FILE]\n"
               "       framemill model list\n"
               "       framemill version\n");
  return kExitUsage;
}

// Model export needs LibTorch, which the supervisor does not link: the worker binary does it.
int ModelCommand(const std::vector<std::string>& args, const framemill::Config& config) {
  std::string worker = framemill::WorkerBinaryPath(config.worker_binary);
  std::vector<std::string> argv = {worker};
  if (args.size() == 3 && args[0] == "export") {
    argv.insert(argv.end(), {"--export-model", args[1], args[2]});
  } else if (args.size() == 5 && args[0] == "export" && args[3] == "--target") {
    argv.insert(argv.end(), {"--export-model", args[1], args[2], "--target", args[4]});
  } else if (args.size() == 1 && args[0] == "list") {
    argv.push_back("--list-models");
  } else {
    return Usage();
  }
  framemill::Result<framemill::CommandOutput> r = framemill::RunAndCapture(argv);
  if (!r.ok()) {
    std::fprintf(stderr, "framemill: %s\n", r.status().ToString().c_str());
    return kExitFailed;
  }
  std::fputs(r->out.c_str(), stdout);
  std::fputs(r->err.c_str(), stderr);
  return r->exit_code == 0 ? kExitOk : kExitFailed;
}

void PrintSummary(const framemill::JobReport& r) {
  const framemill::DispatchStats& d = r.dispatch;
  std::printf(
      "framemill: wrote %s: %lld frames %dx%d (%s to the workers) -> %dx%d in %.1f s (%.1f fps), "
      "%lld chunks, %lld segments\n",
      r.output.c_str(), static_cast<long long>(r.frames), r.in_width, r.in_height,
      r.worker_input_format.c_str(), r.out_width, r.out_height, r.seconds,
      r.seconds > 0 ? r.frames / r.seconds : 0.0, static_cast<long long>(r.chunks),
      static_cast<long long>(r.segments));
  std::printf("framemill: output pixel format %s\n", r.output_pix_fmt.c_str());
  for (const std::string& w : r.warnings) std::printf("framemill: warning: %s\n", w.c_str());
  int recycles = 0;
  std::string by_reason;
  for (const auto& [reason, n] : d.recycles) {
    recycles += n;
    by_reason += (by_reason.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  }
  std::printf(
      "framemill: workers started %d, recycled %d%s%s%s, crashed %d, killed %d; "
      "chunks retried %d\n",
      d.workers_started, recycles, by_reason.empty() ? "" : " (", by_reason.c_str(),
      by_reason.empty() ? "" : ")", d.crashes, d.kills, d.chunk_retries);
  for (const auto& p : d.peaks) {
    std::printf(
        "framemill:   worker %d gen %llu: %llu frames, peak rss %.0f MiB, peak gpu "
        "reserved %.0f MiB\n",
        p.worker, static_cast<unsigned long long>(p.generation),
        static_cast<unsigned long long>(p.frames), p.rss_bytes / 1048576.0,
        p.gpu_reserved_bytes / 1048576.0);
  }
  std::printf("framemill: worker sandbox: %s\n", r.worker_sandbox.c_str());
  std::printf("framemill: worker start: %s\n", d.StartupSummary().c_str());
  std::printf("framemill: stages: %s\n", r.stages.Summary().c_str());
  std::printf("framemill: memory timeline: %s\n", r.timeline.c_str());
  std::printf("framemill: faults survived: decoder restarts %lld, job attempts %lld%s\n",
              static_cast<long long>(r.decoder_restarts), static_cast<long long>(r.attempts),
              r.faults_retried.empty() ? "" : " (ffmpeg crashed and was retried)");
}

int RunCommand(const std::string& job_path, const framemill::Config& config) {
  framemill::Result<framemill::JobSpec> job = framemill::LoadJobFile(job_path, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: job rejected: %s\n", job.status().ToString().c_str());
    return kExitFailed;
  }
  int stale = framemill::RemoveStaleObjects();
  if (stale > 0) spdlog::info("removed {} shared-memory objects left by dead supervisors", stale);
  // On a terminal, a live progress line on stderr (logs go there too, each on its own line).
  framemill::JobOptions options;
  uint64_t start_ms = framemill::MonotonicMs(), last_ms = 0;
  if (::isatty(2)) {
    options.on_progress = [&](const framemill::JobProgress& p) {
      uint64_t now = framemill::MonotonicMs();
      if (now - last_ms < 250 || p.frames_total <= 0) return;
      last_ms = now;
      double frac = static_cast<double>(p.frames_done) / static_cast<double>(p.frames_total);
      double secs = static_cast<double>(now - start_ms) / 1000.0;
      double fps = secs > 0 ? static_cast<double>(p.frames_done) / secs : 0.0;
      std::string bar(static_cast<size_t>(frac * 30), '#');
      bar.resize(30, '.');
      std::fprintf(stderr, "\r[%s] %5.1f%% %lld/%lld frames %6.1f fps ETA %4.0f s ", bar.c_str(),
                   100.0 * frac, static_cast<long long>(p.frames_done),
                   static_cast<long long>(p.frames_total), fps,
                   fps > 0 ? static_cast<double>(p.frames_total - p.frames_done) / fps : 0.0);
    };
  }
  framemill::Result<framemill::JobReport> report = framemill::RunJob(*job, config, g_stop, options);
  if (::isatty(2)) std::fprintf(stderr, "\n");
  if (!report.ok()) {
    std::fprintf(stderr, "framemill: job failed: %s\n", report.status().ToString().c_str());
    return report.status().code() == framemill::StatusCode::kCancelled ? kExitStopped : kExitFailed;
  }
  PrintSummary(*report);
  return kExitOk;
}

}  // namespace

static int Main(std::vector<std::string> args) {
  std::string config_path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config") {
      if (i + 1 >= args.size()) return Usage();
      config_path = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  if (args.empty()) return Usage();
  if (args[0] == "version") {
    std::printf("framemill %s\n", FRAMEMILL_VERSION);
    return kExitOk;
  }
  framemill::Result<framemill::Config> config = framemill::LoadConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "framemill: %s\n", config.status().ToString().c_str());
    return kExitFailed;
  }
  framemill::InitLogging("framemill", config->log_level);
  // Unset in the config: the service confines its workers or fails the job; a job run by hand
  // gets what the machine allows, with a warning.
  if (!config->worker_sandbox) {
    config->worker_sandbox =
        args[0] == "serve" ? framemill::WorkerSandbox::kRequired : framemill::WorkerSandbox::kAuto;
  }
  InstallSignalHandlers();
  if (args[0] == "run" && args.size() == 2) return RunCommand(args[1], *config);
  if (args[0] == "serve" && args.size() == 1) {
    framemill::Status s = framemill::RunService(*config, g_stop);
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.ToString().c_str());
      return kExitFailed;
    }
    return kExitOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "submit" && !rest.empty()) return framemill::SubmitCommand(rest, *config);
  if (args[0] == "list" && rest.empty()) return framemill::ListCommand(*config);
  if (args[0] == "status") return framemill::StatusCommand(rest, *config);
  if (args[0] == "cancel" && rest.size() == 1) return framemill::CancelCommand(rest[0], *config);
  if (args[0] == "retry" && rest.size() == 1) return framemill::RetryCommand(rest[0], *config);
  if (args[0] == "model") {
    return ModelCommand(std::vector<std::string>(args.begin() + 1, args.end()), *config);
  }
  return Usage();
}

int main(int argc, char** argv) {
  // No exception ends a command with a core dump: nlohmann, std and Boost errors are reported.
  try {
    return Main(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "framemill: internal error: %s\n", e.what());
    return kExitFailed;
  }
}
