// Helpers for the tests of a job's parts (parts_test.cpp, slurm_test.cpp, seek_test.cpp): a clip
// with keyframes in its middle, its job, the one-machine run to compare with, and what the
// decoder's ffmpeg says it decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"

namespace framemill::test {

// The width and height of MakePartsClip's video.
inline constexpr int kPartsClipWidth = 320, kPartsClipHeight = 240;
// Its frames and GOP: a keyframe every kPartsClipGop frames (B-frames between).
inline constexpr int kPartsClipFrames = 120, kPartsClipGop = 12;

// `s` as one single-quoted shell word.
std::string ShellQuote(const std::string& s);

// The framemill binary under test.
std::string FramemillBinary();

// FNV-1a of `n` bytes.
uint64_t HashBytes(const uint8_t* bytes, size_t n);

// dir/clip.mp4: the first 4 s of the real clip friday.mp4 (120 frames at 30 fps) scaled to
// 320x240, H.264 with a keyframe every 12 frames and B-frames, its AAC audio kept.
std::string MakePartsClip(const std::string& dir);

// Writes dir/<name>.json: `input` through the identity model into `output` on one worker, in
// chunks of 4 frames and segments of about a second (4 segments of MakePartsClip: 32, 32, 32, 24
// frames; 3 parts: segment 0, segment 1, segments 2-3). `extra` keys are added. Returns its path.
std::string WritePartsJob(const std::string& dir, const std::string& name,
                          const std::string& input, const std::string& output,
                          const nlohmann::json& extra = nlohmann::json::object());

// `framemill ARGS` (each argument quoted) run in `dir` with `env` (NAME=VALUE words) before it.
RunResult Framemill(const std::string& dir, const std::string& args, const std::string& env = "");

// The frames ffmpeg says it decoded in `log` (a decoder log written with
// FRAMEMILL_TEST_DECODER_VERBOSE=1: "... N frames decoded; ..."), or -1.
int64_t FramesDecoded(const std::string& log);

}  // namespace framemill::test
