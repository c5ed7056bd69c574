// ffmpeg's psnr filter for the integration tests: per-plane PSNR of one video against another.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace framemill::test {

struct Psnr {
  double y = 0, u = 0, v = 0;
};

// ffmpeg's psnr filter over all frames of `out` against `src`, paired in order (one time base
// for both, or frames of files with different time bases would be paired wrongly).
inline Psnr MeasurePsnr(const std::string& out, const std::string& src) {
  RunResult r =
      Shell("ffmpeg -nostdin -hide_banner -nostats -i '" + out + "' -i '" + src +
            "' -lavfi '[0:v]settb=1/25,setpts=N[a];[1:v]settb=1/25,setpts=N[b];[a][b]psnr' -f null "
            "- 2>&1");
  Psnr p;
  size_t at = r.out.find("PSNR y:");
  REQUIRE_MESSAGE(at != std::string::npos, r.out);
  REQUIRE(std::sscanf(r.out.c_str() + at, "PSNR y:%lf u:%lf v:%lf", &p.y, &p.u, &p.v) == 3);
  return p;
}

}  // namespace framemill::test
