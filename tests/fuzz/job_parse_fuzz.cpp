// libFuzzer target: the bytes of a job file through what the service does with one it claims
// (LoadJobFile: the JSON text, then ParseJob against the config's defaults). Any crash, sanitizer
// report, uncaught exception (nlohmann's type errors included) or broken contract is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/job_file.h"
#include "common/json_fields.h"
#include "tests/fuzz/fuzz_checks.h"

namespace framemill {
namespace {

void CheckJob(const JobSpec& job) {
  fuzz::Check(!job.input.empty() && !job.output.empty() && !job.model.empty(),
              "a required path is empty");
  fuzz::Check(job.input != job.output, "input and output are the same");
  fuzz::Check(job.priority >= -1000 && job.priority <= 1000, "priority out of range");
  fuzz::CheckSettings(job.settings);
  // The service records the job's paths in its result and status replies.
  fuzz::CheckDumps({{"input", job.input},
                    {"output", job.output},
                    {"model", job.model},
                    {"device", Name(job.settings.device)},
                    {"codec", job.settings.encoder.codec}});
}

}  // namespace
}  // namespace framemill

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace framemill;
  static const JobSettings kDefaults;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<nlohmann::json> json = ParseJsonText(text, "job.json", StatusCode::kInvalidJob);
  if (!json.ok()) {
    fuzz::CheckError(json.status(), StatusCode::kInvalidJob);
    fuzz::CheckDumps({{"reason", json.status().ToString()}});
    return 0;
  }
  Result<JobSpec> job = ParseJob(*json, kDefaults);
  if (!job.ok()) {
    // The reason is what a failed job's result.json says; it may quote the job's own keys.
    fuzz::CheckError(job.status(), StatusCode::kInvalidJob);
    fuzz::CheckDumps({{"reason", job.status().ToString()}});
    return 0;
  }
  CheckJob(*job);
  return 0;
}
