// The worker's launch settings (common/worker_launch.h): what the supervisor encodes the worker
// parses back unchanged, in each part; a bad value, an unknown key, a key out of its part, another
// version or a missing required key is refused with an error that names it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/worker_launch.h"

using namespace framemill;

namespace {

WorkerLaunch Sample() {
  WorkerLaunch l;
  l.control = "/dev/shm/framemill-x/control-3";
  l.channel = 3;
  l.wake_fd = 9;
  l.device = *ParseDevice("cuda:1");
  l.device_given = true;
  l.log_level = "debug";
  l.sandbox = WorkerSandbox::kRequired;
  l.model_fd = 4;
  l.model_label = "/models/a b.pt";
  l.precision = Precision::kBf16;
  l.optimization = ModelOptimization::kOff;
  l.tile = *ParseTileSetting("256:16");
  l.probe_width = 96;
  l.probe_height = 48;
  l.probe_batch = 4;
  l.cudnn_autotune = true;
  return l;
}

// The fields a part carries, as one text each side can compare.
std::string Fields(const WorkerLaunch& l) {
  return l.control + "|" + std::to_string(l.channel) + "|" + std::to_string(l.wake_fd) + "|" +
         Name(l.device) + "|" + l.log_level + "|" + Name(l.sandbox) + "|" +
         (l.await_model ? "spare" : "loaded") + "|" + std::to_string(l.model_fd) + "|" +
         l.model_label + "|" + Name(l.precision) + "|" + Name(l.optimization) + "|" +
         Name(l.tile) + "|" + std::to_string(l.probe_width) + "x" +
         std::to_string(l.probe_height) + "x" + std::to_string(l.probe_batch) + "|" +
         (l.cudnn_autotune ? "autotune" : "heuristics");
}

// The error of parsing `arguments` as `part` over a fresh launch ("" when it parses).
std::string Refusal(const std::vector<std::string>& arguments, LaunchPart part) {
  WorkerLaunch l;
  Status s = ParseWorkerLaunch(arguments, part, &l);
  if (s.ok()) return "";
  CHECK(s.code() == StatusCode::kInvalidConfig);
  return s.message();
}

}  // namespace

TEST_CASE("worker launch: a command line parses back to the launch it encodes") {
  const WorkerLaunch sent = Sample();
  const std::vector<std::string> line = EncodeCommandLine(sent);
  CHECK(line[0] == "--launch-version");
  CHECK(line[1] == std::to_string(kWorkerLaunchVersion));
  WorkerLaunch got;
  REQUIRE(ParseWorkerLaunch(line, LaunchPart::kCommandLine, &got).ok());
  CHECK(Fields(got) == Fields(sent));
  CHECK(got.device_given);
}

TEST_CASE("worker launch: a spare's spawn part and its load request make the same launch") {
  WorkerLaunch sent = Sample();
  sent.model_fd = -1;  // a spare's comes beside its load request
  WorkerLaunch spare = sent;
  spare.await_model = true;
  WorkerLaunch got;
  REQUIRE(ParseWorkerLaunch(EncodeSpawnPart(spare), LaunchPart::kCommandLine, &got).ok());
  CHECK(got.await_model);
  CHECK(Name(got.precision) == std::string("fp32"));  // not in the spawn's part
  REQUIRE(ParseWorkerLaunch(EncodeLoadRequest(sent), LaunchPart::kLoadRequest, &got).ok());
  got.await_model = false;
  CHECK(Fields(got) == Fields(sent));
}

TEST_CASE("worker launch: a bad value is refused, naming its key and the value") {
  std::vector<std::string> line = EncodeCommandLine(Sample());
  auto with = [&](const std::string& key, const std::string& value) {
    std::vector<std::string> a = line;
    for (size_t i = 0; i + 1 < a.size(); i += 2) {
      if (a[i] == key) a[i + 1] = value;
    }
    return a;
  };
  CHECK(Refusal(line, LaunchPart::kCommandLine) == "");
  const std::string precision = Refusal(with("--precision", "fp64"), LaunchPart::kCommandLine);
  CHECK(precision.find("--precision \"fp64\"") != std::string::npos);
  CHECK(Refusal(with("--probe-size", "0x64"), LaunchPart::kCommandLine).find("--probe-size") !=
        std::string::npos);
  CHECK(Refusal(with("--probe-batch", "1025"), LaunchPart::kCommandLine).find("--probe-batch") !=
        std::string::npos);
  CHECK(Refusal(with("--channel", "-1"), LaunchPart::kCommandLine).find("--channel") !=
        std::string::npos);
  CHECK(Refusal(with("--wake-fd", "2"), LaunchPart::kCommandLine).find("--wake-fd") !=
        std::string::npos);
  CHECK(Refusal(with("--device", "gpu"), LaunchPart::kCommandLine).find("--device \"gpu\"") !=
        std::string::npos);
  CHECK(Refusal(with("--launch-version", "2"), LaunchPart::kCommandLine)
            .find("--launch-version \"2\"") != std::string::npos);
  CHECK(Refusal({"--colour", "red"}, LaunchPart::kCommandLine).find("--colour") !=
        std::string::npos);
  CHECK(Refusal({"--precision"}, LaunchPart::kLoadRequest).find("--precision") !=
        std::string::npos);
  // What is fixed at spawn may not come in a load request.
  CHECK(Refusal({"--sandbox", "off"}, LaunchPart::kLoadRequest).find("--sandbox") !=
        std::string::npos);
  CHECK(Refusal({"--model-fd", "4"}, LaunchPart::kLoadRequest).find("--model-fd") !=
        std::string::npos);
  // A command line names its control block, channel, wake-up socket, device and model.
  CHECK(Refusal({"--control", "c", "--channel", "0", "--wake-fd", "9", "--model-fd", "3"},
                LaunchPart::kCommandLine)
            .find("--device") != std::string::npos);
  CHECK(Refusal({"--control", "c", "--channel", "0", "--wake-fd", "9", "--device", "cpu"},
                LaunchPart::kCommandLine)
            .find("no model") != std::string::npos);
  // Without a version, a command line is read as this one (run by hand).
  CHECK(Refusal({"--control", "c", "--channel", "0", "--wake-fd", "9", "--device", "cpu",
                 "--model", "m.pt"},
                LaunchPart::kCommandLine) == "");
}
