// What every parsing fuzz target asserts besides "no crash, no sanitizer report": helpers that
// abort (which libFuzzer reports as a crash, with the input saved) when a parser's contract is
// broken. Header-only; used by the targets in tests/fuzz/ alone.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "common/status.h"

namespace framemill::fuzz {

// Aborts with `what` when `ok` is false.
inline void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz contract broken: %s\n", what);
  std::abort();
}

// An error a parser returns has the parser's code and a message that says something.
inline void CheckError(const Status& status, StatusCode expected) {
  Check(!status.ok(), "an error Status is ok");
  Check(status.code() == expected, "an error has the wrong StatusCode");
  Check(!status.message().empty(), "an error has an empty message");
}

// Settings that parsed are within the limits the parsers promise (common/config.h).
inline void CheckSettings(const JobSettings& s) {
  Check(s.chunk_frames >= 1 && s.chunk_frames <= kMaxChunkFrames, "chunk_frames out of range");
  Check(s.workers >= 1 && s.workers <= kMaxWorkers, "workers out of range");
  Check(s.batch >= 1 && s.batch <= kMaxBatch, "batch out of range");
  Check(s.encoders >= 1 && s.encoders <= kMaxEncoders, "encoders out of range");
  Check(s.max_attempts >= 1 && s.max_attempts <= kMaxAttempts, "max_attempts out of range");
  Check(s.segment_seconds > 0, "segment_seconds not positive");
  Check(s.hang_timeout_s > 0, "hang_timeout_s not positive");
  // What a parser accepted reads back as itself from its name (the worker's command line).
  Check(ParseDevice(Name(s.device)) == s.device, "device does not round-trip");
  Check(ParsePrecision(Name(s.precision)) == s.precision, "precision does not round-trip");
  Check(ParseColorConversion(Name(s.color_conversion)) == s.color_conversion,
        "color_conversion does not round-trip");
}

// Whatever a parser returns ends up in result.json, a status reply or a log line: it must dump as
// JSON whatever bytes it holds (the replace handler, as everywhere JSON leaves the process), and
// what is dumped must parse back.
inline void CheckDumps(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Check(nlohmann::json::accept(text), "dumped JSON does not parse back");
}

}  // namespace framemill::fuzz
