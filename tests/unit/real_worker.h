// The real framemill-worker for the unit tests that start one: an example model exported by the
// real framemill into `dir`, and the pool options that run it on the CPU, logging into `dir`.
#pragma once

#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

#include "supervisor/workers/worker_pool.h"

namespace framemill::test {

inline WorkerOptions RealWorker(const std::string& dir, const std::string& model_name,
                                const std::string& log_level) {
  WorkerOptions o;
  o.model = dir + "/" + model_name + ".pt";
  const std::string export_cmd = std::string(FRAMEMILL_BIN) + " model export " + model_name + " " +
                                 o.model + " >/dev/null 2>&1";
  REQUIRE(std::system(export_cmd.c_str()) == 0);
  o.worker_binary = FRAMEMILL_WORKER_BIN;
  o.launch.device = *ParseDevice("cpu");
  o.log_dir = dir;
  o.launch.log_level = log_level;
  return o;
}

}  // namespace framemill::test
