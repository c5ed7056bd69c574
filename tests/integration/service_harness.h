// Helpers for the tests of `framemill serve`: a scratch spool with its config, the service and
// the client started on it, job files dropped into incoming/.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace framemill::test {

// A scratch directory with a spool and a config file naming it (roots: the directory and the
// test clips).
struct Service {
  std::string dir, spool, config_path;
  nlohmann::json config;
};

// `extra` keys replace the config's (a key set to null is removed).
Service MakeService(const std::string& name, nlohmann::json extra = nlohmann::json::object());

// `framemill serve` on the service's spool, in the background (output in dir/<name>.stderr).
BackgroundJob Serve(const Service& s, const Env& env = {}, const std::string& name = "serve");

// `framemill --config CONFIG ARGS` through the shell; `prefix` goes before the binary (say,
// setpriv to run it as another user).
RunResult Cli(const Service& s, const std::string& args, const std::string& prefix = "");

// Puts a job file into incoming/ the way clients must: written elsewhere, then renamed.
void Drop(const Service& s, const std::string& id, const std::string& content);

// The JSON in `path`, or null when it is missing or not valid JSON (UTF-8 included).
nlohmann::json ReadJson(const std::string& path);

// An index video of `frames` frames, width x height, made once per directory.
std::string SmallVideo(const std::string& dir, int frames, int width = 160, int height = 128);

// Waits until `pred` holds (polling every 50 ms) or `seconds` pass; returns pred().
template <typename Pred>
bool WaitUntil(Pred pred, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// The whole content of a text file ("" when missing).
std::string ReadText(const std::string& path);

// Lines of `text` that contain `needle`.
int CountLines(const std::string& text, const std::string& needle);

}  // namespace framemill::test
