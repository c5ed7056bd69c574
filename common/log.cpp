#include "common/log.h"

#include <ctime>

#include <spdlog/sinks/stdout_sinks.h>

namespace framemill {

void InitLogging(const std::string& name, const std::string& level) {
  auto logger = spdlog::stderr_logger_mt(name);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %n[%P] %l: %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void LogDebug(const std::string& m) { spdlog::debug("{}", m); }
void LogInfo(const std::string& m) { spdlog::info("{}", m); }
void LogWarn(const std::string& m) { spdlog::warn("{}", m); }
void LogError(const std::string& m) { spdlog::error("{}", m); }
void FlushLog() { spdlog::default_logger()->flush(); }

uint64_t MonotonicUs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

uint64_t MonotonicMs() { return MonotonicUs() / 1000; }

}  // namespace framemill
