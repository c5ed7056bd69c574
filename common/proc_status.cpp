#include "common/proc_status.h"

#include <cstdio>
#include <string>

namespace framemill {

ProcMemory ReadProcMemory(int pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status";
  ProcMemory m;
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return m;
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "RssAnon: %llu kB", &kib) == 1 ||
        std::sscanf(line, "RssFile: %llu kB", &kib) == 1) {
      m.private_bytes += kib * 1024;
    } else if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) {
      m.peak_bytes = kib * 1024;
    }
  }
  std::fclose(f);
  return m;
}

}  // namespace framemill
