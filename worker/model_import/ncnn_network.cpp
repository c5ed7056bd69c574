#include "worker/model_import/ncnn_network.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <vector>

#include "worker/model/model_loader.h"
#include "worker/model_import/ncnn_bin.h"
#include "worker/model_import/ncnn_param.h"

// How each ncnn layer becomes TorchScript (ncnn's semantics, checked against its layer sources):
// - Convolution: weights [out][in][kh][kw], as torch.conv2d's; zero padding (18=pad_value
//   otherwise); the fused activation 9=activation_type applied after.
// - PixelShuffle mode 0: output channel c, offset (i, j) reads input channel c*r*r + i*r + j,
//   which is torch.pixel_shuffle; mode 1 reads channel (i*r + j)*C + c.
// - Interp nearest: source pixel floor(dst / scale), torch's upsample_nearest2d for the integer
//   scales networks use. Bilinear and bicubic: half-pixel centres (align_corners false unless
//   6=align_corner), borders repeated, bicubic with A = -0.75: torch's upsample_bilinear2d and
//   upsample_bicubic2d with the same output size compute the same (ncnn folds the taps outside
//   the frame into the edge pixel; torch clamps their index to it). The output size is
//   int(size * scale), as ncnn truncates it.
// - BinaryOp: op 0..8 = add, sub, mul, div, max, min, pow, rsub, rdiv, on two blobs of one shape
//   or (1=with_scalar) one blob and 2=b.

namespace framemill {
namespace {

// What the importer knows of a blob while it walks the graph.
struct Blob {
  std::string var;  // its TorchScript variable
  int channels = 0;
  double scale = 1;  // its size over the input's
  double reach = 0;  // input pixels each side a value depends on
};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Turns the graph into TorchScript source and registered parameters, one layer at a time.
class Builder {
 public:
  Builder(torch::jit::Module* module, NcnnBinReader* bin) : module_(module), bin_(bin) {}

  Status Add(const NcnnLayer& layer, size_t index);
  // The network's one output (a blob made and never used): checks it and closes forward().
  Result<Blob> Finish(const std::string& output_name);
  const std::string& source() const { return source_; }

 private:
  Status Input(const NcnnLayer& l);
  Status Split(const NcnnLayer& l);
  Status Convolution(const NcnnLayer& l, const std::string& prefix);
  Status PRelu(const NcnnLayer& l, const std::string& prefix);
  Status Relu(const NcnnLayer& l);
  Status PixelShuffle(const NcnnLayer& l);
  Status Interp(const NcnnLayer& l);
  Status BinaryOp(const NcnnLayer& l);
  Status Concat(const NcnnLayer& l);

  static Status Invalid(const NcnnLayer& layer, const std::string& what) {
    return Status(StatusCode::kModelInvalid, layer.Where() + ": " + what);
  }
  // Blob `name` made by an earlier layer; checked by the parser.
  const Blob& In(const std::string& name) const { return blobs_.at(name); }
  // Emits "    VAR = EXPR" for the layer's one output.
  void Out(const NcnnLayer& l, const std::string& expr, Blob blob) {
    blob.var = "v" + std::to_string(next_var_++);
    source_ += "    " + blob.var + " = " + expr + "\n";
    blobs_[l.tops[0]] = blob;
  }
  // A parameter of the module, named after the layer's index.
  std::string Param(const std::string& name, const torch::Tensor& t) {
    module_->register_parameter(name, t, /*is_buffer=*/false);
    return "self." + name;
  }

  torch::jit::Module* module_;
  NcnnBinReader* bin_;
  std::map<std::string, Blob> blobs_;
  std::string source_ = "def forward(self, x):\n";
  int next_var_ = 0;
};

Status Builder::Add(const NcnnLayer& l, size_t index) {
  static const char* const kTypes[] = {"Input",        "Split",  "Convolution", "PReLU", "ReLU",
                                       "PixelShuffle", "Interp", "BinaryOp",    "Concat"};
  if (std::find(std::begin(kTypes), std::end(kTypes), l.type) == std::end(kTypes)) {
    return Invalid(l, "layer type \"" + l.type +
                          "\" is not supported (supported: Input, Split, Convolution, PReLU, "
                          "ReLU, PixelShuffle, Interp, BinaryOp, Concat)");
  }
  size_t want_in = 1, want_out = 1;
  if (l.type == "Input") want_in = 0;
  if (l.type == "Split") want_out = l.tops.size();
  if (l.type == "Concat") want_in = std::max<size_t>(l.bottoms.size(), 1);
  if (l.type == "BinaryOp") want_in = l.params.count(1) && l.params.at(1).values[0] != 0 ? 1 : 2;
  if (l.bottoms.size() != want_in || l.tops.size() != want_out || want_out == 0) {
    return Invalid(l, "has " + std::to_string(l.bottoms.size()) + " inputs and " +
                          std::to_string(l.tops.size()) + " outputs; expected " +
                          std::to_string(want_in) + " and " + std::to_string(want_out));
  }
  std::string prefix = "layer" + std::to_string(index) + "_";
  if (l.type == "Input") return Input(l);
  if (l.type == "Split") return Split(l);
  if (l.type == "Convolution") return Convolution(l, prefix);
  if (l.type == "PReLU") return PRelu(l, prefix);
  if (l.type == "ReLU") return Relu(l);
  if (l.type == "PixelShuffle") return PixelShuffle(l);
  if (l.type == "Interp") return Interp(l);
  if (l.type == "BinaryOp") return BinaryOp(l);
  return Concat(l);
}

Status Builder::Input(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0, 1, 2}));
  Result<int> c = l.Int(2, 0);
  if (!c.ok()) return c.status();
  if (*c != 0 && *c != 3) return Invalid(l, "takes " + std::to_string(*c) + " channels, not 3");
  if (next_var_ != 0) return Invalid(l, "is a second Input; framemill feeds one frame batch");
  Out(l, "x", Blob{"", 3, 1.0, 0.0});
  return Status::Ok();
}

Status Builder::Split(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({}));
  for (const std::string& top : l.tops) blobs_[top] = In(l.bottoms[0]);
  return Status::Ok();
}

Status Builder::Convolution(const NcnnLayer& l, const std::string& prefix) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18}));
  const Blob& in = In(l.bottoms[0]);
  int v[16];
  const int ids[] = {0, 1, 2, 3, 4, 5, 6, 8, 9};
  const int defs[] = {0, 0, 1, 1, 0, 0, 0, 0, 0};
  for (int i = 0; i < 9; ++i) {
    Result<int> r = l.Int(ids[i], defs[i]);
    if (!r.ok()) return r.status();
    v[ids[i]] = *r;
  }
  int out = v[0], kw = v[1], dw = v[2], sw = v[3], pl = v[4], bias = v[5], size = v[6];
  Result<int> kh = l.Int(11, kw), dh = l.Int(12, dw), sh = l.Int(13, sw), pt = l.Int(14, pl);
  for (const auto* r : {&kh, &dh, &sh, &pt}) {
    if (!r->ok()) return r->status();
  }
  Result<int> pr = l.Int(15, pl), pb = l.Int(16, *pt);
  if (!pr.ok()) return pr.status();
  if (!pb.ok()) return pb.status();
  Result<float> pad_value = l.Float(18, 0.f);
  if (!pad_value.ok()) return pad_value.status();
  if (v[8] != 0) return Invalid(l, "is int8-quantized (8=int8_scale_term); not supported");
  if (out <= 0 || kw <= 0 || *kh <= 0 || dw <= 0 || *dh <= 0) {
    return Invalid(l, "needs positive num_output, kernel and dilation");
  }
  if (sw != 1 || *sh != 1) return Invalid(l, "has a stride other than 1; not supported");
  if (pl < 0 || *pr < 0 || *pt < 0 || *pb < 0) {
    return Invalid(l, "uses ncnn's automatic padding (negative pad); not supported");
  }
  if (pl + *pr != dw * (kw - 1) || *pt + *pb != *dh * (*kh - 1)) {
    return Invalid(l, "changes the frame size (its padding does not match its kernel)");
  }
  int64_t want = static_cast<int64_t>(out) * in.channels * kw * *kh;
  if (size != want) {
    return Invalid(l, "weight_data_size (6=) is " + std::to_string(size) + ", but " +
                          std::to_string(out) + " outputs x " + std::to_string(in.channels) +
                          " inputs x " + std::to_string(*kh) + "x" + std::to_string(kw) + " = " +
                          std::to_string(want));
  }
  Result<torch::Tensor> w = bin_->Tagged(want, l.Where() + " weights");
  if (!w.ok()) return w.status();
  std::string b = "None";
  if (bias != 0) {
    Result<torch::Tensor> bt = bin_->Raw(out, l.Where() + " bias");
    if (!bt.ok()) return bt.status();
    b = Param(prefix + "bias", *bt);
  }
  std::string wname = Param(prefix + "weight", w->view({out, in.channels, *kh, kw}));
  std::string x = in.var;
  std::string pad = "[" + std::to_string(*pt) + ", " + std::to_string(pl) + "]";
  if (pl != *pr || *pt != *pb || *pad_value != 0.f) {
    x = "torch.constant_pad_nd(" + x + ", [" + std::to_string(pl) + ", " + std::to_string(*pr) +
        ", " + std::to_string(*pt) + ", " + std::to_string(*pb) + "], " + Num(*pad_value) + ")";
    pad = "[0, 0]";
  }
  std::string expr = "torch.conv2d(" + x + ", " + wname + ", " + b + ", [1, 1], " + pad + ", [" +
                     std::to_string(*dh) + ", " + std::to_string(dw) + "], 1)";
  Result<std::vector<float>> act = l.FloatArray(10);
  if (!act.ok()) return act.status();
  switch (v[9]) {
    case 0:
      break;
    case 1:
      expr = "torch.relu(" + expr + ")";
      break;
    case 2:
      if (act->size() != 1) return Invalid(l, "leaky ReLU activation needs one parameter (10=)");
      expr = "torch.leaky_relu(" + expr + ", " + Num((*act)[0]) + ")";
      break;
    case 3:
      if (act->size() != 2) return Invalid(l, "clip activation needs two parameters (10=)");
      expr = "torch.clamp(" + expr + ", " + Num((*act)[0]) + ", " + Num((*act)[1]) + ")";
      break;
    case 4:
      expr = "torch.sigmoid(" + expr + ")";
      break;
    default:
      return Invalid(l, "activation_type " + std::to_string(v[9]) + " is not supported");
  }
  double reach = std::max({pl, *pr, *pt, *pb}) / in.scale;
  Out(l, expr, Blob{"", out, in.scale, in.reach + reach});
  return Status::Ok();
}

Status Builder::PRelu(const NcnnLayer& l, const std::string& prefix) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0}));
  const Blob& in = In(l.bottoms[0]);
  Result<int> n = l.Int(0, 0);
  if (!n.ok()) return n.status();
  if (*n != 1 && *n != in.channels) {
    return Invalid(l, "has " + std::to_string(*n) + " slopes for " + std::to_string(in.channels) +
                          " channels");
  }
  Result<torch::Tensor> slope = bin_->Raw(*n, l.Where() + " slopes");
  if (!slope.ok()) return slope.status();
  Out(l, "torch.prelu(" + in.var + ", " + Param(prefix + "slope", *slope) + ")", in);
  return Status::Ok();
}

Status Builder::Relu(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0}));
  const Blob& in = In(l.bottoms[0]);
  Result<float> slope = l.Float(0, 0.f);
  if (!slope.ok()) return slope.status();
  Out(l,
      *slope == 0.f ? "torch.relu(" + in.var + ")"
                    : "torch.leaky_relu(" + in.var + ", " + Num(*slope) + ")",
      in);
  return Status::Ok();
}

Status Builder::PixelShuffle(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0, 1}));
  const Blob& in = In(l.bottoms[0]);
  Result<int> r = l.Int(0, 1), mode = l.Int(1, 0);
  if (!r.ok()) return r.status();
  if (!mode.ok()) return mode.status();
  if (*r < 1 || in.channels % (*r * *r) != 0 || (*mode != 0 && *mode != 1)) {
    return Invalid(l, "needs an upscale factor whose square divides its " +
                          std::to_string(in.channels) + " channels, and mode 0 or 1");
  }
  int c = in.channels / (*r * *r);
  std::string rs = std::to_string(*r), cs = std::to_string(c);
  std::string expr = "torch.pixel_shuffle(" + in.var + ", " + rs + ")";
  if (*mode == 1) {  // channel (i*r + j)*C + c
    const std::string& v = in.var;
    expr = v + ".reshape([" + v + ".size(0), " + rs + ", " + rs + ", " + cs + ", " + v +
           ".size(2), " + v + ".size(3)]).permute([0, 3, 4, 1, 5, 2]).reshape([" + v +
           ".size(0), " + cs + ", " + v + ".size(2) * " + rs + ", " + v + ".size(3) * " + rs + "])";
  }
  Out(l, expr, Blob{"", c, in.scale * *r, in.reach});
  return Status::Ok();
}

Status Builder::Interp(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0, 1, 2, 3, 4, 5, 6}));
  const Blob& in = In(l.bottoms[0]);
  Result<int> type = l.Int(0, 0), oh = l.Int(3, 0), ow = l.Int(4, 0), dyn = l.Int(5, 0),
              align = l.Int(6, 0);
  Result<float> hs = l.Float(1, 1.f), ws = l.Float(2, 1.f);
  for (const auto* r : {&type, &oh, &ow, &dyn, &align}) {
    if (!r->ok()) return r->status();
  }
  if (!hs.ok()) return hs.status();
  if (!ws.ok()) return ws.status();
  if (*oh != 0 || *ow != 0 || *dyn != 0) {
    return Invalid(l, "resizes to a fixed or second-input size; only scale factors are supported");
  }
  if (*hs != *ws || *hs <= 0.f) return Invalid(l, "scales height and width differently");
  std::string s = Num(*hs), v = in.var;
  std::string size =
      "[int(float(" + v + ".size(2)) * " + s + "), int(float(" + v + ".size(3)) * " + s + ")]";
  std::string ac = *align != 0 ? "True" : "False";
  std::string expr;
  double taps = 0;  // source pixels each side the kernel reads
  switch (*type) {
    case 1:
      expr = "torch.upsample_nearest2d(" + v + ", " + size + ", None, None)";
      break;
    case 2:
      expr = "torch.upsample_bilinear2d(" + v + ", " + size + ", " + ac + ", None, None)";
      taps = 1;
      break;
    case 3:
      expr = "torch.upsample_bicubic2d(" + v + ", " + size + ", " + ac + ", None, None)";
      taps = 2;
      break;
    default:
      return Invalid(l, "resize_type " + std::to_string(*type) +
                            " is not supported (1 nearest, 2 bilinear, 3 bicubic)");
  }
  Out(l, expr, Blob{"", in.channels, in.scale * *hs, in.reach + taps / in.scale});
  return Status::Ok();
}

Status Builder::BinaryOp(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0, 1, 2}));
  Result<int> op = l.Int(0, 0), with_scalar = l.Int(1, 0);
  Result<float> scalar = l.Float(2, 0.f);
  if (!op.ok()) return op.status();
  if (!with_scalar.ok()) return with_scalar.status();
  if (!scalar.ok()) return scalar.status();
  const Blob& a = In(l.bottoms[0]);
  Blob out = a;
  std::string b = Num(*scalar);
  if (*with_scalar == 0) {
    const Blob& other = In(l.bottoms[1]);
    if (other.channels != a.channels || other.scale != a.scale) {
      return Invalid(l, "combines blobs of different shapes (" + std::to_string(a.channels) +
                            " channels at scale " + Num(a.scale) + ", " +
                            std::to_string(other.channels) + " at " + Num(other.scale) + ")");
    }
    b = other.var;
    out.reach = std::max(a.reach, other.reach);
  }
  bool tensors = *with_scalar == 0;
  const std::string& x = a.var;
  std::string expr;
  switch (*op) {
    case 0:
      expr = x + " + " + b;
      break;
    case 1:
      expr = x + " - " + b;
      break;
    case 2:
      expr = x + " * " + b;
      break;
    case 3:
      expr = x + " / " + b;
      break;
    case 4:
      expr =
          tensors ? "torch.maximum(" + x + ", " + b + ")" : "torch.clamp_min(" + x + ", " + b + ")";
      break;
    case 5:
      expr =
          tensors ? "torch.minimum(" + x + ", " + b + ")" : "torch.clamp_max(" + x + ", " + b + ")";
      break;
    case 6:
      expr = "torch.pow(" + x + ", " + b + ")";
      break;
    case 7:
      expr = tensors ? b + " - " + x : "torch.rsub(" + x + ", " + b + ")";
      break;
    case 8:
      expr = tensors ? b + " / " + x : "torch.reciprocal(" + x + ") * " + b;
      break;
    default:
      return Invalid(l, "op_type " + std::to_string(*op) + " is not supported (0..8)");
  }
  Out(l, expr, out);
  return Status::Ok();
}

Status Builder::Concat(const NcnnLayer& l) {
  FM_RETURN_IF_ERROR(l.OnlyKeys({0}));
  Result<int> axis = l.Int(0, 0);
  if (!axis.ok()) return axis.status();
  if (*axis != 0)
    return Invalid(l, "concatenates along axis " + std::to_string(*axis) +
                          "; only channels (0) are supported");
  Blob out = In(l.bottoms[0]);
  out.channels = 0;
  std::string list;
  for (const std::string& name : l.bottoms) {
    const Blob& b = In(name);
    if (b.scale != out.scale) return Invalid(l, "concatenates blobs of different sizes");
    out.channels += b.channels;
    out.reach = std::max(out.reach, b.reach);
    list += (list.empty() ? "" : ", ") + b.var;
  }
  Out(l, "torch.cat([" + list + "], 1)", out);
  return Status::Ok();
}

Result<Blob> Builder::Finish(const std::string& output_name) {
  const Blob& out = In(output_name);
  if (out.channels != 3) {
    return Status(StatusCode::kModelInvalid, "the network's output \"" + output_name + "\" has " +
                                                 std::to_string(out.channels) + " channels, not 3");
  }
  source_ += "    return torch.clamp(" + out.var + ", 0.0, 1.0)\n";
  return out;
}

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kIo, "cannot open " + path + ": " + std::strerror(errno));
  Result<std::string> bytes = ReadWholeFile(fd, path);
  ::close(fd);
  return bytes;
}

// "Convolution x18, PReLU x17, ..." in order of first appearance.
std::string LayerSummary(const NcnnGraph& graph) {
  std::vector<std::pair<std::string, int>> counts;
  for (const NcnnLayer& l : graph.layers) {
    if (l.type == "Input" || l.type == "Split") continue;
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == l.type; });
    if (it == counts.end()) {
      counts.emplace_back(l.type, 1);
    } else {
      ++it->second;
    }
  }
  std::string s;
  for (const auto& [type, n] : counts) {
    s += (s.empty() ? "" : ", ") + type + (n > 1 ? " x" + std::to_string(n) : "");
  }
  return s;
}

}  // namespace

Result<ImportedNetwork> ImportNcnnNetwork(const std::string& param_path,
                                          const std::string& bin_path) {
  Result<std::string> param_text = ReadFile(param_path);
  if (!param_text.ok()) return param_text.status();
  Result<NcnnGraph> graph = ParseNcnnParam(*param_text, param_path);
  if (!graph.ok()) return graph.status();
  Result<std::string> bin_bytes = ReadFile(bin_path);
  if (!bin_bytes.ok()) return bin_bytes.status();

  // The output: the one blob no layer uses.
  std::map<std::string, int> uses;
  for (const NcnnLayer& l : graph->layers) {
    for (const std::string& t : l.tops) uses[t];
    for (const std::string& b : l.bottoms) ++uses[b];
  }
  std::vector<std::string> outputs;
  for (const auto& [name, n] : uses) {
    if (n == 0) outputs.push_back(name);
  }
  if (outputs.size() != 1 || graph->layers[0].type != "Input") {
    return Status(StatusCode::kModelInvalid,
                  param_path +
                      ": framemill takes a network with one Input (the first layer) "
                      "and one output; this one has " +
                      std::to_string(outputs.size()) + " unused blobs");
  }

  ImportedNetwork net;
  try {
    NcnnBinReader bin(*bin_bytes, bin_path);
    Builder builder(&net.module, &bin);
    for (size_t i = 0; i < graph->layers.size(); ++i) {
      FM_RETURN_IF_ERROR(builder.Add(graph->layers[i], i));
    }
    FM_RETURN_IF_ERROR(bin.CheckAllRead());
    Result<Blob> out = builder.Finish(outputs[0]);
    if (!out.ok()) return out.status().WithContext(param_path);
    int scale = static_cast<int>(std::lround(out->scale));
    if (scale < 1 || std::fabs(out->scale - scale) > 1e-6) {
      return Status(StatusCode::kModelInvalid, param_path + ": the network scales frames by " +
                                                   Num(out->scale) + ", not a whole number");
    }
    net.module.define(builder.source());
    net.module.eval();
    net.scale = scale;
    net.receptive_field = static_cast<int>(std::ceil(out->reach - 1e-9));
    net.architecture = "ncnn network of " + std::to_string(graph->layers.size()) + " layers (" +
                       LayerSummary(*graph) + ")";
    net.source_channel_order = "rgb";
    net.source_value_range = "0-1";
  } catch (const std::exception& e) {
    return Status(StatusCode::kModelInvalid,
                  param_path + ": cannot build the TorchScript module: " + e.what());
  }
  return net;
}

}  // namespace framemill
