// The settings a framemill-worker process runs with, as one struct with one encoding that both
// programs share. The supervisor's worker pool (supervisor/workers/worker_pool.h) fills a
// WorkerLaunch and encodes it as the worker's command line, or, for a spare, as the spawn's part
// on the command line and the model's part in the load request (common/load_request.h); the worker
// (worker/worker_main.cpp) parses it back; the warm-worker key (supervisor/job/warm_key.h)
// compares the model's part as encoded.
//
// Encoding: "--key value" pairs, the argv after the program name, in the order below. Each part
// begins with "--launch-version N" (kWorkerLaunchVersion); a parser given another version refuses
// it. A command line without the version is read as this version (a person running the worker by
// hand). Every value is checked as it is parsed: an error (kInvalidConfig) names the key and the
// value, never a position.
//
// Pure functions; no descriptor is looked at here (whether a --*-fd is open is the worker's check).
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/shm_protocol.h"
#include "common/status.h"
#include "common/tile_setting.h"

namespace framemill {

// Bumped when a key changes its meaning or a required key is added.
inline constexpr int kWorkerLaunchVersion = 1;

struct WorkerLaunch {
  // --- Fixed when the process starts (the spawn's part; --channel and --device come again in a
  // load request).
  std::string control;  // --control: full path of the worker's control block (shared memory)
  int channel = -1;     // --channel: the supervisor's channel number, 0..65535
  int wake_fd = -1;     // --wake-fd: the worker's end of its wake-up socket pair (inherited), >= 3
  DeviceSetting device;       // --device: auto | cpu | cuda | cuda:N
  bool device_given = false;  // whether --device came (a command line must name it)
  std::string log_level = "info";                // --log-level
  WorkerSandbox sandbox = WorkerSandbox::kAuto;  // --sandbox: required | auto | off
  bool await_model = false;  // --await-model on|off: a spare; the model's part comes later

  // --- The model's part (a spare's load request carries it, with --channel and --device).
  int model_fd = -1;         // --model-fd: the model file, open read-only (inherited), >= 3
  std::string model_path;    // --model: tools only; the worker opens the file itself
  std::string model_label;   // --model-label: the model's name in messages (never opened)
  Precision precision = Precision::kFp32;                     // --precision
  ModelOptimization optimization = ModelOptimization::kAuto;  // --optimize
  TileSetting tile;                                           // --tile off|auto|SIZE:OVERLAP
  // --probe-size WxH (or N, a square) and --probe-batch: the input the worker probes its model
  // with; each side 1..2^20 pixels, the batch 1..kMaxBatch.
  int probe_width = static_cast<int>(kProbeSize), probe_height = static_cast<int>(kProbeSize);
  int probe_batch = 1;
  bool cudnn_autotune = false;  // --cudnn-autotune on|off
};

// Which part of a launch a list of arguments is.
enum class LaunchPart {
  kCommandLine,  // every key; --control, --channel, --wake-fd, --device and a model (--model-fd,
                 // --model, or --await-model on) required
  kLoadRequest,  // the model's keys, --channel and --device only; none required
};

// The spawn's part: version, control, channel, wake-fd, device, log level, sandbox, and
// "--await-model on" for a spare.
std::vector<std::string> EncodeSpawnPart(const WorkerLaunch& launch);
// The model's part: version, channel, label, precision, optimize, tile, probe size and batch,
// autotune; --model-fd when model_fd >= 0.
std::vector<std::string> EncodeModelPart(const WorkerLaunch& launch);
// A worker started with its model: the spawn's part then the model's.
std::vector<std::string> EncodeCommandLine(const WorkerLaunch& launch);
// A spare's load request: the model's part (model_fd must be -1: the descriptor travels beside
// it), then --device, the job's own name for it.
std::vector<std::string> EncodeLoadRequest(const WorkerLaunch& launch);

// Reads `arguments` (one part, as the encoders write it) over `*launch`, which keeps what they do
// not set. kInvalidConfig naming the key: an unknown key, a key without its value, a key not
// allowed in `part`, a value out of range, another version, or (kCommandLine) a required key
// missing.
Status ParseWorkerLaunch(const std::vector<std::string>& arguments, LaunchPart part,
                         WorkerLaunch* launch);

}  // namespace framemill
