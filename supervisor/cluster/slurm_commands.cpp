#include "supervisor/cluster/slurm_commands.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include <unistd.h>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "supervisor/cluster/slurm_resume.h"
#include "supervisor/job/job_state.h"
#include "supervisor/job/parts_dir.h"
#include "supervisor/process/subprocess.h"
#include "supervisor/report/job_result.h"

namespace framemill {
namespace {

// The single-quoted shell word of `s` (for sbatch --wrap, which runs it with sh).
std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool AboutGpus(const std::string& opt) {
  for (const char* p : {"--gres", "--gpus", "--gpu", "-G"}) {
    if (opt.rfind(p, 0) == 0) return true;
  }
  return false;
}

// `framemill [--config C] COMMAND JOB ARGS... [--submitter UID:GID]` as one shell command line.
std::string FramemillLine(const std::string& framemill, const SlurmPaths& paths,
                          const std::string& command, const std::string& args) {
  std::string line = "exec " + ShellQuote(framemill);
  if (!paths.config.empty()) line += " --config " + ShellQuote(paths.config);
  line += " " + command + " " + ShellQuote(paths.job) + args;
  if (!paths.submitter.empty()) line += " --submitter " + ShellQuote(paths.submitter);
  return line;
}

}  // namespace

std::string FramemillSelfPath() {
  std::string self = ResolvePath("/proc/self/exe");
  return self.empty() ? "framemill" : self;
}

SlurmPaths ResolveSlurmPaths(const std::string& job_path, const std::string& config_path) {
  SlurmPaths paths;
  paths.job = ResolvePath(job_path);
  paths.config = config_path.empty() ? "" : ResolvePath(config_path);
  paths.parts_dir = PartsDirFor(paths.job);
  paths.logs_dir = paths.job + ".slurm";
  return paths;
}

SlurmIds RecordedSlurmIds(const SlurmPaths& paths) {
  SlurmIds ids;
  Result<nlohmann::json> record = ReadJsonFile(paths.record(), 1 << 20, StatusCode::kIo);
  if (record.ok()) {
    ids.array_job = record->value("array_job", "");
    ids.stitch_job = record->value("stitch_job", "");
  }
  return ids;
}

std::vector<std::string> SbatchArrayArgs(const std::string& framemill, const SlurmPaths& paths,
                                         int parts, const JobSpec& job,
                                         const std::vector<std::string>& extra,
                                         const std::vector<int>& tasks) {
  std::string array = "1-" + std::to_string(parts);
  if (!tasks.empty()) {
    array.clear();
    for (int t : tasks) array += (array.empty() ? "" : ",") + std::to_string(t);
  }
  std::vector<std::string> argv = {
      "sbatch",           "--parsable",
      "--requeue",        "--job-name=framemill-parts",
      "--array=" + array, "--output=" + paths.logs_dir + "/slurm-%A_%a.out"};
  bool gpus = false;
  for (const std::string& e : extra) gpus = gpus || AboutGpus(e);
  if (!gpus && job.settings.device.kind == DeviceKind::kCuda) {
    const size_t n = job.settings.gpus.empty() ? 1 : job.settings.gpus.size();
    argv.push_back("--gres=gpu:" + std::to_string(n));
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("--wrap=" +
                 FramemillLine(framemill, paths, "run",
                               " --part \"$SLURM_ARRAY_TASK_ID/" + std::to_string(parts) + "\""));
  return argv;
}

std::vector<std::string> SbatchStitchArgs(const std::string& framemill, const SlurmPaths& paths,
                                          const std::string& array_job,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=framemill-stitch"};
  if (!array_job.empty()) {
    argv.push_back("--dependency=afterok:" + array_job);
    argv.push_back("--kill-on-invalid-dep=no");
  }
  argv.push_back("--output=" + paths.logs_dir + "/slurm-%j-stitch.out");
  for (const std::string& e : extra) {
    if (!AboutGpus(e) && e.rfind("--array", 0) != 0 && e.rfind("-a", 0) != 0) argv.push_back(e);
  }
  argv.push_back("--wrap=" + FramemillLine(framemill, paths, "stitch", ""));
  return argv;
}

Result<std::string> ParseParsableId(const std::string& out) {
  std::string id;
  for (char c : out) {
    if (c < '0' || c > '9') break;
    id += c;
  }
  if (id.empty()) return Status(StatusCode::kIo, "sbatch printed no job id: " + out);
  return id;
}

Result<std::string> RunSbatch(const std::vector<std::string>& argv) {
  Result<CommandOutput> r = RunAndCapture(argv);
  if (!r.ok()) return r.status().WithContext("sbatch");
  if (r->exit_code != 0) {
    // Without a configuration sbatch looks for the controller in DNS and says only that.
    const char* conf = std::getenv("SLURM_CONF");
    const std::string hint =
        (conf == nullptr || *conf == '\0') && ::access("/etc/slurm/slurm.conf", R_OK) != 0
            ? " (no Slurm configuration here: SLURM_CONF is unset and /etc/slurm/slurm.conf is "
              "missing; set SLURM_CONF to the cluster's slurm.conf)"
            : "";
    return Status(StatusCode::kIo,
                  "sbatch failed (" + DescribeExit(*r) + "): " + r->err + hint);
  }
  return ParseParsableId(r->out);
}

Result<SlurmIds> SubmitToSlurm(const SlurmPaths& paths, const JobSpec& job, const PartsPlan& plan,
                               const std::vector<std::string>& extra) {
  FM_RETURN_IF_ERROR(MakeDirectories(paths.logs_dir));
  const int parts = static_cast<int>(plan.parts.size());
  const std::string self = FramemillSelfPath();
  SlurmIds ids;
  Result<std::string> array = RunSbatch(SbatchArrayArgs(self, paths, parts, job, extra));
  if (!array.ok()) return array.status();
  ids.array_job = *array;
  Result<std::string> stitch = RunSbatch(SbatchStitchArgs(self, paths, ids.array_job, extra));
  if (!stitch.ok()) return stitch.status();
  ids.stitch_job = *stitch;
  nlohmann::json record = {{"version", 1},
                           {"job", paths.job},
                           {"parts", parts},
                           {"array_job", ids.array_job},
                           {"stitch_job", ids.stitch_job},
                           {"sbatch", extra},
                           {"submitter", paths.submitter}};
  FM_RETURN_IF_ERROR(AtomicWriteFile(paths.record(), DumpJson(record, 1) + "\n"));
  return ids;
}

void DefineSlurmCommands(CLI::App& app, std::string& job_path, SlurmArgs* args) {
  CLI::App* slurm = app.add_subcommand("slurm", "Run one job's parts over a Slurm cluster");
  slurm->require_subcommand(1);
  CLI::App* submit = slurm->add_subcommand(
      "submit",
      "Plan the job's parts, submit an array job (one task per part) and a stitch job that "
      "runs after it; print the two job ids, one a line. Options after -- go to sbatch");
  submit->add_option("job", job_path, "The job file (on storage every node sees)")
      ->required()
      ->type_name("JOB.json");
  submit->add_option("--parts", args->parts, "Parts (array tasks)")
      ->required()
      ->check(CLI::Range(1, kMaxParts))
      ->type_name("N");
  // After `--`, so that they cannot be taken for framemill's own options (--config, --parts).
  submit->add_option("sbatch", args->sbatch,
                     "sbatch options for the parts (and, but those about GPUs, the stitch), "
                     "after --: -- --partition=gpu --time=2:00:00")
      ->type_name("-- SBATCH_OPTION");
  CLI::App* status =
      slurm->add_subcommand("status", "Each part's segments done and its Slurm state");
  status->add_option("job", job_path, "The job file given to `slurm submit`")
      ->required()
      ->type_name("JOB.json");
  status->add_flag("--json", args->json, "Print JSON");
  CLI::App* resume = slurm->add_subcommand(
      "resume",
      "After a part's task was cancelled or failed: submit again the unfinished parts and a new "
      "stitch after them; print the new ids like submit. Options after -- go to sbatch (default: "
      "submit's)");
  resume->add_option("job", job_path, "The job file given to `slurm submit`")
      ->required()
      ->type_name("JOB.json");
  resume->add_option("sbatch", args->sbatch, "sbatch options, after --")
      ->type_name("-- SBATCH_OPTION");
}

std::map<int, std::string> SlurmTaskStates(const std::string& array_job) {
  std::map<int, std::string> states;
  Result<CommandOutput> r =
      RunAndCapture({"squeue", "-h", "-r", "-j", array_job, "-o", "%K %T"});
  if (!r.ok() || r->exit_code != 0) return states;
  size_t pos = 0;
  while (pos < r->out.size()) {
    size_t end = r->out.find('\n', pos);
    if (end == std::string::npos) end = r->out.size();
    const std::string line = r->out.substr(pos, end - pos);
    pos = end + 1;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    const std::string task = line.substr(0, sp);
    if (task.empty() || task.find_first_not_of("0123456789") != std::string::npos) continue;
    states[std::stoi(task)] = line.substr(sp + 1);
  }
  return states;
}

namespace {

// The Slurm state of job `id` as squeue gives it, with its pending reason when it has one
// ("PENDING (DependencyNeverSatisfied)"); "not queued" when squeue does not list it.
std::string JobStateOf(const std::string& id) {
  Result<CommandOutput> r = RunAndCapture({"squeue", "-h", "-j", id, "-o", "%T|%r"});
  if (!r.ok() || r->exit_code != 0 || r->out.empty()) return "not queued";
  std::string line = r->out.substr(0, r->out.find('\n'));
  const size_t bar = line.find('|');
  if (bar == std::string::npos) return line;
  const std::string state = line.substr(0, bar), reason = line.substr(bar + 1);
  return reason.empty() || reason == "None" ? state : state + " (" + reason + ")";
}

// Each part's row: its segments done (from its done-log) and its Slurm task's state.
Result<nlohmann::json> PartsStatus(const JobSpec& job, const PartsPlan& plan,
                                   const std::string& parts_dir, const std::string& array_job) {
  std::map<int, std::string> states;
  if (!array_job.empty()) states = SlurmTaskStates(array_job);
  // The parts' done-logs: a JobPlan of the plan's sizes names the segments as the parts do.
  Result<JobPlan> sizes = MakePlan(plan.frame_count, plan.chunk_frames, plan.chunks_per_segment);
  if (!sizes.ok()) return sizes.status();
  const int count = static_cast<int>(plan.parts.size());
  nlohmann::json parts = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    const PartRange& r = plan.parts[static_cast<size_t>(i)];
    const PartRef ref{i + 1, count};
    JobState st(PartDir(parts_dir, ref), job, *sizes, plan.chunks_per_segment, r.first_segment,
                r.end_segment());
    (void)st.Load(/*write_back=*/false);
    const auto s = states.find(i + 1);
    const std::string slurm = s != states.end()          ? s->second
                              : st.all_done()            ? "done"
                              : array_job.empty()        ? "-"
                                                         : "not queued";
    parts.push_back({{"part", ref.ToString()},
                     {"segments_done", st.done()},
                     {"segments", r.segment_count},
                     {"frames", r.frames},
                     {"slurm", slurm}});
  }
  return parts;
}

// `framemill slurm status` without --json: the job, each part, and the way out of a stuck one.
void PrintStatus(const std::string& job_path, const nlohmann::json& all,
                 const std::vector<std::string>& stuck, bool never, const std::string& mend) {
  const std::string array_job = all["array_job"], stitch_job = all["stitch_job"];
  std::printf("job %s: %zu parts, array job %s, stitch job %s (%s)\n", job_path.c_str(),
              all["parts"].size(), array_job.empty() ? "-" : array_job.c_str(),
              stitch_job.empty() ? "-" : stitch_job.c_str(), all["stitch"].get<std::string>().c_str());
  for (const nlohmann::json& p : all["parts"]) {
    std::printf("part %-9s %lld/%lld segments done  %s\n", p["part"].get<std::string>().c_str(),
                static_cast<long long>(p["segments_done"].get<int64_t>()),
                static_cast<long long>(p["segments"].get<int64_t>()),
                p["slurm"].get<std::string>().c_str());
  }
  if (!stuck.empty() || never) {
    std::string names;
    for (const std::string& n : stuck) names += (names.empty() ? "" : ", ") + n;
    std::printf("%s%s: `%s` runs %s again, and the stitch after them\n",
                stuck.empty() ? "" : ("part " + names + " is neither done nor queued").c_str(),
                never ? (stuck.empty() ? "the stitch waits on a part that will never end"
                                       : " and the stitch waits on it for ever")
                      : "",
                mend.c_str(), stuck.empty() ? "the unfinished parts" : "them");
  }
}

int StatusCommand(const std::string& job_path, bool json, const Config& config) {
  Result<JobSpec> job = LoadJobFile(job_path, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: %s\n", job.status().ToString().c_str());
    return kExitFailed;
  }
  const SlurmPaths paths = ResolveSlurmPaths(job_path);
  const std::string& parts_dir = paths.parts_dir;
  const SlurmIds ids = RecordedSlurmIds(paths);
  const std::string &array_job = ids.array_job, &stitch_job = ids.stitch_job;
  Result<PartsPlan> plan = ReadPartsPlan(parts_dir);
  if (!plan.ok() && PathExists(job->output) && !PathExists(parts_dir)) {
    // The stitch removes the parts once the output is in place.
    if (json) {
      std::printf("%s\n", DumpJson({{"job", paths.job},
                                     {"array_job", array_job},
                                     {"stitch_job", stitch_job},
                                     {"stitch", "done"},
                                     {"stitched", true},
                                     {"output", job->output},
                                     {"output_exists", true},
                                     {"parts", nlohmann::json::array()}},
                                    2)
                               .c_str());
      return kExitOk;
    }
    std::printf("job %s: stitched into %s (stitch job %s)\n", job_path.c_str(),
                job->output.c_str(), stitch_job.empty() ? "-" : stitch_job.c_str());
    return kExitOk;
  }
  if (!plan.ok()) {
    std::fprintf(stderr, "framemill: %s\n", plan.status().ToString().c_str());
    return kExitFailed;
  }
  Result<nlohmann::json> parts = PartsStatus(*job, *plan, parts_dir, array_job);
  if (!parts.ok()) return kExitFailed;
  const bool output = PathExists(job->output);
  nlohmann::json all = {{"job", paths.job},
                        {"array_job", array_job},
                        {"stitch_job", stitch_job},
                        {"stitch", stitch_job.empty() ? "-" : JobStateOf(stitch_job)},
                        {"stitched", false},
                        {"output", job->output},
                        {"output_exists", output},
                        {"parts", *parts}};
  // A part neither done nor known to Slurm was cancelled or lost: the stitch waits on it for ever
  // (DependencyNeverSatisfied) until `slurm resume` runs it again.
  std::vector<std::string> stuck;
  for (const nlohmann::json& p : *parts) {
    if (p["slurm"] == "not queued" && p["segments_done"] != p["segments"]) {
      stuck.push_back(p["part"].get<std::string>());
    }
  }
  const bool never = all["stitch"].get<std::string>().find("DependencyNeverSatisfied") !=
                     std::string::npos;
  const std::string mend = "framemill slurm resume " + job_path;
  if (!stuck.empty() || never) all["mend"] = mend;
  if (json) {
    std::printf("%s\n", DumpJson(all, 2).c_str());
    return kExitOk;
  }
  PrintStatus(job_path, all, stuck, never, mend);
  return kExitOk;
}

}  // namespace

int SlurmCommand(const CLI::App& slurm_cmd, const std::string& config_path,
                 const std::string& job_path, const SlurmArgs& args, const Config& config) {
  if (slurm_cmd.got_subcommand("status")) return StatusCommand(job_path, args.json, config);
  if (slurm_cmd.got_subcommand("resume")) {
    return SlurmResumeCommand(job_path, args.sbatch, config_path, config);
  }
  Result<JobSpec> job = LoadJobFile(job_path, config.defaults);
  if (!job.ok()) {
    std::fprintf(stderr, "framemill: job rejected: %s\n", job.status().ToString().c_str());
    return kExitFailed;
  }
  const SlurmPaths paths = ResolveSlurmPaths(job_path, config_path);
  Result<PartsPlan> plan = PlanJobParts(*job, config, args.parts, paths.parts_dir);
  if (!plan.ok()) {
    std::fprintf(stderr, "framemill: %s\n", plan.status().ToString().c_str());
    return ExitCodeOf(plan.status().code());
  }
  Result<SlurmIds> ids = SubmitToSlurm(paths, *job, *plan, args.sbatch);
  if (!ids.ok()) {
    std::fprintf(stderr, "framemill: %s\n", ids.status().ToString().c_str());
    return ExitCodeOf(ids.status().code());
  }
  std::printf("%s\n%s\n", ids->array_job.c_str(), ids->stitch_job.c_str());
  return kExitOk;
}

}  // namespace framemill
