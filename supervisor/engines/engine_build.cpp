#include "supervisor/engines/engine_build.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/log.h"
#include "supervisor/process/subprocess.h"

namespace framemill {
namespace {

std::string SelfDir() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  return DirName(self);
}

// The last `n` lines of `text`, joined by " | ".
std::string LastLines(const std::string& text, size_t n) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : " | ") + lines[i];
  }
  return out;
}

// What `python` says of itself: its torch's version, then its module paths, a line each.
Result<std::vector<std::string>> AskPython(const std::string& python) {
  if (FindExecutable(python).empty()) {
    return Status(StatusCode::kIo, "no " + python + " on PATH (a Python with torch builds them)");
  }
  Result<CommandOutput> out = RunAndCapture(
      {python, "-c",
       "import sys, torch\nprint(torch.__version__)\nprint('\\n'.join(p for p in sys.path if p))"});
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return Status(StatusCode::kIo,
                  python + " has no torch (`import torch`: " + LastLines(out->err, 1) + ")");
  }
  std::vector<std::string> lines;
  std::stringstream in(out->out);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  if (lines.empty()) return Status(StatusCode::kIo, python + " printed no torch version");
  return lines;
}

Status CopyModel(int fd, const std::string& to) {
  std::ifstream in(FdPath(fd), std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) return Status(StatusCode::kIo, "the model could not be read");
  return AtomicWriteFile(to, bytes.str(), 0600);
}

}  // namespace

std::string ExportScriptPath() {
  const std::string dir = SelfDir();
  if (dir.empty()) return "";
  for (const std::string& p :
       {dir + "/../share/framemill/export-pt2.py", dir + "/../scripts/export-pt2.py"}) {
    if (PathExists(p)) return ResolvePath(p);
  }
  return "";
}

namespace {

// Why no engine can be built here (an error), or `python`'s torch version and module paths.
Result<std::vector<std::string>> CheckBuilder(const std::string& python, const EngineKey& key) {
  if (ExportScriptPath().empty()) {
    return Status(StatusCode::kIo,
                  "export-pt2.py is not installed beside framemill (<prefix>/share/framemill)");
  }
  if (key.compiler == "none") return Status(StatusCode::kIo, "no C++ compiler (c++) on PATH");
  Result<std::vector<std::string>> said = AskPython(python);
  if (!said.ok()) return said.status();
  const std::string version = (*said)[0].substr(0, (*said)[0].find('+'));
  if (version != key.torch) {
    return Status(StatusCode::kIo, python + "'s torch is " + (*said)[0] +
                                       " and framemill-worker's LibTorch " + key.torch +
                                       ": a package loads only into the torch that made it");
  }
  return said;
}

}  // namespace

Result<CachedEngine> BuildEngine(const std::string& cache_dir, const EngineBuildRequest& r) {
  Result<std::vector<std::string>> paths = CheckBuilder(r.python, r.key);
  if (!paths.ok()) {
    return Status(StatusCode::kIo, "no engine can be built here: " + paths.status().message());
  }
  FM_RETURN_IF_ERROR(MakeDirectories(cache_dir));
  ::chmod(cache_dir.c_str(), 0700);
  Result<UniqueFd> lock = LockEngineKey(cache_dir, r.key, r.stop);
  if (!lock.ok()) return lock.status();
  {  // built meanwhile by the build waited for
    UniqueFd package;
    int scale = 0;
    Result<std::optional<CachedEngine>> there = FindEngine(cache_dir, r.key, &package, &scale);
    if (there.ok() && there->has_value()) return **there;
  }
  std::string folder = cache_dir + "/.build-XXXXXX";
  if (::mkdtemp(folder.data()) == nullptr) {
    return Status(StatusCode::kIo, folder + ": " + std::strerror(errno));
  }
  auto fail = [&](Status s) {
    (void)RemoveTree(folder);
    return s;
  };
  Status copied = CopyModel(r.model_fd, folder + "/model.pt");
  if (!copied.ok()) return fail(copied);
  for (const char* sub : {"tmp", "cache", "home"}) ::mkdir((folder + "/" + sub).c_str(), 0700);
  const std::string script = ExportScriptPath();
  std::vector<std::string> argv = {
      "/usr/bin/env", "TMPDIR=" + folder + "/tmp", "HOME=" + folder + "/home",
      "XDG_CACHE_HOME=" + folder + "/cache",
      "TORCHINDUCTOR_CACHE_DIR=" + folder + "/cache/inductor",
      "TRITON_CACHE_DIR=" + folder + "/cache/triton", "CUDA_CACHE_PATH=" + folder + "/cache/nv",
      "CUDA_VISIBLE_DEVICES=" + std::to_string(r.gpu_index), "PYTHONDONTWRITEBYTECODE=1",
      // Inductor compiles in this process: a child's CUDA does not start in the private root.
      "TORCHINDUCTOR_COMPILE_THREADS=1", FindExecutable(r.python), script, "--torchscript",
      folder + "/model.pt", folder + "/engine.pt2", "--shape",
      std::to_string(r.key.width) + "x" + std::to_string(r.key.height), "--batch",
      std::to_string(r.key.batch), "--precision", Name(r.key.precision), "--device", "cuda",
      "--check-here", "--max-autotune"};
  if (r.write_check_frames) {
    const std::string frames = folder + "/frames.rgb";
    Status wrote = r.write_check_frames(frames);
    if (!wrote.ok()) return fail(wrote.WithContext("the frames to check the engine on"));
    argv.insert(argv.end(), {"--check-frames", frames});
  }
  if (r.sandbox != WorkerSandbox::kOff) {
    std::vector<std::string> confine = {ConfineBinaryPath(), "--mode",
                                        r.sandbox == WorkerSandbox::kRequired ? "required" : "auto",
                                        "--gpu"};
    for (size_t i = 1; i < paths->size(); ++i) {
      if (PathExists((*paths)[i])) confine.insert(confine.end(), {"--read", (*paths)[i]});
    }
    // A virtual environment's own folder (its pyvenv.cfg), two above its python.
    const std::string venv = DirName(DirName(FindExecutable(r.python)));
    if (venv != "/" && venv != "/usr") confine.insert(confine.end(), {"--read", venv});
    confine.insert(confine.end(), {"--read", DirName(script), "--write", folder, "--"});
    argv.insert(argv.begin(), confine.begin(), confine.end());
  }
  spdlog::info("building a compiled engine of {} for {} (engine {}): {}", r.model_label,
               r.key.Describe(), r.key.Id(), folder);
  const uint64_t t0 = MonotonicMs();
  Result<CommandOutput> out = RunAndCapture(argv, {}, r.stop);
  const double seconds = (MonotonicMs() - t0) / 1000.0;
  if (!out.ok()) return fail(out.status());
  (void)AtomicWriteFile(folder + "/build.log", out->out + out->err, 0600);
  if (out->exit_code != 0 || !PathExists(folder + "/engine.pt2")) {
    return fail(Status(
        StatusCode::kModelInvalid,
        "the engine build of " + r.model_label + " failed (exit " + std::to_string(out->exit_code) +
            ", " + std::to_string(static_cast<int>(seconds)) + " s): " + LastLines(out->err, 6)));
  }
  for (const char* sub : {"model.pt", "frames.rgb", "tmp", "cache", "home"}) {
    (void)RemoveTree(folder + "/" + sub);
  }
  Result<CachedEngine> kept = KeepEngine(cache_dir, folder, r.key, seconds);
  if (!kept.ok()) return fail(kept.status());
  spdlog::info("compiled engine {} built in {:.1f} s and kept: {}", kept->id, seconds,
               kept->folder);
  return kept;
}

}  // namespace framemill
