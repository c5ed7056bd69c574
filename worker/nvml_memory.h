// This process's GPU memory as the driver sees it (NVML), which also counts what libraries
// allocate outside PyTorch's caching allocator (cuDNN workspaces, the CUDA context itself).
// libnvidia-ml is loaded at run time: a machine without it (or without a GPU) reports 0.
#pragma once

#include <cstdint>
#include <string>

namespace framemill {

class NvmlMemory {
 public:
  // `pci_bus_id` names the GPU ("0000:3B:00.0"), as CUDA reports it for the worker's device.
  explicit NvmlMemory(const std::string& pci_bus_id);
  ~NvmlMemory();
  NvmlMemory(const NvmlMemory&) = delete;
  NvmlMemory& operator=(const NvmlMemory&) = delete;

  bool available() const { return device_ != nullptr; }
  // Bytes this process uses on the GPU; 0 when unknown.
  uint64_t ProcessBytes() const;

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  void* get_processes_ = nullptr;
};

}  // namespace framemill
