// framemill-worker: one GPU (or CPU) worker process, started by the supervisor.
//
//   framemill-worker --control PATH --channel K --wake-fd N --model PATH --device DEV
//                    [--precision P] [--log-level L]
//   framemill-worker --export-model NAME PATH
//   framemill-worker --list-models
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/log_lines.h"
#include "worker/example_models.h"
#include "worker/worker_loop.h"

int main(int argc, char** argv) {
  using namespace framemill;
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 3 && a[0] == "--export-model") {
    Status s = ExportExampleModel(a[1], a[2]);
    if (!s.ok()) {
      std::fprintf(stderr, "framemill: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("wrote model %s to %s\n", a[1].c_str(), a[2].c_str());
    return 0;
  }
  if (a.size() == 1 && a[0] == "--list-models") {
    for (const std::string& n : ExampleModelNames()) std::printf("%s\n", n.c_str());
    return 0;
  }
  WorkerArgs args;
  std::string level = "info";
  for (size_t i = 0; i + 1 < a.size(); i += 2) {
    if (a[i] == "--control")
      args.control = a[i + 1];
    else if (a[i] == "--channel")
      args.channel = std::atoi(a[i + 1].c_str());
    else if (a[i] == "--wake-fd")
      args.wake_fd = std::atoi(a[i + 1].c_str());
    else if (a[i] == "--model")
      args.model = a[i + 1];
    else if (a[i] == "--device")
      args.device = a[i + 1];
    else if (a[i] == "--precision")
      args.precision = a[i + 1];
    else if (a[i] == "--log-level")
      level = a[i + 1];
    else {
      std::fprintf(stderr, "framemill-worker: unknown argument %s\n", a[i].c_str());
      return kWorkerExitUsage;
    }
  }
  if (args.control.empty() || args.channel < 0 || args.wake_fd < 0 || args.model.empty() ||
      args.device.empty() || a.size() % 2 != 0) {
    std::fprintf(stderr,
                 "usage: framemill-worker --control PATH --channel K --wake-fd N --model PATH "
                 "--device DEV [--log-level L]\n"
                 "       framemill-worker --export-model NAME PATH\n"
                 "       framemill-worker --list-models\n");
    return kWorkerExitUsage;
  }
  InitLogging("worker" + std::to_string(args.channel), level);
  return RunWorker(args);
}
