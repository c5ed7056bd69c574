#include "supervisor/job/job_files.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked_file.h"
#include "common/log.h"
#include "common/user_rights.h"
#include "supervisor/job/kept_work.h"
#include "supervisor/media/media_probe.h"
#include "supervisor/media/output_muxer.h"
#include "supervisor/media/source_intake.h"

namespace framemill {
namespace {

// The file `name` in the directory `dir_fd`, created exclusively under a random name, then
// renamed to `name`.
Result<UniqueFd> CreateInPlace(int dir_fd, const std::string& name) {
  Result<CreatedFile> f = CreateExclusiveAt(dir_fd, "." + name + ".", ".tmp", 0644);
  if (!f.ok()) return f.status();
  FM_RETURN_IF_ERROR(RenameCheckedAt(dir_fd, f->name, f->fd.get(), name, RenameMode::kReplace));
  return std::move(f->fd);
}

// With a user (JobOptions::submitter): kPathNotAllowed unless that user could read the open
// file `fd`.
Status CheckOpenedFor(const JobFiles& files, int fd, const char* what) {
  if (files.user == nullptr) return Status::Ok();
  return CheckMayReadOpened(*files.user, fd, what);
}

// The output's name and directory: a file name, a known container, a writable directory, no
// directory or (without overwrite) file there yet.
Status CheckOutput(const JobSpec& job, const Config& config, JobFiles* files) {
  files->output_name = BaseName(job.output);
  const std::string& name = files->output_name;
  if (name.empty() || name == "." || name == "..") {
    return Status(StatusCode::kOutputInvalid, job.output + ": not a file name");
  }
  Result<std::string> muxer = MuxerForOutput(job.output);
  if (!muxer.ok()) return muxer.status();
  const std::string out_dir = DirName(job.output);
  if (!files->output_dir.valid()) {
    Result<UniqueFd> dir = OpenCheckedDirectory(out_dir, config.allowed_output_roots);
    if (!dir.ok()) return dir.status();
    files->output_dir = std::move(*dir);
  }
  if (files->user != nullptr) {
    FM_RETURN_IF_ERROR(CheckMayCreateInOpened(*files->user, files->output_dir.get(), "output"));
  }
  if (::access(FdPath(files->output_dir.get()).c_str(), W_OK) != 0) {
    return Status(StatusCode::kOutputInvalid, out_dir + ": output directory is not writable");
  }
  struct stat st {};
  if (::fstatat(files->output_dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Status(StatusCode::kOutputInvalid, job.output + ": output is a directory");
    }
    files->output_is_ours = !files->placed_note.empty() && IsPlacedOutput(files->placed_note, st);
    if (files->output_is_ours) {
      spdlog::info("{}: the output an earlier run of this job placed; made again from its "
                   "finished segments and replaced", job.output);
    }
    if (!job.overwrite && !files->output_is_ours) {
      return Status(StatusCode::kOutputInvalid,
                    job.output + ": output exists (set \"overwrite\": true to replace it)");
    }
    if (files->user != nullptr) {
      FM_RETURN_IF_ERROR(CheckMayReplaceAt(*files->user, files->output_dir.get(), name, "output"));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SourceFile> OpenJobPaths(const JobSpec& job, const Config& config, JobFiles* files) {
  if (!files->input.valid()) {
    Result<UniqueFd> input = OpenInput(job.input, JobSourceRules(config, files->user), "input");
    if (!input.ok()) return input.status();
    files->input = std::move(*input);
  }
  if (!files->model.valid()) {
    Result<UniqueFd> model =
        OpenCheckedFile(CheckedKind::kModel, job.model, config.allowed_model_roots);
    if (!model.ok()) return model.status();
    FM_RETURN_IF_ERROR(CheckOpenedFor(*files, model->get(), "model"));
    files->model = std::move(*model);
  }
  FM_RETURN_IF_ERROR(CheckOutput(job, config, files));
  const SourceRules rules = JobSourceRules(config, files->user);
  return BindSource(files->input.get(), job.input, rules.ffprobe, rules.playlists);
}

Result<FaceSetting> OpenFaceFiles(const JobSpec& job, const Config& config, JobFiles* files) {
  FaceSetting faces = job.settings.faces;
  if (!faces.detector.empty()) {
    if (!files->face_detector.valid()) {
      // The detectors installed with framemill are the product's own: their folder is a root.
      std::vector<std::string> roots = config.allowed_model_roots;
      const std::string installed = InstalledFaceDetector();
      if (!roots.empty() && !installed.empty()) roots.push_back(DirName(installed));
      Result<UniqueFd> fd = OpenCheckedFile(CheckedKind::kModel, faces.detector, roots);
      if (!fd.ok()) return fd.status().WithContext("face_detector");
      FM_RETURN_IF_ERROR(CheckOpenedFor(*files, fd->get(), "face_detector"));
      files->face_detector = std::move(*fd);
    }
    faces.detector = FdPath(files->face_detector.get());
  }
  if (!faces.table.empty()) {
    if (!files->face_table.valid()) {
      Result<UniqueFd> fd =
          OpenInput(faces.table, JobSourceRules(config, files->user), "face_table");
      if (!fd.ok()) return fd.status().WithContext("face_table");
      files->face_table = std::move(*fd);
    }
    faces.table = FdPath(files->face_table.get());
  }
  return faces;
}

Status OpenScratch(const JobSpec& job, const JobOptions& options, JobFiles* files) {
  if (files->dir.valid()) return Status::Ok();
  if (options.workspace.empty() && options.keep_work) {
    const std::string name = KeptWorkName(job.output);
    Result<KeptWork> kept = OpenKeptWork(files->output_dir.get(), name, options.fresh_work);
    if (!kept.ok()) return kept.status();
    files->kept_name = name;
    files->dir = std::move(kept->dir);
    files->kept_lock = std::move(kept->lock);
    return Status::Ok();
  }
  if (options.workspace.empty()) {
    Result<CreatedFile> dir = MakePrivateDirectoryAt(files->output_dir.get(), ".framemill-work.");
    if (!dir.ok()) return dir.status();
    files->private_name = dir->name;
    files->dir = std::move(dir->fd);
    return Status::Ok();
  }
  FM_RETURN_IF_ERROR(MakeDirectories(options.workspace));
  files->dir.Reset(::open(options.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!files->dir.valid()) {
    return Status(StatusCode::kIo,
                  "open workspace " + options.workspace + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status OpenTimeline(const JobSpec& job, const JobOptions& options, const JobFiles& files,
                    uint64_t t0_ms, Timeline* timeline) {
  // Beside the output: in the checked output directory. Elsewhere (the service's spool): in the
  // caller's directory.
  const std::string path =
      options.timeline.empty() ? job.output + ".timeline.jsonl" : options.timeline;
  UniqueFd other_dir;
  if (!options.timeline.empty()) {
    other_dir.Reset(::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!other_dir.valid()) {
      return Status(StatusCode::kIo, "open directory of " + path + ": " + std::strerror(errno));
    }
  }
  Result<UniqueFd> fd = CreateInPlace(
      other_dir.valid() ? other_dir.get() : files.output_dir.get(), BaseName(path));
  if (!fd.ok()) return fd.status();
  return timeline->Adopt(::fcntl(fd->get(), F_DUPFD_CLOEXEC, 0), path, t0_ms);
}

void CloseJobFiles(JobFiles* files, bool done, const Status& failure) {
  if (!files->private_name.empty() && files->output_dir.valid()) {
    files->dir.Reset();
    (void)RemoveTreeAt(files->output_dir.get(), files->private_name);
  }
  if (!files->kept_name.empty() && (done || !KeepsWork(failure, files->segments_done))) {
    (void)RemoveTreeAt(files->output_dir.get(), files->kept_name);
  }
  files->dir.Reset();
  files->kept_lock.Reset();
}

}  // namespace framemill
