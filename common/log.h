// Logging setup shared by both processes: spdlog to stderr, one line per event, the process name
// in every line. When stderr is the journal (systemd sets JOURNAL_STREAM to its device and inode)
// each line starts with its syslog priority ("<4>" for a warning) and carries no timestamp of its
// own, so journald files it at the right priority and stamps it once. Code that includes LibTorch
// headers uses common/log_lines.h instead: LibTorch ships its own, newer fmt, which clashes with
// the fmt that spdlog was built against.
#pragma once

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/log_lines.h"

namespace framemill {

// The syslog priority journald gives a line of `level` (err 3, warn 4, info 6, debug 7).
int SyslogPriority(spdlog::level::level_enum level);

// Is stderr the journal stream systemd connected (JOURNAL_STREAM names its device and inode)?
bool StderrIsJournal();

}  // namespace framemill
