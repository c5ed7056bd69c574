#include "common/worker_launch.h"

#include <cstdlib>
#include <optional>

namespace framemill {
namespace {

constexpr char kVersionKey[] = "--launch-version";

// The whole of `text` as a decimal integer in [lo, hi].
std::optional<long> Integer(const std::string& text, long lo, long hi) {
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || n < lo || n > hi) return std::nullopt;
  return n;
}

std::optional<bool> OnOff(const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  return std::nullopt;
}

// Reads one value into *l: nullptr, or why the value is refused.
using Reader = const char* (*)(const std::string& value, WorkerLaunch* l);

struct Key {
  const char* name;
  bool in_load_request;  // may come in a spare's load request (LaunchPart::kLoadRequest)
  Reader read;
};

constexpr long kMaxFd = 65535;
constexpr long kMaxProbeSide = 1L << 20;  // a model card's bound

// Every key a launch has, in the encoders' order.
const Key kKeys[] = {
    {kVersionKey, true,
     [](const std::string& v, WorkerLaunch*) -> const char* {
       return Integer(v, kWorkerLaunchVersion, kWorkerLaunchVersion)
                  ? nullptr
                  : "not the launch version this worker reads";
     }},
    {"--control", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       if (v.empty()) return "empty";
       l->control = v;
       return nullptr;
     }},
    {"--channel", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<long> n = Integer(v, 0, 65535);
       if (!n) return "not a channel number from 0 to 65535";
       l->channel = static_cast<int>(*n);
       return nullptr;
     }},
    {"--wake-fd", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<long> n = Integer(v, 3, kMaxFd);
       if (!n) return "not a descriptor number from 3 to 65535";
       l->wake_fd = static_cast<int>(*n);
       return nullptr;
     }},
    {"--device", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<DeviceSetting> d = ParseDevice(v);
       if (!d) return "not auto, cpu, cuda or cuda:N";
       l->device = *d;
       l->device_given = true;
       return nullptr;
     }},
    {"--log-level", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       l->log_level = v;  // spdlog's level names; another reads as off
       return nullptr;
     }},
    {"--sandbox", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<WorkerSandbox> m = ParseWorkerSandbox(v);
       if (!m) return "not required, auto or off";
       l->sandbox = *m;
       return nullptr;
     }},
    {"--await-model", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<bool> on = OnOff(v);
       if (!on) return "not on or off";
       l->await_model = *on;
       return nullptr;
     }},
    {"--model-fd", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<long> n = Integer(v, 3, kMaxFd);
       if (!n) return "not a descriptor number from 3 to 65535";
       l->model_fd = static_cast<int>(*n);
       return nullptr;
     }},
    {"--model", false,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       if (v.empty()) return "empty";
       l->model_path = v;
       return nullptr;
     }},
    {"--model-label", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       l->model_label = v;
       return nullptr;
     }},
    {"--precision", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<Precision> p = ParsePrecision(v);
       if (!p) return "not fp32, fp16 or bf16";
       l->precision = *p;
       return nullptr;
     }},
    {"--optimize", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<ModelOptimization> m = ParseModelOptimization(v);
       if (!m) return "not auto, on or off";
       l->optimization = *m;
       return nullptr;
     }},
    {"--tile", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<TileSetting> t = ParseTileSetting(v);
       if (!t) return "not off, auto or SIZE:OVERLAP";
       l->tile = *t;
       return nullptr;
     }},
    {"--probe-size", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       // N (a square) or WxH.
       const size_t x = v.find('x');
       std::optional<long> w = Integer(v.substr(0, x), 1, kMaxProbeSide);
       std::optional<long> h =
           x == std::string::npos ? w : Integer(v.substr(x + 1), 1, kMaxProbeSide);
       if (!w || !h) return "not N or WxH, each side 1 to 2^20 pixels";
       l->probe_width = static_cast<int>(*w);
       l->probe_height = static_cast<int>(*h);
       return nullptr;
     }},
    {"--probe-batch", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<long> n = Integer(v, 1, kMaxBatch);
       if (!n) return "not a batch from 1 to kMaxBatch";
       l->probe_batch = static_cast<int>(*n);
       return nullptr;
     }},
    {"--cudnn-autotune", true,
     [](const std::string& v, WorkerLaunch* l) -> const char* {
       std::optional<bool> on = OnOff(v);
       if (!on) return "not on or off";
       l->cudnn_autotune = *on;
       return nullptr;
     }},
};

Status Refused(const std::string& why) {
  return Status(StatusCode::kInvalidConfig, "worker launch: " + why);
}

// What a command line must name.
Status CheckRequired(const WorkerLaunch& l) {
  if (l.control.empty()) return Refused("--control is missing");
  if (l.channel < 0) return Refused("--channel is missing");
  if (l.wake_fd < 0) return Refused("--wake-fd is missing");
  if (!l.device_given) return Refused("--device is missing");
  if (l.model_fd < 0 && l.model_path.empty() && !l.await_model) {
    return Refused("no model: --model-fd, --model or --await-model on is missing");
  }
  return Status::Ok();
}

std::vector<std::string> Versioned() { return {kVersionKey, std::to_string(kWorkerLaunchVersion)}; }

}  // namespace

std::vector<std::string> EncodeSpawnPart(const WorkerLaunch& l) {
  std::vector<std::string> a = Versioned();
  for (const std::string& s : {std::string("--control"), l.control, std::string("--channel"),
                               std::to_string(l.channel), std::string("--wake-fd"),
                               std::to_string(l.wake_fd), std::string("--device"), Name(l.device),
                               std::string("--log-level"), l.log_level, std::string("--sandbox"),
                               std::string(Name(l.sandbox))}) {
    a.push_back(s);
  }
  if (l.await_model) {
    a.push_back("--await-model");
    a.push_back("on");
  }
  return a;
}

std::vector<std::string> EncodeModelPart(const WorkerLaunch& l) {
  std::vector<std::string> a = Versioned();
  if (l.model_fd >= 0) {
    a.push_back("--model-fd");
    a.push_back(std::to_string(l.model_fd));
  }
  for (const std::string& s :
       {std::string("--channel"), std::to_string(l.channel), std::string("--model-label"),
        l.model_label, std::string("--precision"), std::string(Name(l.precision)),
        std::string("--optimize"), std::string(Name(l.optimization)), std::string("--tile"),
        Name(l.tile), std::string("--probe-size"),
        std::to_string(l.probe_width) + "x" + std::to_string(l.probe_height),
        std::string("--probe-batch"), std::to_string(l.probe_batch),
        std::string("--cudnn-autotune"), std::string(l.cudnn_autotune ? "on" : "off")}) {
    a.push_back(s);
  }
  return a;
}

std::vector<std::string> EncodeCommandLine(const WorkerLaunch& l) {
  std::vector<std::string> a = EncodeSpawnPart(l);
  std::vector<std::string> model = EncodeModelPart(l);
  // One version for the whole line: the model's part without its own.
  a.insert(a.end(), model.begin() + 2, model.end());
  return a;
}

std::vector<std::string> EncodeLoadRequest(const WorkerLaunch& l) {
  std::vector<std::string> a = EncodeModelPart(l);
  a.push_back("--device");
  a.push_back(Name(l.device));
  return a;
}

Status ParseWorkerLaunch(const std::vector<std::string>& arguments, LaunchPart part,
                         WorkerLaunch* launch) {
  if (arguments.size() % 2 != 0) return Refused(arguments.back() + " has no value");
  for (size_t i = 0; i < arguments.size(); i += 2) {
    const std::string& name = arguments[i];
    const std::string& value = arguments[i + 1];
    const Key* key = nullptr;
    for (const Key& k : kKeys) {
      if (name == k.name) key = &k;
    }
    if (key == nullptr) return Refused("unknown argument " + name);
    if (part == LaunchPart::kLoadRequest && !key->in_load_request) {
      return Refused(name + " may not come in a load request");
    }
    if (const char* why = key->read(value, launch)) {
      return Refused(name + " \"" + value + "\": " + why);
    }
  }
  return part == LaunchPart::kCommandLine ? CheckRequired(*launch) : Status::Ok();
}

}  // namespace framemill
