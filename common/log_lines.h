// Logging without spdlog's (and fmt's) headers, for translation units that include LibTorch:
// LibTorch bundles a newer fmt that clashes with the one spdlog was built against. The message
// is formatted by the caller. Goes to the default logger set up by InitLogging.
#pragma once

#include <string>

namespace framemill {

// Makes a stderr logger named `name` the default (again, when called again: a spare worker taken
// onto another channel). `level`: trace|debug|info|warn|error.
void InitLogging(const std::string& name, const std::string& level);

void LogDebug(const std::string& message);
void LogInfo(const std::string& message);
void LogWarn(const std::string& message);
void LogError(const std::string& message);
void FlushLog();

}  // namespace framemill
