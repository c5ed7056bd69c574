#include "fault_harness.h"

#include <filesystem>
#include <system_error>

namespace framemill::test {

std::string FaultWorkerBinary() { return FRAMEMILL_FAULT_WORKER_BIN; }

nlohmann::json WithFaultWorker(nlohmann::json config) {
  if (config.is_null()) config = nlohmann::json::object();
  config["worker_binary"] = FaultWorkerBinary();
  return config;
}

bool FaultFired(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  return !ec && bytes > 0;
}

}  // namespace framemill::test
