#include "supervisor/cli/job_args.h"

#include "common/file_util.h"

namespace framemill {

nlohmann::json CliValue(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception&) {
    return text;
  }
}

Status ApplyJobSettings(const std::vector<std::string>& settings, nlohmann::json* job) {
  for (const std::string& kv : settings) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(StatusCode::kInvalidJob, kv + " is not a KEY=VALUE job setting");
    }
    (*job)[kv.substr(0, eq)] = CliValue(kv.substr(eq + 1));
  }
  return Status::Ok();
}

Result<nlohmann::json> JobFromArgs(const std::string& input, const std::string& model,
                                   const std::string& output,
                                   const std::vector<std::string>& settings) {
  nlohmann::json job = {{"input", ResolvePath(input)},
                        {"model", ResolvePath(model)},
                        {"output", ResolvePath(output)}};
  FM_RETURN_IF_ERROR(ApplyJobSettings(settings, &job));
  return job;
}

}  // namespace framemill
