// The enumerated job settings (common/config.h): each name parses once into its enum and prints
// back as the same name, the one string used in JSON, logs and the worker's command line.
#include <doctest/doctest.h>

#include <string>

#include "common/job_file.h"

using framemill::ColorConversion;
using framemill::DeviceKind;
using framemill::DeviceSetting;
using framemill::JobSettings;
using framemill::ParseColorConversion;
using framemill::ParseDevice;
using framemill::ParseJob;
using framemill::ParsePrecision;
using framemill::Precision;
using nlohmann::json;

TEST_CASE("device names parse into kind and index and print back the same") {
  for (const char* name : {"auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:99"}) {
    auto d = ParseDevice(name);
    REQUIRE(d);
    CHECK(Name(*d) == name);
  }
  CHECK(ParseDevice("cpu")->kind == DeviceKind::kCpu);
  CHECK(ParseDevice("auto")->kind == DeviceKind::kAuto);
  CHECK(ParseDevice("cuda")->kind == DeviceKind::kCuda);
  CHECK(ParseDevice("cuda")->index == -1);
  CHECK(ParseDevice("cuda")->AnyCuda());
  CHECK(ParseDevice("cuda:3")->index == 3);
  CHECK_FALSE(ParseDevice("cuda:3")->AnyCuda());
  CHECK(DeviceSetting().kind == DeviceKind::kAuto);
}

TEST_CASE("device names outside auto, cpu, cuda, cuda:N do not parse") {
  for (const char* name : {"", "gpu", "CUDA", "cuda:", "cuda:100", "cuda:-1", "cuda:a", " cpu",
                           "cpu ", "mps", "cuda:1:2"}) {
    CHECK_FALSE(ParseDevice(name));
  }
}

TEST_CASE("precision names parse and print back the same") {
  CHECK(ParsePrecision("fp32") == Precision::kFp32);
  CHECK(ParsePrecision("fp16") == Precision::kFp16);
  CHECK(ParsePrecision("bf16") == Precision::kBf16);
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    CHECK(ParsePrecision(Name(p)) == p);
  }
  CHECK_FALSE(ParsePrecision("int8"));
  CHECK_FALSE(ParsePrecision("FP16"));
  CHECK_FALSE(ParsePrecision(""));
  CHECK(JobSettings().precision == Precision::kFp32);
}

TEST_CASE("color_conversion names parse and print back the same") {
  CHECK(ParseColorConversion("auto") == ColorConversion::kAuto);
  CHECK(ParseColorConversion("accurate") == ColorConversion::kAccurate);
  CHECK(ParseColorConversion("fast") == ColorConversion::kFast);
  CHECK(ParseColorConversion("device") == ColorConversion::kDevice);
  for (ColorConversion c : {ColorConversion::kAuto, ColorConversion::kAccurate,
                            ColorConversion::kFast, ColorConversion::kDevice}) {
    CHECK(ParseColorConversion(Name(c)) == c);
  }
  CHECK_FALSE(ParseColorConversion("quick"));
  CHECK(JobSettings().color_conversion == ColorConversion::kAuto);
}

TEST_CASE("a job's enumerated keys arrive parsed, and bad ones name the key and the choices") {
  json j = {{"input", "/in/a.mp4"}, {"output", "/out/a.mp4"}, {"model", "/m/id.pt"},
            {"device", "cuda:2"},   {"precision", "bf16"},    {"color_conversion", "fast"}};
  auto r = ParseJob(j, JobSettings{});
  REQUIRE(r.ok());
  CHECK(r->settings.device == DeviceSetting{DeviceKind::kCuda, 2});
  CHECK(r->settings.precision == Precision::kBf16);
  CHECK(r->settings.color_conversion == ColorConversion::kFast);
  j["color_conversion"] = "quick";
  r = ParseJob(j, JobSettings{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        "job.color_conversion: must be auto, accurate, fast or device, got \"quick\"");
  j["color_conversion"] = "device";
  j["device"] = "cuda:1";
  j["gpus"] = {0, 1};
  r = ParseJob(j, JobSettings{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("job.gpus: needs device cuda (or auto), not \"cuda:1\"") == 0);
}
