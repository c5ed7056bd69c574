#include "supervisor/engines/engine_key.h"

#include <algorithm>
#include <dirent.h>
#include <fstream>
#include <vector>

#include "common/sha256.h"
#include "supervisor/process/program_answers.h"

#ifndef FRAMEMILL_TORCH_VERSION
#define FRAMEMILL_TORCH_VERSION "unknown"
#endif

namespace framemill {
namespace {

std::string Trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

std::string EngineKey::Text() const {
  return "framemill engine " + std::to_string(kEngineRecipe) + "\nmodel " + model_sha256 +
         "\nshape " + std::to_string(width) + "x" + std::to_string(height) + "\nbatch " +
         std::to_string(batch) + "\nprecision " + Name(precision) + "\ngpu " + gpu + "\ntorch " +
         torch + "\ncompiler " + compiler + "\n";
}

std::string EngineKey::Id() const { return Sha256Hex(Text()).substr(0, 32); }

std::string EngineKey::Describe() const {
  return std::to_string(width) + "x" + std::to_string(height) + " batch " + std::to_string(batch) +
         " " + Name(precision) + " on " + gpu;
}

Result<std::string> NvidiaGpuName(int index, const std::string& driver_root) {
  const std::string dir = driver_root + "/gpus";
  std::vector<std::string> buses;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') buses.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  std::sort(buses.begin(), buses.end());
  if (index < 0 || index >= static_cast<int>(buses.size())) {
    return Status(StatusCode::kIo, "no NVIDIA GPU " + std::to_string(index) + " (" + dir +
                                       " lists " + std::to_string(buses.size()) + ")");
  }
  std::ifstream info(dir + "/" + buses[index] + "/information");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("Model:", 0) == 0) {
      const std::string name = Trimmed(line.substr(6));
      if (!name.empty()) return name;
    }
  }
  return Status(StatusCode::kIo, dir + "/" + buses[index] + "/information names no model");
}

std::string WorkerTorchVersion() { return FRAMEMILL_TORCH_VERSION; }

std::string CompilerVersion() {
  Result<CommandOutput> out = AskProgram({"c++", "--version"});
  if (!out.ok() || out->exit_code != 0) return "none";
  const std::string first = Trimmed(out->out.substr(0, out->out.find('\n')));
  return first.empty() ? "none" : first;
}

Result<EngineKey> EngineKeyFor(const std::string& model_sha256, int width, int height, int batch,
                               Precision precision, int gpu_index) {
  Result<std::string> gpu = NvidiaGpuName(gpu_index);
  if (!gpu.ok()) return gpu.status();
  EngineKey key;
  key.model_sha256 = model_sha256;
  key.width = width;
  key.height = height;
  key.batch = batch;
  key.precision = precision;
  key.gpu = *gpu;
  key.torch = WorkerTorchVersion();
  key.compiler = CompilerVersion();
  return key;
}

}  // namespace framemill
