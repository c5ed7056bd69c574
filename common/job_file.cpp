#include "common/job_file.h"

#include "common/json_fields.h"

namespace framemill {

const char* Name(AlphaMode mode) {
  switch (mode) {
    case AlphaMode::kAuto:
      return "auto";
    case AlphaMode::kKeep:
      return "keep";
    case AlphaMode::kDrop:
      return "drop";
  }
  return "?";
}

std::optional<AlphaMode> ParseAlphaMode(const std::string& name) {
  return FindByName<AlphaMode>(name, {AlphaMode::kAuto, AlphaMode::kKeep, AlphaMode::kDrop});
}

const char* Name(TruncatedInput mode) {
  switch (mode) {
    case TruncatedInput::kRefuse:
      return "refuse";
    case TruncatedInput::kAccept:
      return "accept";
  }
  return "?";
}

std::optional<TruncatedInput> ParseTruncatedInput(const std::string& name) {
  return FindByName<TruncatedInput>(name, {TruncatedInput::kRefuse, TruncatedInput::kAccept});
}

Result<JobSpec> ParseJob(const nlohmann::json& object, const JobSettings& defaults) {
  JobSpec job;
  job.settings = defaults;
  FieldReader r(object, "job", StatusCode::kInvalidJob);
  r.RequiredString("input", &job.input);
  r.RequiredString("output", &job.output);
  r.RequiredString("model", &job.model);
  r.Bool("overwrite", &job.overwrite);
  r.Int("priority", &job.priority, -1000, 1000);
  ReadEnum(r, "alpha", &job.alpha, ParseAlphaMode, "auto, keep or drop", EnumError::kNamesOnly);
  ReadEnum(r, "truncated_input", &job.truncated_input, ParseTruncatedInput, "refuse or accept");
  if (!r.status().ok()) return r.status();
  // JSON may carry "\u0000"; the system calls would cut the name there and open another file.
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"input", &job.input},
                                   {"output", &job.output},
                                   {"model", &job.model}}) {
    if (value->find('\0') != std::string::npos) {
      return Status(StatusCode::kInvalidJob, std::string("job.") + key + ": contains a NUL byte");
    }
  }
  // The settings keys share the job object: their reader skips the keys read above, and
  // reports any key that neither knows. (No copy of the object: a copy recurses as deep as the
  // value nests.)
  FM_RETURN_IF_ERROR(ReadJobSettings(
      object, "job", StatusCode::kInvalidJob, &job.settings,
      {"input", "output", "model", "overwrite", "priority", "alpha", "truncated_input"}));
  FaceSetting& faces = job.settings.faces;
  if (job.settings.mode == JobMode::kFaces && faces.detector.empty() && faces.table.empty()) {
    faces.detector = InstalledFaceDetector();
  }
  FM_RETURN_IF_ERROR(CheckFaceSetting(job.settings.mode, faces, "job"));
  // A face model sees whole crops of face_size; tiles of a crop would cut the face it restores.
  // ("auto" stays allowed: it only halves the crops per call on out-of-memory, and tiles last.)
  if (job.settings.mode == JobMode::kFaces && job.settings.tile.mode == TileMode::kFixed) {
    return Status(StatusCode::kInvalidJob,
                  "job.tile: tiles do not apply in face mode (the face model sees whole crops of "
                  "face_size); leave tile out or \"auto\"");
  }
  if (job.input == job.output) {
    return Status(StatusCode::kInvalidJob, "job.output: must differ from job.input");
  }
  return job;
}

Result<JobSpec> LoadJobFile(const std::string& path, const JobSettings& defaults) {
  Result<nlohmann::json> j = ReadJsonFile(path, kMaxJobFileBytes, StatusCode::kInvalidJob);
  if (!j.ok()) return j.status();
  Result<JobSpec> job = ParseJob(*j, defaults);
  if (!job.ok()) return job.status().WithContext(path);
  return job;
}

}  // namespace framemill
