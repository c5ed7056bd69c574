#include "supervisor/report/job_result.h"

#include <algorithm>

#include <fmt/format.h>

namespace framemill {

std::string StageTimes::Summary() const {
  auto pct = [](double part, double whole) {
    return whole > 0 ? static_cast<int>(100.0 * part / whole + 0.5) : 0;
  };
  double capacity = pipeline_s * std::max(1, workers);
  double encode_capacity = pipeline_s * std::max(1, encoders);
  return fmt::format(
      "prepare {:.2f} s, start {:.2f} s, pipeline {:.2f} s [decode {:.2f} s busy "
      "({}%), {:.2f} s waiting for a slot; workers {:.2f} s busy ({}% of {}); "
      "encode {:.2f} s busy ({}% of {}), {:.2f} s waiting for output], mux {:.2f} s",
      prepare_s, start_s, pipeline_s, decode_s, pct(decode_s, pipeline_s), decode_wait_s,
      workers_busy_s, pct(workers_busy_s, capacity), workers, encode_s,
      pct(encode_s, encode_capacity), encoders, encode_wait_s, mux_s);
}

nlohmann::json StageTimes::ToJson() const {
  return {{"prepare_s", prepare_s},
          {"start_s", start_s},
          {"pipeline_s", pipeline_s},
          {"decode_s", decode_s},
          {"decode_wait_s", decode_wait_s},
          {"workers_busy_s", workers_busy_s},
          {"workers", workers},
          {"encode_s", encode_s},
          {"encode_wait_s", encode_wait_s},
          {"encoders", encoders},
          {"mux_s", mux_s}};
}

nlohmann::json JobReport::FaultsJson() const {
  return {{"decoder_restarts", decoder_restarts},
          {"attempts", attempts},
          {"faults_retried", faults_retried}};
}

}  // namespace framemill
