// Every FRAMEMILL_* variable that `framemill` or `framemill-worker` reads from its environment,
// in one table (name, which program reads it, whether it is a setting, a diagnosis or for tests
// only, what it does), read once when the program starts. Code asks `Knob()` for a value and never
// calls getenv for a FRAMEMILL_* variable itself. The readers' version of the table, with the
// standard variables framemill honours beside it, is docs/service.md, "Environment variables".
//
// Standard variables (TMPDIR, HOME, XDG_CACHE_HOME, CACHE_DIRECTORY, CUDA_VISIBLE_DEVICES,
// LD_LIBRARY_PATH, SLURM_CONF, JOURNAL_STREAM) are not in the table: they are the system's and
// other programs' conventions, set for every program (the supervisor sets CUDA_VISIBLE_DEVICES for
// each worker it starts), and each is read where that convention applies.
//
// Thread safety: ReadKnobs() runs on the main thread before any other starts; from then on the
// snapshot is read-only and Knob() may be called from any thread. A program that never called
// ReadKnobs() (a test, a benchmark) reads the environment on the first Knob() call.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace framemill {

// One variable of the table; the order is the table's.
enum class EnvKnob {
  kConfig,
  kWorkerProfile,
  kWorkerOverlapChunks,
  kWorkerCpuAllocator,
  kWorkerConversion,
  kMediaNice,
  kSandboxDebug,
  kSandboxLayers,
  kSandboxExtraRead,
  kSandboxExtraWrite,
  kSandboxNoFs,
  kSandboxNoNet,
  kSandboxNoScopes,
  kSandboxMntnsNoPivot,
  kTestGpuLabels,
  kTestDecoderVerbose,
};

// Which program reads a variable (a worker inherits the supervisor's environment, so both are set
// where the supervisor starts).
enum class KnobReader { kSupervisor, kWorker };

// What a variable is for. kSetting: an operator's choice. kDiagnosis: narrowing a problem down on
// a machine, never needed to run. kTest: for the tests alone, never set on a service.
enum class KnobKind { kSetting, kDiagnosis, kTest };

struct EnvKnobInfo {
  EnvKnob knob;
  const char* name;  // "FRAMEMILL_..."
  KnobReader reader;
  KnobKind kind;
  const char* meaning;  // one line, for the log and for readers of the code
};

// The table: every entry, in the order of EnvKnob.
const EnvKnobInfo* EnvKnobTable(size_t* count);
const EnvKnobInfo& Info(EnvKnob knob);
const char* Name(KnobKind kind);  // "setting", "diagnosis", "test only"

// Reads every variable of the table from the environment into the snapshot (again, where it was
// read before: a unit test that sets a variable calls it after setenv).
void ReadKnobs();
// Logs one line per variable of the table that `reader` reads and that is set (a setting at debug
// level, the others at info), with its value, kind and meaning. Called once, after InitLogging.
void LogSetKnobs(KnobReader reader);

// The variable's value as read; nullopt when it is not set (set to "" is a value).
const std::optional<std::string>& Knob(EnvKnob knob);
// Whether the variable is set to exactly "1".
bool KnobIsOne(EnvKnob knob);

}  // namespace framemill
