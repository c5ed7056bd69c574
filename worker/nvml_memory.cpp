#include "worker/nvml_memory.h"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

namespace framemill {
namespace {

// The few NVML declarations used here (nvml.h is not part of every image). Layouts from the
// NVML API: nvmlProcessInfo_t (v2 and later) is {pid, usedGpuMemory, gpuInstanceId,
// computeInstanceId}; the v1 layout of nvmlDeviceGetComputeRunningProcesses is avoided.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleByPciFn = int (*)(const char*, void**);
using ProcessesFn = int (*)(void*, unsigned int*, NvmlProcessInfo*);
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlInsufficientSize = 7;

}  // namespace

NvmlMemory::NvmlMemory(const std::string& pci_bus_id) {
  if (pci_bus_id.empty()) return;
  lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) return;
  auto init = reinterpret_cast<InitFn>(::dlsym(lib_, "nvmlInit_v2"));
  auto by_pci = reinterpret_cast<HandleByPciFn>(::dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
  get_processes_ = ::dlsym(lib_, "nvmlDeviceGetComputeRunningProcesses_v2");
  void* device = nullptr;
  if (init == nullptr || by_pci == nullptr || get_processes_ == nullptr || init() != kNvmlSuccess ||
      by_pci(pci_bus_id.c_str(), &device) != kNvmlSuccess) {
    return;
  }
  device_ = device;
}

NvmlMemory::~NvmlMemory() {
  if (lib_ == nullptr) return;
  if (device_ != nullptr) {
    auto shutdown = reinterpret_cast<ShutdownFn>(::dlsym(lib_, "nvmlShutdown"));
    if (shutdown != nullptr) shutdown();
  }
  ::dlclose(lib_);
}

uint64_t NvmlMemory::ProcessBytes() const {
  if (device_ == nullptr) return 0;
  auto get = reinterpret_cast<ProcessesFn>(get_processes_);
  std::vector<NvmlProcessInfo> infos(16);
  unsigned int count = static_cast<unsigned int>(infos.size());
  int rc = get(device_, &count, infos.data());
  if (rc == kNvmlInsufficientSize) {
    infos.resize(count + 16);
    count = static_cast<unsigned int>(infos.size());
    rc = get(device_, &count, infos.data());
  }
  if (rc != kNvmlSuccess) return 0;
  unsigned int self = static_cast<unsigned int>(::getpid());
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    if (infos[i].pid == self) return infos[i].used_gpu_memory;
  }
  return 0;
}

}  // namespace framemill
