// framemill-faults: the tests' build of framemill. The same program (supervisor/cli/
// framemill_main.h, the same libraries), with the faults that its environment names
// (tests/faults/supervisor_faults.h) reaching it through the supervisor's seam
// (supervisor/job/supervisor_hooks.h). Built with the tests beside framemill (so that it finds
// framemill-worker as framemill does) and never installed.
#include <cstdio>

#include "supervisor/cli/framemill_main.h"
#include "tests/faults/supervisor_faults.h"

int main(int argc, char** argv) {
  using namespace framemill;
  SupervisorFaultHooks hooks(SupervisorFaults::FromEnvironment());
  return FramemillMain(argc, argv, hooks);
}
