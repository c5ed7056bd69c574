// Logging setup shared by both processes: spdlog to stderr (journald picks it up under systemd),
// one line per event, the process name in every line. Code that includes LibTorch headers uses
// common/log_lines.h instead: LibTorch ships its own, newer fmt, which clashes with the fmt that
// spdlog was built against.
#pragma once

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/log_lines.h"
