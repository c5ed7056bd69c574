// What a sandboxed worker may touch in the file system: the Landlock rules
// (worker/sandbox/landlock.h) derived from the process as it is when the sandbox goes on.
//
//   read+exec  the directories of every library mapped now (LibTorch, CUDA, cuDNN ...), so that
//              libraries they load later from beside them (cuDNN's and cuBLAS's sub-libraries,
//              libcuda, libnvidia-ml) load too; the run paths those libraries carry (a pip
//              LibTorch finds NVRTC and other late CUDA libraries so: elf_runpath.h);
//              the standard library directories, those of /etc/ld.so.conf and of
//              LD_LIBRARY_PATH. The worker's own executable: that file alone, not its
//              directory (a build tree holds other things).
//   read       /etc/ld.so.cache, the time zone, /proc/cpuinfo, /proc/meminfo, /proc/stat,
//              /proc/sys (read-only tunables), /sys (CPU topology, PCI devices), /dev/urandom.
//   read-write /proc/self and /proc/thread-self: the worker's own telemetry, and its own thread
//              names, which the CUDA driver writes (it fails to start if it cannot).
//   device     CUDA: every /dev/nvidia* node (read, write, ioctl); /proc/driver/nvidia and
//              /proc/devices read.
//   read-write /dev/null, and the shared-memory directory: the directory that holds the control
//              object the worker was given, or /dev/shm for a bare POSIX name. The supervisor
//              makes it the worker's own scope (common/shared_memory.h): its control object and
//              a link of its job's arena, nothing of another worker or job.
// The same rules build the worker's private root (worker/sandbox/mount_namespace.h), where a CUDA
// worker, which cannot have Landlock's file rules, is confined by what is not there.
// Nothing else: no home directory, no /tmp, no spool, no input or output, no other model (the
// worker's model comes as an open descriptor). Nothing may be created, removed or renamed
// anywhere. CUDA's JIT cache (~/.nv/ComputeCache) is not writable: the worker runs with
// CUDA_CACHE_DISABLE=1 (see worker/sandbox/sandbox.h).
#pragma once

#include <string>
#include <vector>

#include "worker/sandbox/landlock.h"

namespace framemill {

// The rules for a worker whose control object is `control` (a path, or a bare shared-memory name;
// "" = no shared memory at all, as for framemill-face-detector). Reads /proc/self/maps,
// /etc/ld.so.conf and the environment; the caller applies them.
std::vector<FsRule> WorkerFsRules(const std::string& control);

// The rules for a program that parses hostile media (ffprobe, ffmpeg;
// worker/sandbox/confine_main.cpp): run `program`, the programs of /usr/bin, /bin and
// /usr/local/bin (a wrapper script's interpreter; whatever runs stays confined alike) and the
// libraries of the standard directories; read the loader's cache and time zone, CPU facts,
// /dev/null and /dev/urandom, and each of `reads` (its inputs: /proc/self/fd/N names the file
// itself; a directory, everything beneath it); write, truncate and read each of `writes` (its
// outputs, files opened for it). Nothing else is readable (no spool, no home, no other job's
// files), nothing else writable but /dev/null, nothing can be created anywhere.
std::vector<FsRule> MediaToolFsRules(const std::string& program,
                                     const std::vector<std::string>& reads,
                                     const std::vector<std::string>& writes = {});

// The rules for a program that drives a GPU and runs a compiler (the engine builder,
// supervisor/engines/engine_build.h), made into a private root (mount_namespace.h) since CUDA
// does not work under Landlock's file rules: /usr, /opt, the library directories, /etc, /sys and
// a few /proc files read-only (and executable where programs and libraries live), the CUDA
// driver's devices, each of `reads` read-only (a directory with what is beneath it: the
// interpreter's module paths, the script), each of `writes` read-write and executable, with
// files created there (its build folder, where the compilers' libraries are loaded from). No
// home, no spool, no other job's files; /tmp and /dev/shm its own. /proc holds the program's own
// entries alone (mount_namespace.h), so a child process that drives the GPU does not start there
// (its /proc/self is the program's): the program uses it itself.
std::vector<FsRule> GpuBuilderFsRules(const std::vector<std::string>& reads,
                                      const std::vector<std::string>& writes);

// The CUDA driver's needs alone (part of WorkerFsRules), kept apart so that what a GPU machine
// needs is in one place: /dev/nvidia*, /dev/nvidia-caps, /proc/driver/nvidia, /proc/devices.
std::vector<FsRule> CudaFsRules();

// The shared-memory directory for a control object: its directory for a path ("/dev/shm/x/ctl"
// -> "/dev/shm/x"), /dev/shm for a bare name ("framemill.1.2.ctl" or "/framemill.1.2.ctl").
std::string SharedMemoryDirectory(const std::string& control);

// The directories listed by an ld.so.conf-style file, following its `include` lines (globs).
std::vector<std::string> LdSoConfDirectories(const std::string& conf_path);

// Drops rules whose path lies beneath another rule's path with the same access, and duplicates;
// a rule named through a symbolic link (FsRule::named) always stays.
std::vector<FsRule> WithoutRedundantRules(std::vector<FsRule> rules);

}  // namespace framemill
