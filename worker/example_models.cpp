#include "worker/example_models.h"

#include <cstdint>
#include <cmath>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include <torch/script.h>

namespace framemill {
namespace {

constexpr int kHeavyWidth = 64;  // channels of the heavy model's hidden layers
constexpr int kHeavyLayers = 8;  // hidden 3x3 convolutions
constexpr int kRestoreWidth = 64;   // channels of the restore model's residual blocks
constexpr int kRestoreBlocks = 8;   // residual blocks of two 3x3 convolutions each

torch::jit::Module Identity() {
  torch::jit::Module m("framemill.Identity");
  m.define(R"(
def forward(self, x):
    return x
)");
  return m;
}

torch::jit::Module Invert() {
  torch::jit::Module m("framemill.Invert");
  m.define(R"(
def forward(self, x):
    return 1.0 - x
)");
  return m;
}

torch::jit::Module Sharpen() {
  torch::jit::Module m("framemill.Sharpen");
  torch::Tensor k =
      torch::tensor({0.f, -1.f, 0.f, -1.f, 5.f, -1.f, 0.f, -1.f, 0.f}).view({1, 1, 3, 3});
  m.register_parameter("weight", k.repeat({3, 1, 1, 1}), /*is_buffer=*/false);
  m.define(R"(
def forward(self, x):
    y = torch.conv2d(x, self.weight, None, [1, 1], [1, 1], [1, 1], 3)
    return torch.clamp(y, 0.0, 1.0)
)");
  return m;
}

torch::jit::Module Upscale2x() {
  torch::jit::Module m("framemill.Upscale2x");
  // Output channel c*4+k copies input channel c: pixel_shuffle then spreads the four copies over
  // a 2x2 block.
  torch::Tensor w = torch::zeros({12, 3, 3, 3});
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 4; ++k) w[c * 4 + k][c][1][1] = 1.0f;
  }
  m.register_parameter("weight", w, false);
  m.define(R"(
def forward(self, x):
    y = torch.conv2d(x, self.weight, None, [1, 1], [1, 1], [1, 1], 1)
    return torch.pixel_shuffle(y, 2)
)");
  return m;
}

torch::jit::Module Leak() {
  torch::jit::Module m("framemill.Leak");
  // A list attribute the model appends to: every batch stays referenced for the life of the
  // process, like a cache nobody clears. Growth: 12 bytes per pixel per frame (float RGB).
  m.register_attribute("kept", c10::ListType::ofTensors(), c10::List<at::Tensor>());
  m.define(R"(
def forward(self, x):
    self.kept.append(x.clone())
    return x
)");
  return m;
}

// Registers NAME_w (a 3x3 convolution from `in` to `out` channels, He-initialised from torch's
// seeded generator) and NAME_b (zeros) on `m`.
void AddConv(torch::jit::Module& m, const std::string& name, int in, int out) {
  double scale = std::sqrt(2.0 / (in * 9));
  m.register_parameter(name + "_w", torch::randn({out, in, 3, 3}) * scale, false);
  m.register_parameter(name + "_b", torch::zeros({out}), false);
}

torch::jit::Module Heavy() {
  torch::jit::Module m("framemill.Heavy");
  torch::manual_seed(0);
  auto conv = [&](const std::string& name, int in, int out) { AddConv(m, name, in, out); };
  conv("head", 3, kHeavyWidth);
  for (int i = 0; i < kHeavyLayers; ++i) conv("body" + std::to_string(i), kHeavyWidth, kHeavyWidth);
  conv("tail", kHeavyWidth, 3);
  std::string src = "def forward(self, x):\n";
  src += "    y = torch.relu(torch.conv2d(x, self.head_w, self.head_b, [1, 1], [1, 1]))\n";
  for (int i = 0; i < kHeavyLayers; ++i) {
    std::string n = "self.body" + std::to_string(i);
    src += "    y = torch.relu(torch.conv2d(y, " + n + "_w, " + n + "_b, [1, 1], [1, 1]))\n";
  }
  src += "    y = torch.conv2d(y, self.tail_w, self.tail_b, [1, 1], [1, 1])\n";
  src += "    return torch.clamp(x + 0.05 * torch.tanh(y), 0.0, 1.0)\n";
  m.define(src);
  return m;
}

// A residual restoration network of realistic size (the shape of EDSR-style restoration and
// the trunk of most upscalers): a head convolution, kRestoreBlocks blocks of conv-ReLU-conv with a
// scaled skip, a tail convolution and a global skip. 16 hidden 64->64 3x3 convolutions: about
// 2.4 TFLOP per 1080p frame (2 x 64 x 64 x 9 multiply-adds per pixel each). Random (seeded)
// weights; the output stays close to the input.
torch::jit::Module Restore() {
  torch::jit::Module m("framemill.Restore");
  torch::manual_seed(1);
  auto conv = [&](const std::string& name, int in, int out) { AddConv(m, name, in, out); };
  conv("head", 3, kRestoreWidth);
  for (int i = 0; i < kRestoreBlocks; ++i) {
    conv("block" + std::to_string(i) + "_a", kRestoreWidth, kRestoreWidth);
    conv("block" + std::to_string(i) + "_b", kRestoreWidth, kRestoreWidth);
  }
  conv("tail", kRestoreWidth, 3);
  std::string src = "def forward(self, x):\n";
  src += "    y = torch.conv2d(x, self.head_w, self.head_b, [1, 1], [1, 1])\n";
  for (int i = 0; i < kRestoreBlocks; ++i) {
    std::string a = "self.block" + std::to_string(i) + "_a", b = "self.block" + std::to_string(i) + "_b";
    src += "    r = torch.relu(torch.conv2d(y, " + a + "_w, " + a + "_b, [1, 1], [1, 1]))\n";
    src += "    y = y + 0.1 * torch.conv2d(r, " + b + "_w, " + b + "_b, [1, 1], [1, 1])\n";
  }
  src += "    y = torch.conv2d(y, self.tail_w, self.tail_b, [1, 1], [1, 1])\n";
  src += "    return torch.clamp(x + 0.05 * torch.tanh(y), 0.0, 1.0)\n";
  m.define(src);
  return m;
}

// The target's name and size as attributes of a hostile fixture.
Result<torch::jit::Module> Aimed(const std::string& type, const std::string& target,
                                 const std::string& forward) {
  struct stat st {};
  if (target.empty() || ::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size == 0) {
    return Status(StatusCode::kInvalidJob,
                  type + " needs --target FILE, an existing non-empty regular file");
  }
  torch::jit::Module m("framemill." + type);
  m.register_attribute("target", c10::StringType::get(), target);
  m.register_attribute("target_bytes", c10::IntType::get(), static_cast<int64_t>(st.st_size));
  m.define(forward);
  return m;
}

// Each uses what it took in its output: TorchScript drops code whose result is unused (a lone
// fill_ on a tensor nobody reads included). In their code, dtype=0 is uint8
// (c10::ScalarType::Byte): Module::define resolves no torch.uint8.
Result<torch::jit::Module> ReadFile(const std::string& target) {
  return Aimed("ReadFile", target, R"(
def forward(self, x):
    data = torch.from_file(self.target, False, self.target_bytes, dtype=0)
    return torch.clamp(x + data.float().mean() / 255.0, 0.0, 1.0)
)");
}

Result<torch::jit::Module> WriteFile(const std::string& target) {
  return Aimed("WriteFile", target, R"(
def forward(self, x):
    data = torch.from_file(self.target, True, self.target_bytes, dtype=0)
    written = data.fill_(88).float().mean() - 88.0
    return torch.clamp(x + written, 0.0, 1.0)
)");
}

}  // namespace

std::vector<std::string> ExampleModelNames() {
  return {"identity", "invert",    "sharpen",   "upscale2x", "heavy",
          "restore",  "leak",      "read_file", "write_file"};
}

Status ExportExampleModel(const std::string& name, const std::string& path,
                          const std::string& target) {
  try {
    torch::jit::Module m;
    if (name == "read_file" || name == "write_file") {
      Result<torch::jit::Module> aimed = name == "read_file" ? ReadFile(target) : WriteFile(target);
      if (!aimed.ok()) return aimed.status();
      m = *aimed;
    } else if (name == "identity") {
      m = Identity();
    } else if (name == "invert") {
      m = Invert();
    } else if (name == "sharpen") {
      m = Sharpen();
    } else if (name == "upscale2x") {
      m = Upscale2x();
    } else if (name == "heavy") {
      m = Heavy();
    } else if (name == "restore") {
      m = Restore();
    } else if (name == "leak") {
      m = Leak();
    } else {
      std::string names;
      for (const std::string& n : ExampleModelNames()) names += (names.empty() ? "" : ", ") + n;
      return Status(StatusCode::kInvalidJob,
                    "unknown example model \"" + name + "\" (known: " + names + ")");
    }
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    m.save(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      return Status(StatusCode::kIo, "cannot rename " + tmp + " to " + path);
    }
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, "cannot write model " + name + " to " + path + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace framemill
