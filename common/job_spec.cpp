#include "common/job_spec.h"

#include "common/json_fields.h"

namespace framemill {

Result<JobSpec> ParseJob(const nlohmann::json& object, const JobSettings& defaults) {
  JobSpec job;
  job.settings = defaults;
  FieldReader r(object, "job", StatusCode::kInvalidJob);
  r.RequiredString("input", &job.input);
  r.RequiredString("output", &job.output);
  r.RequiredString("model", &job.model);
  r.Bool("overwrite", &job.overwrite);
  r.Int("priority", &job.priority, -1000, 1000);
  if (!r.status().ok()) return r.status();
  // The settings keys share the job object; read them with their own reader, then let this one
  // check for keys that neither knows.
  nlohmann::json rest = object;
  for (const char* k : {"input", "output", "model", "overwrite", "priority"}) rest.erase(k);
  FM_RETURN_IF_ERROR(ReadJobSettings(rest, "job", StatusCode::kInvalidJob, &job.settings));
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
