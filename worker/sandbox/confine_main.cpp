// framemill-confine: runs a program that parses hostile media (ffprobe, ffmpeg) confined, so that
// a decoder bug costs a job and never reaches the service's files.
//
//   framemill-confine --mode required|auto [--read PATH]... [--write PATH]... -- PROGRAM [ARG]...
//
// Before it executes PROGRAM (which keeps every descriptor it was given): no_new_privs, no core
// files, an empty network namespace where the system allows one, then Landlock with
// MediaToolFsRules (sandbox_policy.h): PROGRAM and the standard libraries, a few system files and
// each --read PATH (an input, /proc/self/fd/N; a directory with what is beneath it) may be read,
// each --write PATH (an output file opened for it) written and truncated, nothing else written
// but /dev/null and nothing created; no TCP socket can bind or connect, abstract UNIX sockets and
// signals stay inside.
// The rules hold for PROGRAM and anything it runs. No seccomp filter: the worker's forbids
// executing a program, which this one exists to do.
//
// --gpu: for a program that drives a GPU (the engine builder, supervisor/engines/engine_build.h),
// which CUDA forbids Landlock's file rules for: the files are confined by a private root instead
// (worker/sandbox/mount_namespace.h) made from GpuBuilderFsRules (the system read-only, the CUDA
// devices, each --read PATH read-only, each --write PATH a folder it may create files in), in the
// user namespace of the empty network one; Landlock then polices TCP and the scopes alone.
//
// required: a layer that cannot be put in place ends it with exit code 126 and the reason on
// stderr, PROGRAM never runs. auto: it runs with what could be put in place, and one line on
// stderr names what is missing. Exit code 127: PROGRAM could not be executed.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include "worker/sandbox/landlock.h"
#include "worker/sandbox/mount_namespace.h"
#include "worker/sandbox/sandbox.h"
#include "worker/sandbox/sandbox_policy.h"

namespace {

constexpr int kUsage = 2;
constexpr int kNotConfined = 126;
constexpr int kNotExecuted = 127;

int Usage(const char* why) {
  std::fprintf(stderr,
               "framemill-confine: %s\nusage: framemill-confine --mode required|auto [--gpu] "
               "[--read PATH]... [--write PATH]... -- PROGRAM [ARG]...\n",
               why);
  return kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  std::vector<std::string> reads, writes;
  bool gpu = false;
  int program = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      program = i + 1;
      break;
    }
    if (arg == "--gpu") {
      gpu = true;
      continue;
    }
    if (i + 1 >= argc) return Usage((arg + " has no value").c_str());
    if (arg == "--mode") {
      mode = argv[++i];
    } else if (arg == "--read") {
      reads.push_back(argv[++i]);
    } else if (arg == "--write") {
      writes.push_back(argv[++i]);
    } else {
      return Usage(("unknown argument " + arg).c_str());
    }
  }
  if (mode != "required" && mode != "auto") return Usage("--mode is required or auto");
  if (program < 0 || program >= argc) return Usage("no program after --");

  std::vector<std::string> missing;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    missing.push_back(std::string("no_new_privs (") + std::strerror(errno) + ")");
  }
  const bool no_new_privs = missing.empty();
  const rlimit no_core{0, 0};
  (void)::setrlimit(RLIMIT_CORE, &no_core);
  const std::string netns = framemill::EnterEmptyNetwork();  // extra: Landlock denies TCP
  if (gpu) {
    // The private root needs the user namespace just entered; its rules read the real paths.
    framemill::Result<framemill::PrivateRoot> root =
        netns.empty() ? framemill::EnterPrivateRoot(framemill::GpuBuilderFsRules(reads, writes))
                      : framemill::Status(framemill::StatusCode::kIo, "needs a user namespace");
    if (!root.ok()) missing.push_back("mntns (" + root.status().message() + ")");
  }
  framemill::Result<framemill::LandlockResult> landlock =
      !no_new_privs ? framemill::Status(framemill::StatusCode::kIo, "needs no_new_privs")
      : gpu         ? framemill::ApplyLandlock({}, /*file_rules=*/false)
            : framemill::ApplyLandlock(framemill::MediaToolFsRules(argv[program], reads, writes));
  if (!landlock.ok()) {
    missing.push_back("landlock (" + landlock.status().message() + ")");
  } else if (!landlock->file_system && !gpu) {
    missing.push_back("landlock file rules (off by FRAMEMILL_SANDBOX_NO_FS)");
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    if (mode == "required") {
      std::fprintf(stderr, "framemill-confine: cannot confine %s: missing %s\n", argv[program],
                   list.c_str());
      return kNotConfined;
    }
    std::fprintf(stderr, "framemill-confine: warning: %s runs without %s%s\n", argv[program],
                 list.c_str(), netns.empty() ? "" : (", no netns (" + netns + ")").c_str());
  }
  ::execv(argv[program], argv + program);
  std::fprintf(stderr, "framemill-confine: cannot execute %s: %s\n", argv[program],
               std::strerror(errno));
  return kNotExecuted;
}
