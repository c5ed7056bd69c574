#include "bench/index_video.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/checked_file.h"
#include "supervisor/media/ffmpeg_pipes.h"
#include "supervisor/media/source_intake.h"

namespace framemill::bench {

namespace {

constexpr int kGrid = 4;

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

void DrawIndex(int index, int width, int height, std::vector<uint8_t>* rgb) {
  const int bw = width / kGrid, bh = height / kGrid;
  for (int y = 0; y < height; ++y) {
    const int block_row = std::min(y / bh, kGrid - 1);
    uint8_t* row = rgb->data() + static_cast<size_t>(y) * width * 3;
    for (int block_col = 0; block_col < kGrid; ++block_col) {
      const int bit = kGrid * kGrid - 1 - (block_row * kGrid + block_col);
      const int x0 = block_col * bw, x1 = block_col == kGrid - 1 ? width : x0 + bw;
      std::memset(row + x0 * 3, ((index >> bit) & 1) ? 255 : 0, static_cast<size_t>(x1 - x0) * 3);
    }
  }
}

int ReadIndex(const uint8_t* rgb, int width, int height) {
  const int bw = width / kGrid, bh = height / kGrid;
  int index = 0;
  for (int block = 0; block < kGrid * kGrid; ++block) {
    const int x0 = (block % kGrid) * bw, y0 = (block / kGrid) * bh;
    int64_t sum = 0, n = 0;
    for (int y = y0 + bh / 4; y < y0 + 3 * bh / 4; ++y) {
      const uint8_t* px = rgb + (static_cast<size_t>(y) * width + x0 + bw / 4) * 3;
      for (int x = bw / 4; x < 3 * bw / 4; ++x, px += 3, ++n) sum += px[1];
    }
    const int64_t mean = n > 0 ? sum / n : 0;
    if (mean > 60 && mean < 195) return -1;
    index = (index << 1) | (mean >= 195 ? 1 : 0);
  }
  return index;
}

void MakeIndexVideo(const std::string& path, int frames, int width, int height, int fps,
                    int tone_hz) {
  const double seconds = static_cast<double>(frames) / fps;
  const std::string audio_in = tone_hz > 0
                                   ? " -f lavfi -i sine=frequency=" + std::to_string(tone_hz) +
                                         ":sample_rate=48000:duration=" + std::to_string(seconds)
                                   : "";
  const std::string audio_out = tone_hz > 0 ? " -c:a aac -b:a 96k" : "";
  const std::string cmd = "ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt rgb24 -s " +
                          std::to_string(width) + "x" + std::to_string(height) + " -framerate " +
                          std::to_string(fps) + " -i pipe:0" + audio_in + audio_out +
                          " -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -g 50 " +
                          ShellQuote(path);
  FILE* p = ::popen(cmd.c_str(), "w");
  if (p == nullptr) throw std::runtime_error("cannot start ffmpeg");
  std::vector<uint8_t> frame(static_cast<size_t>(width) * height * 3);
  for (int i = 0; i < frames; ++i) {
    DrawIndex(i, width, height, &frame);
    std::fwrite(frame.data(), 1, frame.size(), p);
  }
  if (::pclose(p) != 0) throw std::runtime_error("ffmpeg failed to make " + path);
}

int64_t DecodeFrames(const std::string& path, const std::string& log,
                     const std::function<void(const uint8_t*, int, int)>& on_frame) {
  Result<TakenSource> taken = TakeSource(
      path, SourceRules{"ffprobe", InputRoots::Anywhere(), PlaylistInputs::kRefuse, nullptr},
      false);
  if (!taken.ok()) return -1;
  const VideoStreamInfo& v = taken->media.video;
  auto reader = FrameReader::Start("ffmpeg", taken->source, v, log, FrameFormat::kRgb24, {});
  if (!reader.ok()) return -1;
  std::vector<uint8_t> frame(static_cast<size_t>(v.display_width) * v.display_height * 3);
  int64_t count = 0;
  while (true) {
    Result<bool> got = (*reader)->Read(frame.data());
    if (!got.ok()) return -1;
    if (!*got) break;
    on_frame(frame.data(), v.display_width, v.display_height);
    ++count;
  }
  return (*reader)->Finish().ok() ? count : -1;
}

int64_t Misplaced(const std::string& path, int64_t frames, const std::string& log, int flip_bits) {
  int64_t i = 0, bad = 0;
  const int64_t n = DecodeFrames(path, log, [&](const uint8_t* rgb, int width, int height) {
    const int shown = ReadIndex(rgb, width, height);
    if (shown < 0 || (shown ^ flip_bits) != static_cast<int>(i % kIndexModulus)) ++bad;
    ++i;
  });
  return n == frames ? bad : -1;
}

double AudioSeconds(const std::string& path) {
  // From the packets, not the stream's header: Matroska stores no stream duration.
  const std::string cmd =
      "ffprobe -v error -select_streams a:0 -show_entries "
      "packet=pts_time,duration_time -of csv=p=0 " +
      ShellQuote(path);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  double first = 0, end = 0;
  bool any = false;
  char line[256];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    double pts = 0, duration = 0;
    if (std::sscanf(line, "%lf,%lf", &pts, &duration) < 1) continue;
    first = any ? std::min(first, pts) : pts;
    end = any ? std::max(end, pts + duration) : pts + duration;
    any = true;
  }
  const int status = ::pclose(p);
  return status == 0 && any ? end - first : -1;
}

}  // namespace framemill::bench
