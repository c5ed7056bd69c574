#include "worker/sandbox/sandbox_policy.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <glob.h>
#include <sstream>
#include <unistd.h>

#include "worker/sandbox/elf_runpath.h"

namespace framemill {
namespace {

// Directories where the dynamic loader looks without being told (and where distributions put
// libraries that others dlopen by bare name).
const char* const kStandardLibraryDirs[] = {"/lib", "/lib64", "/usr/lib", "/usr/lib64",
                                            "/usr/local/lib"};

// Resolves symlinks so that rules compare by the path the kernel sees; a missing path stays as
// given (ApplyLandlock then lists it as skipped).
std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Files mapped into the process now (libraries, the executable, locale data), as paths.
std::vector<std::string> MappedFiles() {
  std::vector<std::string> files;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode path: the path is the 6th field and may hold spaces.
    std::istringstream in(line);
    std::string field;
    for (int i = 0; i < 5 && in >> field; ++i) {
    }
    std::string path;
    std::getline(in >> std::ws, path);
    if (path.empty() || path[0] != '/') continue;  // [heap], [stack], anonymous
    const std::string deleted = " (deleted)";
    if (path.size() > deleted.size() &&
        path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0) {
      continue;  // memfd or replaced file: nothing to open by name
    }
    // Devices, shared memory and kernel files get their own rules, never a whole directory.
    if (StartsWith(path, "/dev/") || StartsWith(path, "/proc/") || StartsWith(path, "/sys/")) {
      continue;
    }
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

void Add(std::vector<FsRule>* rules, const std::string& path, FsAccess access,
         const std::string& why) {
  std::string canonical = Canonical(path);
  rules->push_back({canonical, access, why, canonical == path ? std::string() : path});
}

// The directories the dynamic loader searches: the standard ones and /etc/ld.so.conf's.
void AddLibraryDirectories(std::vector<FsRule>* rules) {
  for (const char* dir : kStandardLibraryDirs) {
    Add(rules, dir, FsAccess::kReadExec, "standard library directory");
  }
  for (const std::string& dir : LdSoConfDirectories("/etc/ld.so.conf")) {
    Add(rules, dir, FsAccess::kReadExec, "ld.so.conf library directory");
  }
}

}  // namespace

std::string SharedMemoryDirectory(const std::string& control) {
  size_t slash = control.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/dev/shm";  // a POSIX name
  return control.substr(0, slash);
}

std::vector<std::string> LdSoConfDirectories(const std::string& conf_path) {
  std::vector<std::string> dirs;
  std::ifstream conf(conf_path);
  std::string line;
  while (std::getline(conf, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream in(line);
    std::string word;
    if (!(in >> word)) continue;
    if (word == "include") {
      std::string pattern;
      while (in >> pattern) {
        if (pattern[0] != '/') pattern = Dirname(conf_path) + "/" + pattern;
        glob_t g{};
        if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
          for (size_t i = 0; i < g.gl_pathc; ++i) {
            // One level: the files included by the top file do not include further ones on
            // any distribution we know, and a loop must not be possible.
            std::ifstream inc(g.gl_pathv[i]);
            std::string l;
            while (std::getline(inc, l)) {
              l = l.substr(0, l.find('#'));
              std::istringstream li(l);
              std::string d;
              if (li >> d && d[0] == '/') dirs.push_back(d);
            }
          }
        }
        ::globfree(&g);
      }
    } else if (word[0] == '/') {
      dirs.push_back(word);
    }
  }
  return dirs;
}

std::vector<FsRule> CudaFsRules() {
  std::vector<FsRule> rules;
  // The driver's character devices: nvidiactl, nvidia0..N, nvidia-uvm, nvidia-uvm-tools,
  // nvidia-modeset; open read-write and driven by ioctl (ABI >= 5 polices ioctl on devices).
  if (DIR* dev = ::opendir("/dev")) {
    while (dirent* e = ::readdir(dev)) {
      std::string name = e->d_name;
      if (StartsWith(name, "nvidia")) {
        Add(&rules, "/dev/" + name, FsAccess::kDevice, "CUDA driver device");
      }
    }
    ::closedir(dev);
  }
  // /dev/nvidia-caps (a directory, found above when present) holds MIG capability devices.
  Add(&rules, "/proc/driver/nvidia", FsAccess::kRead, "CUDA driver and NVML: GPU information");
  Add(&rules, "/proc/devices", FsAccess::kRead, "CUDA driver: device numbers (nvidia-uvm)");
  return rules;
}

std::vector<FsRule> WorkerFsRules(const std::string& control) {
  std::vector<FsRule> rules;
  const std::string exe = Canonical(Executable());
  const std::string exe_dir = Dirname(exe);
  if (!exe.empty()) Add(&rules, exe, FsAccess::kReadExec, "the worker executable");
  const std::vector<std::string> mapped = MappedFiles();
  for (const std::string& file : mapped) {
    std::string path = Canonical(file);
    // Beside the executable (a build tree, a bin directory) only the mapped file itself.
    if (path == exe) continue;
    if (Dirname(path) == exe_dir) {
      Add(&rules, path, FsAccess::kReadExec, "mapped beside the executable");
    } else {
      Add(&rules, Dirname(path), FsAccess::kReadExec, "directory of a mapped library");
    }
  }
  // Where the mapped libraries (and the executable) look for the ones they load later.
  for (const std::string& file : mapped) {
    for (const std::string& dir : ElfRunPaths(file)) {
      if (Canonical(dir) != exe_dir) Add(&rules, dir, FsAccess::kReadExec, "run path of " + file);
    }
  }
  AddLibraryDirectories(&rules);
  if (const char* llp = std::getenv("LD_LIBRARY_PATH")) {
    std::istringstream in(llp);
    std::string dir;
    while (std::getline(in, dir, ':')) {
      // An empty entry means the current directory: never granted.
      if (!dir.empty() && dir[0] == '/') Add(&rules, dir, FsAccess::kReadExec, "LD_LIBRARY_PATH");
    }
  }
  Add(&rules, "/etc/ld.so.cache", FsAccess::kRead, "dynamic loader cache");
  Add(&rules, "/etc/localtime", FsAccess::kRead, "log time stamps");
  Add(&rules, "/usr/share/zoneinfo", FsAccess::kRead, "log time stamps");
  // Read-write: the CUDA driver names its threads by writing /proc/self/task/N/comm and fails to
  // start (error 304) when it cannot (seen on an H200 in the private root). Every file there that
  // takes a write acts on the worker itself.
  Add(&rules, "/proc/self", FsAccess::kReadWrite, "own telemetry, own thread names");
  Add(&rules, "/proc/thread-self", FsAccess::kReadWrite, "own threads (the main thread's, named)");
  Add(&rules, "/proc/stat", FsAccess::kRead, "CPU counts and times (OpenMP, telemetry)");
  Add(&rules, "/proc/sys", FsAccess::kRead, "kernel limits (read-only tunables)");
  Add(&rules, "/proc/cpuinfo", FsAccess::kRead, "CPU features (LibTorch kernels)");
  Add(&rules, "/proc/meminfo", FsAccess::kRead, "memory size (allocators)");
  Add(&rules, "/sys", FsAccess::kRead, "CPU topology, PCI devices (OpenMP, CUDA, NVML)");
  Add(&rules, "/dev/null", FsAccess::kReadWrite, "the null device");
  Add(&rules, "/dev/zero", FsAccess::kRead, "the zero device");
  Add(&rules, "/dev/urandom", FsAccess::kRead, "random seeds");
  Add(&rules, "/dev/random", FsAccess::kRead, "random seeds");
  for (FsRule& r : CudaFsRules()) rules.push_back(std::move(r));
  if (!control.empty()) {  // none for the face detector, which talks through pipes alone
    Add(&rules, SharedMemoryDirectory(control), FsAccess::kReadWrite,
        "shared memory with the supervisor");
  }
  return WithoutRedundantRules(std::move(rules));
}

std::vector<FsRule> MediaToolFsRules(const std::string& program,
                                     const std::vector<std::string>& reads,
                                     const std::vector<std::string>& writes) {
  std::vector<FsRule> rules;
  Add(&rules, Canonical(program), FsAccess::kReadExec, "the program");
  // A wrapper script's interpreter and the programs it runs (each as confined as it is).
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    Add(&rules, dir, FsAccess::kReadExec, "programs a wrapper runs");
  }
  AddLibraryDirectories(&rules);
  Add(&rules, "/etc/ld.so.cache", FsAccess::kRead, "dynamic loader cache");
  Add(&rules, "/etc/localtime", FsAccess::kRead, "time stamps");
  Add(&rules, "/usr/share/zoneinfo", FsAccess::kRead, "time stamps");
  Add(&rules, "/proc/cpuinfo", FsAccess::kRead, "CPU features");
  Add(&rules, "/proc/self", FsAccess::kRead, "own status");
  Add(&rules, "/sys/devices/system/cpu", FsAccess::kRead, "CPU count (threads)");
  Add(&rules, "/dev/null", FsAccess::kReadWrite, "the null device");
  Add(&rules, "/dev/urandom", FsAccess::kRead, "random seeds");
  for (const std::string& path : reads) Add(&rules, path, FsAccess::kRead, "its input");
  for (const std::string& path : writes) Add(&rules, path, FsAccess::kOutput, "its output");
  return WithoutRedundantRules(std::move(rules));
}

std::vector<FsRule> GpuBuilderFsRules(const std::vector<std::string>& reads,
                                      const std::vector<std::string>& writes) {
  std::vector<FsRule> rules;
  // The system's programs, libraries and headers (an interpreter, a C++ compiler and its linker,
  // CUDA's): read and run, never written.
  for (const char* dir : {"/usr", "/opt"}) Add(&rules, dir, FsAccess::kReadExec, "the system");
  AddLibraryDirectories(&rules);
  Add(&rules, "/etc", FsAccess::kRead, "system settings");
  Add(&rules, "/proc/cpuinfo", FsAccess::kRead, "CPU features");
  Add(&rules, "/proc/meminfo", FsAccess::kRead, "memory size");
  Add(&rules, "/proc/stat", FsAccess::kRead, "CPU counts");
  Add(&rules, "/proc/sys", FsAccess::kRead, "kernel limits (read-only tunables)");
  // Read-write as for a worker: the CUDA driver names its threads (/proc/self/task/N/comm) and
  // does not start when it cannot (torch.cuda.is_available() false in the builder).
  Add(&rules, "/proc/self", FsAccess::kReadWrite, "own status, own thread names");
  Add(&rules, "/proc/thread-self", FsAccess::kReadWrite, "own threads");
  Add(&rules, "/sys", FsAccess::kRead, "devices (CPU count, the GPU's PCI facts)");
  Add(&rules, "/dev/null", FsAccess::kReadWrite, "the null device");
  Add(&rules, "/dev/zero", FsAccess::kRead, "zero pages");
  Add(&rules, "/dev/urandom", FsAccess::kRead, "random seeds");
  for (FsRule& r : CudaFsRules()) rules.push_back(std::move(r));
  for (const std::string& path : reads) Add(&rules, path, FsAccess::kReadExec, "its input");
  for (const std::string& path : writes) {
    // Written and executable: Triton and Inductor load the libraries they build there.
    Add(&rules, path, FsAccess::kTempFiles, "its own folder");
    Add(&rules, path, FsAccess::kReadExec, "libraries it builds");
  }
  return WithoutRedundantRules(std::move(rules));
}

std::vector<FsRule> WithoutRedundantRules(std::vector<FsRule> rules) {
  auto beneath = [](const std::string& path, const std::string& dir) {
    if (dir == "/") return true;
    return path == dir || (StartsWith(path, dir) && path[dir.size()] == '/');
  };
  std::vector<FsRule> kept;
  for (size_t i = 0; i < rules.size(); ++i) {
    // A rule named through a symbolic link stays: the private root recreates that link.
    bool redundant = false;
    if (!rules[i].named.empty()) {
      kept.push_back(rules[i]);
      continue;
    }
    for (size_t j = 0; j < rules.size() && !redundant; ++j) {
      if (i == j || rules[j].access != rules[i].access) continue;
      // Beneath another rule's path, or the same path listed earlier.
      redundant = rules[i].path == rules[j].path ? j < i : beneath(rules[i].path, rules[j].path);
    }
    if (!redundant) kept.push_back(rules[i]);
  }
  return kept;
}

}  // namespace framemill
