#include "service_harness.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace framemill::test {

namespace fs = std::filesystem;

Service MakeService(const std::string& name, nlohmann::json extra) {
  Service s;
  s.dir = ScratchDir(name);
  s.spool = s.dir + "/spool";
  s.config = {{"spool_dir", s.spool},
              {"rescan_interval_s", 1},
              {"allowed_input_roots", {s.dir, TestClip("")}},
              {"allowed_output_roots", {s.dir}},
              {"allowed_model_roots", {s.dir}},
              {"defaults",
               {{"workers", kTestWorkers},
                {"chunk_frames", 16},
                {"device", TestDevice()},
                {"encoder", TestEncoder()}}}};
  for (auto& [k, v] : extra.items()) {
    if (v.is_null())
      s.config.erase(k);
    else
      s.config[k] = v;
  }
  s.config_path = s.dir + "/config.json";
  std::ofstream(s.config_path) << s.config.dump(2);
  return s;
}

BackgroundJob Serve(const Service& s, const Env& env, const std::string& name) {
  return StartFramemill(s.dir, {"--config", s.config_path, "serve"}, env, name);
}

RunResult Cli(const Service& s, const std::string& args, const std::string& prefix) {
  return Shell(prefix + " '" + FRAMEMILL_BIN + "' --config '" + s.config_path + "' " + args);
}

void Drop(const Service& s, const std::string& id, const std::string& content) {
  fs::create_directories(s.spool + "/incoming");
  std::string tmp = s.dir + "/" + id + ".tmp";
  std::ofstream(tmp) << content;
  fs::rename(tmp, s.spool + "/incoming/" + id + ".json");
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, false);
}

std::string SmallVideo(const std::string& dir, int frames, int width, int height) {
  std::string path = dir + "/small-" + std::to_string(frames) + "-" + std::to_string(width) + "x" +
                     std::to_string(height) + ".mp4";
  if (!fs::exists(path)) MakeIndexVideo(path, frames, width, height, 25, 440);
  return path;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace framemill::test
