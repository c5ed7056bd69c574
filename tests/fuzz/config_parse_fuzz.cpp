// libFuzzer target: the bytes of a config file through LoadConfig's parsing (the JSON text, then
// ParseConfig), and, for a config that parses, a job read against its defaults (the defaults and a
// job's keys go through the same ReadJobSettings). Any crash, sanitizer report, uncaught exception
// or broken contract is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/job_file.h"
#include "common/json_fields.h"
#include "tests/fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace framemill;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<nlohmann::json> json = ParseJsonText(text, "framemill.json", StatusCode::kInvalidConfig);
  if (!json.ok()) {
    fuzz::CheckError(json.status(), StatusCode::kInvalidConfig);
    fuzz::CheckDumps({{"error", json.status().ToString()}});
    return 0;
  }
  Result<Config> config = ParseConfig(*json);
  if (!config.ok()) {
    fuzz::CheckError(config.status(), StatusCode::kInvalidConfig);
    fuzz::CheckDumps({{"error", config.status().ToString()}});
    return 0;
  }
  fuzz::CheckSettings(config->defaults);
  fuzz::Check(config->arena_mb > 0, "arena_mb not positive");
  fuzz::Check(config->rescan_interval_s > 0, "rescan_interval_s not positive");
  fuzz::CheckDumps({{"spool_dir", config->spool_dir},
                    {"ffmpeg", config->ffmpeg},
                    {"allowed_input_roots", config->allowed_input_roots}});

  // A plain job over these defaults keeps every default it does not override.
  static const nlohmann::json kJob = {
      {"input", "in.mp4"}, {"output", "out.mp4"}, {"model", "m.pt"}};
  Result<JobSpec> job = ParseJob(kJob, config->defaults);
  fuzz::Check(job.ok(), "a plain job fails over defaults that parsed");
  fuzz::Check(job->settings.chunk_frames == config->defaults.chunk_frames &&
                  job->settings.device == config->defaults.device &&
                  job->settings.encoder.codec == config->defaults.encoder.codec,
              "a plain job does not keep the config's defaults");
  return 0;
}
