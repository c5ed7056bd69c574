#include "common/env_knobs.h"

#include <array>
#include <cstdlib>

namespace framemill {
namespace {

constexpr KnobReader kSupervisor = KnobReader::kSupervisor;
constexpr KnobReader kWorker = KnobReader::kWorker;
constexpr KnobKind kSetting = KnobKind::kSetting;
constexpr KnobKind kDiagnosis = KnobKind::kDiagnosis;
constexpr KnobKind kTest = KnobKind::kTest;

constexpr std::array<EnvKnobInfo, 16> kTable = {{
    {EnvKnob::kConfig, "FRAMEMILL_CONFIG", kSupervisor, kSetting,
     "the config file when no --config names one"},
    {EnvKnob::kWorkerProfile, "FRAMEMILL_WORKER_PROFILE", kWorker, kDiagnosis,
     "set and not 0: each worker logs its stages' time per frame"},
    {EnvKnob::kWorkerOverlapChunks, "FRAMEMILL_WORKER_OVERLAP_CHUNKS", kWorker, kDiagnosis,
     "0: chunks never overlap; always: every result is held, also on the CPU"},
    {EnvKnob::kWorkerCpuAllocator, "FRAMEMILL_WORKER_CPU_ALLOCATOR", kWorker, kDiagnosis,
     "system: LibTorch's own CPU allocator instead of the worker's cache of blocks"},
    {EnvKnob::kWorkerConversion, "FRAMEMILL_WORKER_CONVERSION", kWorker, kDiagnosis,
     "tensor: a CUDA worker converts frames in tensor ops, not its conversion kernels"},
    {EnvKnob::kMediaNice, "FRAMEMILL_MEDIA_NICE", kSupervisor, kDiagnosis,
     "1-19: the job's decoding, encoding and joining ffmpeg run this much nicer than the workers"},
    {EnvKnob::kSandboxDebug, "FRAMEMILL_SANDBOX_DEBUG", kWorker, kDiagnosis,
     "1: every sandbox rule logged at info level"},
    {EnvKnob::kSandboxLayers, "FRAMEMILL_SANDBOX_LAYERS", kWorker, kDiagnosis,
     "a comma list of netns, mntns, rlimits, landlock, seccomp: only those layers applied"},
    {EnvKnob::kSandboxExtraRead, "FRAMEMILL_SANDBOX_EXTRA_READ", kWorker, kDiagnosis,
     "colon-separated paths the sandbox lets the worker read besides its rules"},
    {EnvKnob::kSandboxExtraWrite, "FRAMEMILL_SANDBOX_EXTRA_WRITE", kWorker, kDiagnosis,
     "colon-separated paths given device and temp-file rights besides the rules"},
    {EnvKnob::kSandboxNoFs, "FRAMEMILL_SANDBOX_NO_FS", kWorker, kDiagnosis,
     "1: Landlock without file rules"},
    {EnvKnob::kSandboxNoNet, "FRAMEMILL_SANDBOX_NO_NET", kWorker, kDiagnosis,
     "1: Landlock without its TCP rules"},
    {EnvKnob::kSandboxNoScopes, "FRAMEMILL_SANDBOX_NO_SCOPES", kWorker, kDiagnosis,
     "1: Landlock without its scopes (abstract sockets, signals)"},
    {EnvKnob::kSandboxMntnsNoPivot, "FRAMEMILL_SANDBOX_MNTNS_NO_PIVOT", kWorker, kDiagnosis,
     "1: the private root is built but the old root stays"},
    {EnvKnob::kTestGpuLabels, "FRAMEMILL_TEST_GPU_LABELS", kSupervisor, kTest,
     "1: service_gpus are labels, jobs scheduled on them but workers not pinned"},
    {EnvKnob::kTestDecoderVerbose, "FRAMEMILL_TEST_DECODER_VERBOSE", kSupervisor, kTest,
     "1: the decoding ffmpeg runs at -v verbose (its frame count in decoder.log)"},
}};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (static_cast<size_t>(kTable[i].knob) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kTable lists every EnvKnob in the enum's order");

using Snapshot = std::array<std::optional<std::string>, kTable.size()>;

void Fill(Snapshot& values) {
  for (size_t i = 0; i < kTable.size(); ++i) {
    const char* v = std::getenv(kTable[i].name);
    values[i] = v == nullptr ? std::nullopt : std::optional<std::string>(v);
  }
}

Snapshot& Values() {
  static Snapshot values = [] {
    Snapshot s;
    Fill(s);
    return s;
  }();
  return values;
}

}  // namespace

const EnvKnobInfo* EnvKnobTable(size_t* count) {
  *count = kTable.size();
  return kTable.data();
}

const EnvKnobInfo& Info(EnvKnob knob) { return kTable[static_cast<size_t>(knob)]; }

const char* Name(KnobKind kind) {
  switch (kind) {
    case KnobKind::kSetting:
      return "setting";
    case KnobKind::kDiagnosis:
      return "diagnosis";
    case KnobKind::kTest:
      return "test only";
  }
  return "?";
}

void ReadKnobs() { Fill(Values()); }

const std::optional<std::string>& Knob(EnvKnob knob) {
  return Values()[static_cast<size_t>(knob)];
}

bool KnobIsOne(EnvKnob knob) {
  const std::optional<std::string>& v = Knob(knob);
  return v && *v == "1";
}

}  // namespace framemill
