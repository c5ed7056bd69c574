#include "common/log.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <sys/stat.h>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace framemill {
namespace {

// "%*": the syslog priority of the line's level as journald reads a line's prefix ("<3>").
class SyslogPriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    char prefix[4] = {'<', static_cast<char>('0' + SyslogPriority(msg.level)), '>', 0};
    dest.append(prefix, prefix + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

}  // namespace

int SyslogPriority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

bool StderrIsJournal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

void InitLogging(const std::string& name, const std::string& level) {
  spdlog::drop(name);  // called again under the same name: the new logger replaces it
  auto logger = spdlog::stderr_logger_mt(name);
  if (StderrIsJournal()) {
    // journald stamps each line itself and reads its priority from the prefix, so that
    // `journalctl -p warning` filters.
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SyslogPriorityFlag>('*').set_pattern("%*%n[%P] %l: %v");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %n[%P] %l: %v");
  }
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
