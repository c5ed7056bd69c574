// framemill: the supervisor's command line (CLI11). The parser below (DefineCommands) is the one
// statement of the commands, their options and their help: `framemill --help`, `framemill
// COMMAND --help` and the bash completion (`framemill completion bash`) are made from it, and
// README.md shows them in use. Every command takes --config FILE (before or after its name).
// Exit codes: supervisor/report/job_result.h (kExitOk ... kExitStopped, kExitCodesHelp).
#include <cstdint>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/config.h"
#include "common/env_knobs.h"
#include "common/face_setting.h"
#include "common/file_util.h"
#include "common/job_file.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/model_card.h"
#include "common/shared_memory.h"
#include "supervisor/cli/command_typo.h"
#include "supervisor/cli/completion.h"
#include "supervisor/cli/engine_commands.h"
#include "supervisor/cli/framemill_main.h"
#include "supervisor/cli/run_command.h"
#include "supervisor/cli/spool_commands.h"
#include "supervisor/cluster/slurm_commands.h"
#include "supervisor/faces/faces_in_video.h"
#include "supervisor/faces/video_face_table.h"
#include "supervisor/job/job_runner.h"
#include "supervisor/job/preview.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/report/job_result.h"
#include "supervisor/service/service.h"

namespace {

using framemill::kExitFailed;
using framemill::kExitOk;
using framemill::kExitUsage;

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

// Model export needs LibTorch, which the supervisor does not link: the worker binary does it.
// `args`: the worker's own arguments (--export-model NAME PATH | --list-models).
int ModelCommand(const std::vector<std::string>& args, const framemill::Config& config) {
  std::vector<std::string> argv = {framemill::WorkerBinaryPath(config.worker_binary)};
  argv.insert(argv.end(), args.begin(), args.end());
  framemill::Result<framemill::CommandOutput> r = framemill::RunAndCapture(argv);
  if (!r.ok()) {
    std::fprintf(stderr, "framemill: %s\n", r.status().ToString().c_str());
    return kExitFailed;
  }
  std::fputs(r->out.c_str(), stdout);
  std::fputs(r->err.c_str(), stderr);
  return r->exit_code == 0 ? kExitOk : kExitFailed;
}

// `model list`: the worker's two lists, each under what it is.
int ModelListCommand(const framemill::Config& config) {
  std::printf("Example models (framemill model export NAME PATH):\n");
  std::fflush(stdout);
  if (ModelCommand({"--list-models"}, config) != kExitOk) return kExitFailed;
  std::printf("\nImportable trained models (framemill model import NAME PATH; run "
              "scripts/fetch-model-packages.sh first):\n");
  std::fflush(stdout);
  return ModelCommand({"--list-importable"}, config);
}

// `model info FILE`: the card beside the model, read here (common/, no LibTorch).
int ModelInfoCommand(const std::string& model_path) {
  framemill::Result<std::optional<framemill::ModelCard>> card =
      framemill::LoadModelCard(model_path);
  if (!card.ok()) {
    std::fprintf(stderr, "framemill: %s\n", card.status().ToString().c_str());
    return kExitFailed;
  }
  if (!card->has_value()) {
    std::printf("%s: no card (%s not found); nothing is known of this model\n",
                model_path.c_str(), framemill::ModelCardPath(model_path).c_str());
    return kExitOk;
  }
  std::printf("%s\n", framemill::ModelCardToJson(**card).dump(2).c_str());
  return kExitOk;
}

// The job file of `preview` (a rejection is printed), and shared memory left by dead
// supervisors removed before this one makes its own.
framemill::Result<framemill::JobSpec> LoadJobForCommand(const std::string& job_path,
                                                        const framemill::Config& config) {
  framemill::Result<framemill::JobSpec> job = framemill::LoadJobFile(job_path, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: job rejected: %s\n", job.status().ToString().c_str());
    return job;
  }
  int stale = framemill::RemoveStaleObjects();
  if (stale > 0) spdlog::info("removed {} shared-memory objects left by dead supervisors", stale);
  return job;
}

// A command's report (anything with ToJson() and ToText()) on stdout, as one JSON document or as
// text; or its failure on stderr, with the exit code of its status.
template <typename Report>
int PrintReport(const char* command, const framemill::Result<Report>& report, bool json) {
  if (!report.ok()) {
    std::fprintf(stderr, "framemill: %s failed: %s\n", command,
                 report.status().ToString().c_str());
    return framemill::ExitCodeOf(report.status().code());
  }
  if (json) {
    std::printf("%s\n", framemill::DumpJson(report->ToJson(), 2).c_str());
  } else {
    std::fputs(report->ToText().c_str(), stdout);
  }
  return kExitOk;
}

// `framemill preview`: the contact sheet and the estimate, as text or as one JSON document.
int PreviewCommand(const std::string& job_path, int frames, bool json,
                   const framemill::Config& config) {
  framemill::Result<framemill::JobSpec> job = LoadJobForCommand(job_path, config);
  if (!job.ok()) return kExitFailed;
  framemill::PreviewOptions options;
  options.frames = frames;
  framemill::Result<framemill::PreviewReport> report =
      framemill::RunPreview(*job, config, g_stop, options);
  return PrintReport("preview", report, json);
}

// `framemill faces`: the faces found in sampled frames, as text or as one JSON document.
// With --table: the face pass over the whole video, written as a face table (face_table.h).
int FacesCommand(const std::string& video, framemill::FacesInVideoOptions options,
                 const std::string& table_path, framemill::FacePassOptions pass, bool json,
                 const framemill::Config& config) {
  if (options.detector.empty()) options.detector = framemill::InstalledFaceDetector();
  if (options.detector.empty()) {
    std::fprintf(stderr, "framemill faces: no face detector is installed with framemill (%s in "
                         "<prefix>/share/framemill/face-detector: scripts/install.sh puts it "
                         "there); name one with --detector FILE\n",
                 framemill::kInstalledFaceDetector);
    return kExitUsage;
  }
  if (!table_path.empty()) {
    pass.face.detector = options.detector;
    pass.detection = options.detection;
    framemill::Result<framemill::FaceTable> table =
        framemill::MakeVideoFaceTable(config, video, pass, g_stop);
    framemill::Status written =
        table.ok() ? framemill::WriteFaceTable(table_path, *table) : table.status();
    if (!written.ok()) {
      std::fprintf(stderr, "framemill: faces failed: %s\n", written.ToString().c_str());
      return framemill::ExitCodeOf(written.code());
    }
    if (json) {
      nlohmann::json out = {{"table", table_path}, {"frames", table->frames.size()},
                            {"stats", framemill::ToJson(table->stats)}};
      std::printf("%s\n", framemill::DumpJson(out, 2).c_str());
    } else {
      std::printf("%s: %s\n", table_path.c_str(), framemill::DescribeFaceTable(*table).c_str());
    }
    return kExitOk;
  }
  framemill::Result<framemill::FacesReport> report =
      framemill::FindFacesInVideo(config, video, options, g_stop);
  return PrintReport("faces", report, json);
}

// What the command line asked for, filled by CLI11.
struct Request {
  std::string config_path;
  std::string job_path;          // preview, stitch, slurm submit
  framemill::RunArgs run;        // run
  framemill::SlurmArgs slurm;    // slurm submit, slurm status
  int frames = framemill::kDefaultPreviewFrames;  // preview
  framemill::SubmitArgs submit;  // submit
  std::string job_id;            // status, cancel, retry (an id or its unique start)
  std::string list_state;        // list --state
  bool follow = false;
  bool json = false;
  std::string model_name, model_path;  // model export, import, info
  std::string model_packages = ".deps/model-packages";  // model import
  framemill::CompileArgs compile;                       // model compile
  bool clear = false;                                   // model engines --clear
  std::string shell = "bash";                        // completion
  std::string video;                                 // faces
  framemill::FacesInVideoOptions faces;
  std::string face_table;                            // faces --table
  framemill::FacePassOptions face_pass;
};

// The parser, one function a group of commands; `rq` receives the values.

// `framemill run`, `stitch`, `slurm` and `preview`: one job, in the foreground or on a cluster.
void DefineJobCommands(CLI::App& app, Request& rq) {
  framemill::DefineRunCommands(app, &rq.run, &rq.job_path);
  framemill::DefineSlurmCommands(app, rq.job_path, &rq.slurm);

  CLI::App* preview = app.add_subcommand(
      "preview",
      "Run the job's model on a few frames sampled across the video; write a contact sheet to "
      "<output>.preview.png and print an estimate of the whole job");
  preview->add_option("job", rq.job_path, "The job file (JSON: input, model, output, ...)")
      ->required()
      ->type_name("JOB.json");
  preview
      ->add_option("--frames", rq.frames,
                   "Frames to sample (1.." + std::to_string(framemill::kMaxPreviewFrames) +
                       ", default " + std::to_string(framemill::kDefaultPreviewFrames) + ")")
      ->check(CLI::Range(1, framemill::kMaxPreviewFrames))
      ->type_name("K");
  preview->add_flag("--json", rq.json, "Print the result and the estimate as one JSON document");
}

// `framemill faces`: sampled frames, or with --table the face pass over the whole video.
void DefineFacesCommand(CLI::App& app, Request& rq) {
  CLI::App* faces = app.add_subcommand(
      "faces", "Detect faces (BlazeFace) in frames sampled across a video; print boxes, scores "
               "and keypoints, and optionally draw them");
  faces->add_option("video", rq.video, "The video")->required();
  faces
      ->add_option("--detector", rq.faces.detector,
                   "The BlazeFace ONNX file (default: the long-range model installed with "
                   "framemill; scripts/fetch-face-detector.sh puts both in .deps/face-detector/)")
      ->type_name("FILE");
  faces
      ->add_option("--frames", rq.faces.frames,
                   "Frames to sample (1.." + std::to_string(framemill::kMaxFaceFrames) +
                       ", default " + std::to_string(framemill::kDefaultFaceFrames) + ")")
      ->check(CLI::Range(1, framemill::kMaxFaceFrames))
      ->type_name("K");
  faces
      ->add_option("--min-score", rq.faces.detection.min_score,
                   "Smallest confidence that counts as a face (0..1, default 0.75)")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("S");
  faces->add_option("--draw", rq.faces.draw_dir,
                    "Write each sampled frame with its faces drawn as DIR/faces-NNN.png")
      ->type_name("DIR");
  faces->add_flag("--json", rq.json, "Print one JSON document");
  CLI::Option* table = faces->add_option("--table", rq.face_table,
                    "Detect, track and align the faces of every frame instead, and write them as "
                    "a face table (for the job key face_table)")
      ->type_name("OUT");
  faces->add_option("--face-size", rq.face_pass.face.size, "With --table: the crop side (job "
                    "key face_size, default 512)")
      ->check(CLI::Range(static_cast<int>(framemill::kMinFaceSize),
                         static_cast<int>(framemill::kMaxFaceSize)))
      ->type_name("S")
      ->needs(table);
  faces->add_option("--face-margin", rq.face_pass.face.margin, "With --table: job key face_margin")
      ->check(CLI::Range(framemill::kMinFaceMargin, framemill::kMaxFaceMargin))
      ->type_name("M")
      ->needs(table);
  faces->add_option("--face-min-size", rq.face_pass.face.min_size,
                    "With --table: job key face_min_size (pixels)")
      ->check(CLI::Range(1, framemill::kMaxFaceMinSize))
      ->type_name("PX")
      ->needs(table);
  faces->add_option("--max-faces", rq.face_pass.face.max_faces, "With --table: job key max_faces")
      ->check(CLI::Range(1, static_cast<int>(framemill::kMaxFacesPerFrame)))
      ->type_name("N")
      ->needs(table);
  faces->add_option("--threads", rq.face_pass.threads,
                    "With --table: detection threads (default: the machine's cores)")
      ->check(CLI::Range(1, 256))
      ->type_name("N")
      ->needs(table);
}

// `framemill serve` and the spool's client commands: submit, list, status, cancel, retry.
void DefineSpoolCommands(CLI::App& app, Request& rq) {
  app.add_subcommand("serve",
                     "Drain the spool directory (config spool_dir) until stopped; for systemd");

  CLI::App* submit = app.add_subcommand("submit", "Put a job into the spool for the service");
  submit->add_option("input", rq.submit.input, "The video to process")->required();
  submit->add_option("--model", rq.submit.model, "The model file")->required()->type_name("FILE");
  submit->add_option("--output", rq.submit.output, "Where to write the result")
      ->required()
      ->type_name("FILE");
  submit->add_option("--priority", rq.submit.priority, "Higher runs first (default 0)")
      ->type_name("N");
  submit->add_flag("--json", rq.json, "Print {\"id\", \"state\", \"job\"} as JSON");
  submit
      ->add_option("settings", rq.submit.settings,
                   "Other job keys as key=value (value read as JSON when it parses: "
                   "batch=4 device=\"cuda:0\")")
      ->type_name("KEY=VALUE");

  CLI::App* list = app.add_subcommand("list", "List every job of the spool: id, state, detail");
  list->add_flag("--json", rq.json, "Print a JSON array of jobs");
  list->add_option("--state", rq.list_state, "Only the jobs in this state")
      ->check(CLI::IsMember({"incoming", "active", "done", "failed", "cancelled"}))
      ->type_name("STATE");

  CLI::App* status =
      app.add_subcommand("status", "The spool's counts and active jobs, or one job's progress");
  status->add_option("job", rq.job_id, "A job id (as `submit` printed it), or its unique start");
  status->add_flag("--follow,-f", rq.follow, "Repeat every second until the job ends");
  status->add_flag("--json", rq.json, "Print JSON")->excludes("--follow");

  CLI::App* cancel = app.add_subcommand("cancel", "Ask the service to cancel a job");
  cancel->add_option("job", rq.job_id, "A job id, or its unique start")->required();
  CLI::App* retry = app.add_subcommand("retry", "Ask the service to run a failed job again");
  retry->add_option("job", rq.job_id, "A job id, or its unique start")->required();
}

// `framemill model` (export, list, import, info), `completion` and `version`.
void DefineModelAndToolCommands(CLI::App& app, Request& rq) {
  CLI::App* model =
      app.add_subcommand("model", "Models: export examples, import trained ones, describe them");
  model->require_subcommand(1);
  CLI::App* exp = model->add_subcommand("export", "Write an example TorchScript model");
  exp->add_option("name", rq.model_name, "The example's name (`framemill model list`)")->required();
  exp->add_option("path", rq.model_path, "Where to write it")->required();
  model->add_subcommand("list", "Names of the example models and of the importable trained ones");
  CLI::App* imp = model->add_subcommand(
      "import", "Turn a published trained model into a TorchScript model file and its card");
  imp->add_option("name", rq.model_name, "The importable name (`framemill model list`)")
      ->required();
  imp->add_option("path", rq.model_path, "Where to write it (and its card, PATH.json)")->required();
  imp->add_option("--packages", rq.model_packages,
                  "Where scripts/fetch-model-packages.sh put the packages")
      ->type_name("DIR")
      ->capture_default_str();
  CLI::App* compile = model->add_subcommand(
      "compile", "Build the compiled engine `model_optimization: compile` runs, ahead of time");
  compile->add_option("model", rq.compile.model, "The TorchScript model file")->required();
  compile->add_option("--shape", rq.compile.shape, "The frame as the model sees it")
      ->required()
      ->type_name("WxH");
  compile->add_option("--batch", rq.compile.batch, "The jobs' batch")->capture_default_str();
  compile->add_option("--precision", rq.compile.precision, "fp16 or fp32")->capture_default_str();
  compile->add_option("--device", rq.compile.device, "The GPU it is built on and for")
      ->capture_default_str();
  model->add_subcommand("engines", "List the compiled engines kept in the cache")
      ->add_flag("--clear", rq.clear, "Remove them all");
  CLI::App* info = model->add_subcommand("info", "Print what is known of a model file (its card)");
  info->add_option("path", rq.model_path, "The model file")->required();

  CLI::App* completion = app.add_subcommand("completion", "Print a shell completion script (bash)");
  completion->add_option("shell", rq.shell, "The shell")->check(CLI::IsMember({"bash"}));

  app.add_subcommand("version", "Print the version");
}

// Every command, option and argument, with its help: the options every command takes, then the
// groups in the order `framemill --help` lists them.
void DefineCommands(CLI::App& app, Request& rq) {
  app.set_help_all_flag("--help-all", "Show the help of every command");
  app.set_version_flag("--version", std::string("framemill ") + FRAMEMILL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--config", rq.config_path,
                 "Config file (default: $FRAMEMILL_CONFIG, else /etc/framemill/framemill.json "
                 "if it exists, else built-in defaults)")
      ->type_name("FILE");
  app.footer(std::string(framemill::kExitCodesHelp) +
             "\nRun `framemill COMMAND --help` for a command's options.");
  DefineJobCommands(app, rq);
  DefineFacesCommand(app, rq);
  DefineSpoolCommands(app, rq);
  DefineModelAndToolCommands(app, rq);
}

int Main(int argc, char** argv) {
  CLI::App app("framemill: runs a model over every frame of long videos, unattended", "framemill");
  Request rq;
  DefineCommands(app, rq);
  const std::string typo = framemill::UnknownCommandMessage(
      app, std::vector<std::string>(argv + 1, argv + argc));
  if (!typo.empty()) {
    std::fprintf(stderr, "framemill: %s\nRun `framemill --help` for the commands.\n",
                 typo.c_str());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // the help, on stdout, exit 0
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "framemill: %s\nRun `framemill --help` (or `framemill COMMAND --help`).\n",
                 e.what());
    return kExitUsage;
  }
  const CLI::App* cmd = app.get_subcommands().at(0);
  const std::string name = cmd->get_name();
  if (name == "version") {
    std::printf("framemill %s\n", FRAMEMILL_VERSION);
    return kExitOk;
  }
  if (name == "completion") {
    std::fputs(framemill::BashCompletion(app).c_str(), stdout);
    return kExitOk;
  }
  framemill::Result<framemill::Config> config = framemill::LoadConfig(rq.config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "framemill: %s\n", config.status().ToString().c_str());
    return kExitFailed;
  }
  framemill::InitLogging("framemill", config->log_level);
  framemill::LogSetKnobs(framemill::KnobReader::kSupervisor);
  framemill::SetChildTimeout(config->child_timeout_s);
  // Unset: the service confines its workers or fails the job; by hand, what the machine allows.
  if (!config->worker_sandbox) {
    config->worker_sandbox =
        name == "serve" ? framemill::WorkerSandbox::kRequired : framemill::WorkerSandbox::kAuto;
  }
  framemill::ConfineMediaPrograms(*config);
  InstallSignalHandlers();
  if (name == "run") return framemill::RunCommand(rq.run, *config, g_stop);
  if (name == "stitch") {
    return framemill::StitchCommand(rq.job_path, rq.run.submitter, *config, g_stop);
  }
  if (name == "slurm") return framemill::SlurmCommand(*cmd, rq.config_path, rq.job_path, rq.slurm, *config);
  if (name == "preview") return PreviewCommand(rq.job_path, rq.frames, rq.json, *config);
  if (name == "faces") {
    return FacesCommand(rq.video, rq.faces, rq.face_table, rq.face_pass, rq.json, *config);
  }
  if (name == "serve") {
    // The slurm backend's tasks run `framemill` with the submitting environment: the same config.
    if (!rq.config_path.empty()) {
      ::setenv("FRAMEMILL_CONFIG", framemill::ResolvePath(rq.config_path).c_str(), 1);
    }
    framemill::Status s = framemill::RunService(*config, g_stop);
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.ToString().c_str());
      return kExitFailed;
    }
    return kExitOk;
  }
  if (name == "submit") return framemill::SubmitCommand(rq.submit, *config, rq.json);
  if (name == "list") return framemill::ListCommand(*config, rq.json, rq.list_state);
  if (name == "status") return framemill::StatusCommand(rq.job_id, rq.follow, rq.json, *config);
  if (name == "cancel") return framemill::CancelCommand(rq.job_id, *config);
  if (name == "retry") return framemill::RetryCommand(rq.job_id, *config);
  if (name == "model") {
    if (cmd->got_subcommand("list")) return ModelListCommand(*config);
    if (cmd->got_subcommand("info")) return ModelInfoCommand(rq.model_path);
    if (cmd->got_subcommand("compile")) return framemill::ModelCompileCommand(rq.compile, *config);
    if (cmd->got_subcommand("engines")) return framemill::ModelEnginesCommand(rq.clear, *config);
    if (cmd->got_subcommand("import")) {
      return ModelCommand(
          {"--import-model", rq.model_name, rq.model_path, "--packages", rq.model_packages},
          *config);
    }
    return ModelCommand({"--export-model", rq.model_name, rq.model_path}, *config);
  }
  std::fprintf(stderr, "framemill: unknown command %s\n", name.c_str());
  return kExitUsage;
}

}  // namespace

int framemill::FramemillMain(int argc, char** argv, SupervisorHooks& hooks) {
  framemill::ReadKnobs();  // the environment's FRAMEMILL_* variables, once (common/env_knobs.h)
  framemill::InstallSupervisorHooks(&hooks);
  // No exception ends a command with a core dump: nlohmann, std and Boost errors are reported.
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "framemill: internal error: %s\n", e.what());
    return kExitFailed;
  }
}
