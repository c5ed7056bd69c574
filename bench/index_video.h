// The index video the benchmarks check frames with: frame i shows i (mod 65536) as a 4x4 grid of
// black and white blocks, most significant bit at the top left, so that the index survives lossy
// compression and scaling. Making one (ffmpeg), reading an index back from a decoded frame, and
// decoding a whole file the way the supervisor does. Shared by framemill-soak and
// framemill-night; free functions, no state, safe to call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace framemill::bench {

constexpr int kIndexModulus = 65536;

// Frame `index` of the pattern into `rgb` (rgb24, width x height, already sized).
void DrawIndex(int index, int width, int height, std::vector<uint8_t>* rgb);

// The index a decoded rgb24 frame shows; -1 when a block is neither black nor white. Each block
// is judged by the green of its centre half, away from the edges that compression blurs.
int ReadIndex(const uint8_t* rgb, int width, int height);

// Writes `frames` frames of the pattern at `fps` as H.264 in `path`, with an AAC sine tone of
// `tone_hz` as long as the video (no audio stream when `tone_hz` <= 0). Throws
// std::runtime_error when ffmpeg fails.
void MakeIndexVideo(const std::string& path, int frames, int width, int height, int fps,
                    int tone_hz);

// Decodes every frame of `path` the way the supervisor does (FrameReader, rgb24, no rate
// conversion), ffmpeg's log in `log`, and calls `on_frame` for each. Returns the number of
// frames; -1 when it cannot be probed or decoded to the end.
int64_t DecodeFrames(const std::string& path, const std::string& log,
                     const std::function<void(const uint8_t*, int, int)>& on_frame);

// Frames of `path` whose index is not their position (after `flip_bits`, XORed into what each
// frame shows: 0xFFFF for a model that inverts the picture); -1 when the count is not `frames`
// or the file cannot be decoded.
int64_t Misplaced(const std::string& path, int64_t frames, const std::string& log,
                  int flip_bits = 0);

// The first audio stream's duration in seconds, from its packets (first start to last end); -1
// without one (or when ffprobe cannot read the file).
double AudioSeconds(const std::string& path);

}  // namespace framemill::bench
