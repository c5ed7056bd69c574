// `framemill serve`: drains the spool (supervisor/front/spool.h) under systemd: one job at a time,
// or, with config service_gpus, several at once, each on GPUs of its own (gpu_scheduler.h).
//
// At start it takes the spool's lock, removes shared memory left by dead supervisors, and
// resumes every job left in active/ (a crash, a power cut or a stop) before taking new ones.
// It notices new job files with inotify and rescans periodically. It tells systemd READY=1 once
// the spool is open, STATUS= lines while it works, and WATCHDOG=1 while its loop is alive.
// On stop (SIGTERM/SIGINT) every running job stops, its finished segments stay in active/<id>/,
// and serve returns ok: the next start resumes them.
#pragma once

#include <atomic>

#include "common/config.h"
#include "common/status.h"

namespace framemill {

Status RunService(const Config& config, const std::atomic<bool>& stop);

}  // namespace framemill
