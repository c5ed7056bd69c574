// The `framemill` program (supervisor/cli/main.cpp: its commands), callable with hooks: the
// product's main (supervisor/cli/program.cpp) passes SupervisorHooks itself, which do nothing;
// the tests' build framemill-faults (tests/faults/) passes its faults. Returns the exit code.
#pragma once

#include "supervisor/job/supervisor_hooks.h"

namespace framemill {

int FramemillMain(int argc, char** argv, SupervisorHooks& hooks);

}  // namespace framemill
