#include "supervisor/job/supervisor_hooks.h"

namespace framemill {
namespace {

SupervisorHooks g_none;
SupervisorHooks* g_hooks = &g_none;

}  // namespace

SupervisorHooks& InstalledSupervisorHooks() { return *g_hooks; }

void InstallSupervisorHooks(SupervisorHooks* hooks) {
  g_hooks = hooks != nullptr ? hooks : &g_none;
}

}  // namespace framemill
