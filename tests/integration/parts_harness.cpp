#include "parts_harness.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace framemill::test {

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string FramemillBinary() { return FRAMEMILL_BIN; }

uint64_t HashBytes(const uint8_t* bytes, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

std::string MakePartsClip(const std::string& dir) {
  const std::string clip = dir + "/clip.mp4";
  RunResult r = Shell("ffmpeg -nostdin -v error -y -i " + ShellQuote(TestClip("friday.mp4")) +
                      " -map 0:v -map 0:a -frames:v " + std::to_string(kPartsClipFrames) +
                      " -t 4 -vf scale=320:240 -c:v libx264 -preset veryfast -g " +
                      std::to_string(kPartsClipGop) +
                      " -keyint_min 12 -sc_threshold 0 -bf 2 -c:a aac " + ShellQuote(clip));
  if (r.exit_code != 0) throw std::runtime_error("making the parts clip failed: " + r.err);
  return clip;
}

std::string WritePartsJob(const std::string& dir, const std::string& name, const std::string& input,
                          const std::string& output, const nlohmann::json& extra) {
  nlohmann::json job = {{"input", input},
                        {"output", output},
                        {"model", ModelPath("identity")},
                        {"device", TestDevice()},
                        {"workers", 1},
                        {"chunk_frames", 4},
                        {"segment_seconds", 1.0},
                        {"encoder", TestEncoder()}};
  job.update(extra);
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << job.dump(2);
  return path;
}

RunResult Framemill(const std::string& dir, const std::string& args, const std::string& env) {
  return Shell("cd " + ShellQuote(dir) + " && " + env + (env.empty() ? "" : " ") +
               ShellQuote(FramemillBinary()) + " " + args);
}

int64_t FramesDecoded(const std::string& log) {
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  static const std::regex decoded("([0-9]+) frames decoded");
  return std::regex_search(s, m, decoded) ? std::stoll(m[1]) : -1;
}

}  // namespace framemill::test
