// Helpers for the integration tests: run the real binaries, make test videos with ffmpeg, decode
// outputs frame by frame. Every test works in its own scratch directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/process/subprocess.h"

namespace framemill::test {

// A finished command: exit code, stdout, stderr (the supervisor's own type).
using RunResult = framemill::CommandOutput;

// A fresh, empty directory for the calling test (under the build tree).
std::string ScratchDir(const std::string& test_name);

// The path of example model `name`, exported once per test binary run.
std::string ModelPath(const std::string& name);

// A copy of example model `name` inside `dir`: worker processes of the test's job then carry
// `dir` in their command line, which ProcessesMentioning(dir) finds.
std::string ModelCopy(const std::string& name, const std::string& dir);

// The real-footage clip `name` (shared/testdata/SOURCES.md), read in place from the shared test
// data beside the checkout ($FRAMEMILL_TESTDATA overrides); the calling test is skipped, with the
// reason, where it is absent. No clip is copied into the repository.
std::string TestClip(const std::string& name);

using Env = std::vector<std::pair<std::string, std::string>>;

// A `framemill run` started in the background.
struct BackgroundJob {
  int pid = -1;
  std::string out_path, err_path;
};

// The encoder of a test job that names none: x264 `ultrafast`, not the default `medium`. Most
// tests check frames, order, times and files, which the preset does not change; the tests with
// the largest frames take a quarter less CPU with it (BENCHMARKS.md, "The test suite on 2
// cores"). Tests that measure the picture against a floor name their encoder.
inline nlohmann::json TestEncoder() { return {{"preset", "ultrafast"}}; }
// A test job that names no worker count runs one worker, not the product's default two: a second
// worker is a second LibTorch start (0.8 s of CPU beside a small job's 2.5 s) and most tests
// check frames, files and faults that one worker shows as well. Tests of several workers (order,
// recovery beside a busy worker, warm pools) name their count.
constexpr int kTestWorkers = 1;
// `job` with TestEncoder() and kTestWorkers added where neither it nor the config's defaults
// name an encoder or a worker count (workers or workers_per_gpu).
nlohmann::json WithTestDefaults(nlohmann::json job, const nlohmann::json& config = nullptr);

// Writes `job` to dir/<name>.json and starts `framemill run` on it with `env` added to its
// environment (and `config` as its config file when not null).
BackgroundJob StartJob(const std::string& dir, const nlohmann::json& job, const Env& env = {},
                       const nlohmann::json& config = nullptr, const std::string& name = "job");
// Kills (SIGKILL) and reaps a background process at scope exit unless it was waited for: a
// failing test must not leave a service running.
struct KillOnExit {
  const BackgroundJob& job;
  ~KillOnExit();
};

// Starts `framemill ARGS...` in the background with `env` added, output to dir/<name>.stdout
// and .stderr.
BackgroundJob StartFramemill(const std::string& dir, const std::vector<std::string>& args,
                             const Env& env, const std::string& name);

// Waits for it (at most `timeout_s`; then SIGKILLs it and returns exit code -1).
RunResult WaitJob(const BackgroundJob& job, double timeout_s = 600);

// StartJob + WaitJob.
RunResult RunJob(const std::string& dir, const nlohmann::json& job,
                 const nlohmann::json& config = nullptr, const Env& env = {});

// Ends the calling test as skipped: prints why and exits with kSkipExitCode, which ctest reports
// as "Skipped" (SKIP_RETURN_CODE). For a test that cannot run here, never a quiet return.
inline constexpr int kSkipExitCode = 77;
[[noreturn]] void SkipTest(const std::string& reason);

// A job of one worker on the test device whose output is lossless (x264 crf 0, 4:4:4), so that
// equal model output gives equal decoded frames; tests add their own keys.
nlohmann::json LosslessJob(const std::string& input, const std::string& output,
                           const std::string& model);

// The device the tests run models on: $FRAMEMILL_TEST_DEVICE, default "cpu".
std::string TestDevice();

// The lines of a job's memory timeline (<output>.timeline.jsonl).
std::vector<nlohmann::json> ReadTimeline(const std::string& output);

// Worker processes whose command line mentions `dir` (see ModelCopy).
std::vector<int> WorkerPids(const std::string& dir);

// A hash of every decoded frame of `path`, in order (to compare two outputs frame by frame).
std::vector<uint64_t> FrameHashes(const std::string& path, int width, int height);

// Indices read from every frame of an index video (MakeIndexVideo) after processing.
std::vector<int> FrameIndices(const std::string& path, int width, int height);

// How many of `indices` differ from 0, 1, 2, ... (and the count itself must match `frames`).
int OutOfPlace(const std::vector<int>& indices, int frames);

// Runs a command line through the shell, capturing stdout and stderr.
RunResult Shell(const std::string& command);

// A video whose frame i shows i as 16 large black/white blocks (4x4 grid, most significant bit
// first), so the index survives lossy compression. With `tone_hz` > 0 it has an AAC audio track
// of that sine tone, as long as the video.
void MakeIndexVideo(const std::string& path, int frames, int width, int height, int fps,
                    int tone_hz);

// Reads the index back from a decoded rgb24 frame; -1 when a block is neither black nor white.
int ReadFrameIndex(const uint8_t* rgb, int width, int height);

// Decodes the first video stream of `path` to rgb24 (every frame, no rate conversion) and calls
// `on_frame` for each. Returns the number of frames.
int64_t DecodeFrames(const std::string& path, int width, int height,
                     const std::function<void(const uint8_t*)>& on_frame);

// ffprobe -show_streams -show_format as JSON.
nlohmann::json Probe(const std::string& path);
// The first stream of `type` ("video", "audio") in a Probe() result, or null.
nlohmann::json FirstStream(const nlohmann::json& probe, const std::string& type);
// Frames in the first video stream, counted by decoding.
int64_t CountFrames(const std::string& path);

// framemill shared memory in /dev/shm left behind: the private directories (and the objects in
// them) whose creating process is gone, when this test process started it (StartFramemill) or is
// it (a job run in-process). (Those of live processes, say a benchmark running beside the tests,
// are not leftovers, nor are those of supervisors another test killed.)
std::vector<std::string> SharedMemoryObjects();
// Every framemill shared-memory directory and object in /dev/shm, live or not.
std::vector<std::string> AllSharedMemoryObjects();
// The objects (control blocks, arenas) in the private directory of process `pid`.
std::vector<std::string> SharedMemoryObjectsOf(int pid);
// Processes whose command line mentions the path `needle`, whole (to find leftover workers of a
// test: `needle` followed by '/', a space or the end, so that a directory does not find another
// whose name it begins).
std::vector<int> ProcessesMentioning(const std::string& needle);
// Live children of process `parent` whose command line mentions `needle` (a zombie has none).
std::vector<int> ChildrenMentioning(int parent, const std::string& needle);
// The partial outputs in `dir`: files named ".framemill-partial.*", which exist only while a
// job writes its output (the join beside the render: the whole job) and must not outlive it.
int PartialOutputs(const std::string& dir);
// The whole file `path` ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// Files in `dir` (names only), hidden ones included.
std::vector<std::string> ListDir(const std::string& dir);

}  // namespace framemill::test
