#include "worker/model_import/tfjs_layers_network.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <vector>

#include "common/file_util.h"
#include "common/json_fields.h"
#include "worker/model_import/tfjs_weights.h"

namespace framemill {
namespace {

constexpr int64_t kMaxModelJsonBytes = 64 << 20;
constexpr const char* kSupported =
    "InputLayer, Conv2D, Activation (linear, relu, sigmoid, tanh), Add, Concatenate (channels), "
    "UpSampling2D (nearest)";

// A tensor of the graph as the generated TorchScript names it, with what is known of it.
struct Value {
  std::string var;  // TorchScript local holding it (NCHW)
  int64_t channels = 0;
  int scale = 1;     // its size / the input's size
  double reach = 0;  // input pixels each side one of its pixels depends on
};

Status LayerError(const std::string& layer, const std::string& message) {
  return Status(StatusCode::kModelInvalid, "TF.js layer " + layer + ": " + message);
}

// A TorchScript identifier from a layer name: letters, digits and '_' kept, the rest '_'.
std::string Ident(const std::string& name, size_t index) {
  std::string out = "l" + std::to_string(index) + "_";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// [a, b] of a config key as two ints (Keras writes kernel_size, strides ... as lists).
bool Pair(const nlohmann::json& config, const char* key, int64_t* a, int64_t* b) {
  const nlohmann::json* v = config.contains(key) ? &config[key] : nullptr;
  if (v == nullptr || !v->is_array() || v->size() != 2 || !(*v)[0].is_number_integer() ||
      !(*v)[1].is_number_integer()) {
    return false;
  }
  *a = (*v)[0].get<int64_t>();
  *b = (*v)[1].get<int64_t>();
  return true;
}

// TorchScript for an activation by Keras name, applied to `var`; empty when unsupported.
std::string ActivationExpr(const std::string& activation, const std::string& var) {
  if (activation == "linear") return var;
  if (activation == "relu") return "torch.relu(" + var + ")";
  if (activation == "sigmoid") return "torch.sigmoid(" + var + ")";
  if (activation == "tanh") return "torch.tanh(" + var + ")";
  return "";
}

class GraphBuilder {
 public:
  GraphBuilder(std::map<std::string, TfjsWeight> weights, ImportedNetwork* net)
      : weights_(std::move(weights)), net_(net) {}

  Status AddLayer(const nlohmann::json& layer, size_t index);
  // The forward() source returning `output`, scaled by `top`; checks that every weight was used.
  Result<std::string> Finish(const std::string& output, double top);
  const std::map<std::string, Value>& values() const { return values_; }
  const std::map<std::string, int>& counts() const { return counts_; }

 private:
  Result<std::vector<Value>> Inputs(const nlohmann::json& layer, const std::string& name);
  Result<torch::Tensor> TakeWeight(const std::string& name, const std::vector<int64_t>& shape);
  Status Conv2D(const nlohmann::json& config, const std::string& name, const Value& in, Value* out);

  std::map<std::string, TfjsWeight> weights_;
  ImportedNetwork* net_;
  std::map<std::string, Value> values_;  // by layer name
  std::map<std::string, int> counts_;    // layers by class name
  std::string body_;
};

Result<std::vector<Value>> GraphBuilder::Inputs(const nlohmann::json& layer,
                                                const std::string& name) {
  const nlohmann::json& nodes = layer.value("inbound_nodes", nlohmann::json::array());
  if (!nodes.is_array() || nodes.size() != 1 || !nodes[0].is_array() || nodes[0].empty()) {
    return LayerError(name, "expected one inbound node (a Keras 2 functional model)");
  }
  std::vector<Value> in;
  for (const nlohmann::json& edge : nodes[0]) {
    if (!edge.is_array() || edge.size() < 3 || !edge[0].is_string() || edge[1] != 0 ||
        edge[2] != 0) {
      return LayerError(name, "an inbound edge other than [layer, 0, 0]: " + edge.dump());
    }
    auto it = values_.find(edge[0].get<std::string>());
    if (it == values_.end()) {
      return LayerError(name, "input " + edge[0].dump() + " is not a layer defined before it");
    }
    in.push_back(it->second);
  }
  return in;
}

Result<torch::Tensor> GraphBuilder::TakeWeight(const std::string& name,
                                               const std::vector<int64_t>& shape) {
  auto it = weights_.find(name);
  if (it == weights_.end()) {
    return Status(StatusCode::kModelInvalid, "TF.js weights: " + name + " is not in the manifest");
  }
  if (it->second.shape != shape) {
    std::string want, got;
    for (int64_t d : shape) want += (want.empty() ? "" : ",") + std::to_string(d);
    for (int64_t d : it->second.shape) got += (got.empty() ? "" : ",") + std::to_string(d);
    return Status(StatusCode::kModelInvalid, "TF.js weights: " + name + " has shape [" + got +
                                                 "], the layer needs [" + want + "]");
  }
  torch::Tensor t = it->second.value;
  weights_.erase(it);
  return t;
}

Status GraphBuilder::Conv2D(const nlohmann::json& c, const std::string& name, const Value& in,
                            Value* out) {
  int64_t kh = 0, kw = 0, sh = 0, sw = 0, dh = 1, dw = 1;
  if (!Pair(c, "kernel_size", &kh, &kw) || !Pair(c, "strides", &sh, &sw) || kh < 1 || kw < 1) {
    return LayerError(name, "kernel_size or strides missing");
  }
  if (c.contains("dilation_rate") && !Pair(c, "dilation_rate", &dh, &dw)) {
    return LayerError(name, "a bad dilation_rate");
  }
  const std::string padding = c.value("padding", "");
  const std::string format = c.value("data_format", "channels_last");
  const int64_t groups = c.value("groups", 1);
  const int64_t filters = c.value("filters", 0);
  const bool bias = c.value("use_bias", true);
  if (sh != 1 || sw != 1 || dh != 1 || dw != 1 || groups != 1 || format != "channels_last") {
    return LayerError(name, "only stride 1, dilation 1, groups 1, channels_last are imported");
  }
  // "same" with an odd kernel pads k/2 on each side, as torch does; "valid" keeps the frame size
  // only for 1x1 kernels. Anything else would break output = scale x input.
  if (!((padding == "same" && kh % 2 == 1 && kw % 2 == 1) ||
        (padding == "valid" && kh == 1 && kw == 1))) {
    return LayerError(name, "padding \"" + padding + "\" with a " + std::to_string(kh) + "x" +
                                std::to_string(kw) + " kernel changes the frame size");
  }
  const std::string act = c.value("activation", "linear");
  const std::string id = out->var;
  Result<torch::Tensor> kernel = TakeWeight(name + "/kernel", {kh, kw, in.channels, filters});
  if (!kernel.ok()) return kernel.status();
  // Keras: [kh, kw, in, out] (HWIO); torch: [out, in, kh, kw] (OIHW).
  net_->module.register_parameter(id + "_w", kernel->permute({3, 2, 0, 1}).contiguous(), false);
  std::string b = "None";
  if (bias) {
    Result<torch::Tensor> bt = TakeWeight(name + "/bias", {filters});
    if (!bt.ok()) return bt.status();
    net_->module.register_parameter(id + "_b", *bt, false);
    b = "self." + id + "_b";
  }
  std::string conv = "torch.conv2d(" + in.var + ", self." + id + "_w, " + b + ", [1, 1], [" +
                     std::to_string(kh / 2) + ", " + std::to_string(kw / 2) + "], [1, 1], 1)";
  std::string expr = ActivationExpr(act, conv);
  if (expr.empty()) return LayerError(name, "activation \"" + act + "\" is not imported");
  body_ += "    " + id + " = " + expr + "\n";
  out->channels = filters;
  out->scale = in.scale;
  out->reach = in.reach + static_cast<double>(std::max(kh, kw) / 2) / in.scale;
  return Status::Ok();
}

Status GraphBuilder::AddLayer(const nlohmann::json& layer, size_t index) {
  if (!layer.is_object() || !layer.contains("class_name") || !layer["class_name"].is_string() ||
      !layer.contains("config") || !layer["config"].is_object()) {
    return Status(StatusCode::kModelInvalid,
                  "TF.js layer #" + std::to_string(index) + ": no class_name or config");
  }
  const std::string type = layer["class_name"].get<std::string>();
  const nlohmann::json& c = layer["config"];
  const std::string name = layer.value("name", c.value("name", "#" + std::to_string(index)));
  if (values_.count(name) != 0) return LayerError(name, "named twice");
  ++counts_[type];
  Value out;
  out.var = Ident(name, index);
  if (type == "InputLayer") {
    const nlohmann::json& shape = c.value("batch_input_shape", nlohmann::json());
    if (!shape.is_array() || shape.size() != 4 || !shape[3].is_number_integer()) {
      return LayerError(name, "expected batch_input_shape [null, H, W, C]");
    }
    out.channels = shape[3].get<int64_t>();
    if (out.channels != 3) {
      return LayerError(name, "takes " + std::to_string(out.channels) + " channels, not RGB");
    }
    body_ += "    " + out.var + " = x\n";
    values_[name] = out;
    return Status::Ok();
  }
  Result<std::vector<Value>> in = Inputs(layer, name);
  if (!in.ok()) return in.status();
  const std::vector<Value>& v = *in;
  if (type == "Conv2D") {
    if (v.size() != 1) return LayerError(name, "expected one input");
    Status s = Conv2D(c, name, v[0], &out);
    if (!s.ok()) return s;
  } else if (type == "Activation") {
    if (v.size() != 1) return LayerError(name, "expected one input");
    const std::string act = c.value("activation", "");
    std::string expr = ActivationExpr(act, v[0].var);
    if (expr.empty()) return LayerError(name, "activation \"" + act + "\" is not imported");
    body_ += "    " + out.var + " = " + expr + "\n";
    out.channels = v[0].channels;
    out.scale = v[0].scale;
    out.reach = v[0].reach;
  } else if (type == "Add" || type == "Concatenate") {
    if (v.size() < 2) return LayerError(name, "expected two inputs or more");
    const bool cat = type == "Concatenate";
    if (cat) {
      int axis = c.value("axis", -1);
      if (axis != 3 && axis != -1)
        return LayerError(name, "concatenates on an axis other than channels");
    }
    std::string expr;
    for (const Value& x : v) {
      if (x.scale != v[0].scale || (!cat && x.channels != v[0].channels)) {
        return LayerError(name, "inputs of different shapes");
      }
      expr += (expr.empty() ? "" : (cat ? ", " : " + ")) + x.var;
      out.channels = cat ? out.channels + x.channels : x.channels;
      out.reach = std::max(out.reach, x.reach);
    }
    out.scale = v[0].scale;
    body_ += "    " + out.var + " = " + (cat ? "torch.cat([" + expr + "], 1)" : expr) + "\n";
  } else if (type == "UpSampling2D") {
    int64_t uh = 0, uw = 0;
    if (v.size() != 1 || !Pair(c, "size", &uh, &uw) || uh != uw || uh < 1 || uh > 16 ||
        c.value("interpolation", "nearest") != "nearest" ||
        c.value("data_format", "channels_last") != "channels_last") {
      return LayerError(name, "only nearest, channels_last, equal sizes 1-16 are imported");
    }
    // Nearest with an integer factor: each pixel repeated s x s times (exactly TF's result).
    const std::string s = std::to_string(uh), x = v[0].var, o = out.var;
    body_ += "    " + o + "_n, " + o + "_c, " + o + "_h, " + o + "_w = " + x + ".size(0), " + x +
             ".size(1), " + x + ".size(2), " + x + ".size(3)\n";
    body_ += "    " + o + " = " + x + ".reshape([" + o + "_n, " + o + "_c, " + o + "_h, 1, " + o +
             "_w, 1]).expand([" + o + "_n, " + o + "_c, " + o + "_h, " + s + ", " + o + "_w, " + s +
             "]).reshape([" + o + "_n, " + o + "_c, " + o + "_h * " + s + ", " + o + "_w * " + s +
             "])\n";
    out.channels = v[0].channels;
    out.scale = v[0].scale * static_cast<int>(uh);
    out.reach = v[0].reach;
  } else {
    return LayerError(
        name, "layer type " + type + " is not imported (the importer takes " + kSupported + ")");
  }
  values_[name] = out;
  return Status::Ok();
}

Result<std::string> GraphBuilder::Finish(const std::string& output, double top) {
  if (!weights_.empty()) {
    return Status(StatusCode::kModelInvalid, "TF.js weights: " + weights_.begin()->first +
                                                 " (and " + std::to_string(weights_.size() - 1) +
                                                 " more) used by no layer");
  }
  const Value& out = values_.at(output);
  if (out.channels != 3) {
    return LayerError(output,
                      "the output has " + std::to_string(out.channels) + " channels, not RGB");
  }
  char scale[32];
  std::snprintf(scale, sizeof(scale), "%.1f", top);
  std::string src = "def forward(self, x):\n";
  src += "    x = x * " + std::string(scale) + "\n";
  src += body_;
  src += "    return torch.clamp(" + out.var + " / " + scale + ", 0.0, 1.0)\n";
  return src;
}

// The one name in model_config's input_layers / output_layers ([["LR", 0, 0]]).
Result<std::string> OnlyLayer(const nlohmann::json& config, const char* key) {
  const nlohmann::json& list = config.value(key, nlohmann::json());
  if (!list.is_array() || list.size() != 1 || !list[0].is_array() || list[0].empty() ||
      !list[0][0].is_string()) {
    return Status(StatusCode::kModelInvalid,
                  std::string("TF.js model: expected one of ") + key + ", got " + list.dump());
  }
  return list[0][0].get<std::string>();
}

}  // namespace

const char* Name(TfjsValueRange range) {
  switch (range) {
    case TfjsValueRange::kZeroToOne:
      return "0-1";
    case TfjsValueRange::kZeroTo255:
      return "0-255";
  }
  return "?";
}

Result<ImportedNetwork> ImportTfjsLayersNetwork(const std::string& model_json_path,
                                                TfjsValueRange range) {
  Result<nlohmann::json> j = ReadJsonFile(model_json_path, kMaxModelJsonBytes,
                                          StatusCode::kModelInvalid, LinkPolicy::kFollow);
  if (!j.ok()) return j.status();
  try {
    if (j->value("format", "layers-model") != "layers-model" || !j->contains("modelTopology")) {
      return Status(StatusCode::kModelInvalid,
                    model_json_path + ": not a TF.js layers model (format " +
                        j->value("format", "?") + "; graph models are not imported)");
    }
    const nlohmann::json& topo = (*j)["modelTopology"];
    const nlohmann::json& model = topo.contains("model_config") ? topo["model_config"] : topo;
    const std::string cls = model.value("class_name", "");
    if ((cls != "Functional" && cls != "Model") || !model.contains("config") ||
        !model["config"].contains("layers") || !model["config"]["layers"].is_array()) {
      return Status(StatusCode::kModelInvalid,
                    model_json_path + ": expected a Keras functional model, got \"" + cls + "\"");
    }
    const nlohmann::json& config = model["config"];
    Result<std::string> input = OnlyLayer(config, "input_layers");
    if (!input.ok()) return input.status();
    Result<std::string> output = OnlyLayer(config, "output_layers");
    if (!output.ok()) return output.status();
    Result<std::map<std::string, TfjsWeight>> weights =
        ReadTfjsWeights(j->value("weightsManifest", nlohmann::json()), DirName(model_json_path));
    if (!weights.ok()) return weights.status().WithContext(model_json_path);

    ImportedNetwork net;
    GraphBuilder graph(std::move(*weights), &net);
    const nlohmann::json& layers = config["layers"];
    for (size_t i = 0; i < layers.size(); ++i) {
      Status s = graph.AddLayer(layers[i], i);
      if (!s.ok()) return s.WithContext(model_json_path);
    }
    if (graph.values().count(*input) == 0 || graph.values().count(*output) == 0) {
      return Status(StatusCode::kModelInvalid, model_json_path + ": input or output layer missing");
    }
    const double top = range == TfjsValueRange::kZeroTo255 ? 255.0 : 1.0;
    Result<std::string> src = graph.Finish(*output, top);
    if (!src.ok()) return src.status().WithContext(model_json_path);
    net.module.define(*src);
    net.module.eval();

    const Value& out = graph.values().at(*output);
    net.scale = out.scale;
    net.receptive_field = static_cast<int>(std::ceil(out.reach - 1e-9));
    net.source_value_range = Name(range);
    std::string counts;
    for (const auto& [type, n] : graph.counts()) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + type;
    }
    net.architecture = "TF.js layers model \"" + config.value("name", std::string("?")) +
                       "\" (Keras " + topo.value("keras_version", std::string("?")) + ", " +
                       std::to_string(layers.size()) + " layers: " + counts + ")";
    // One small frame through it: the graph runs and keeps the contract's shape.
    torch::NoGradGuard no_grad;
    torch::Tensor y = net.module.forward({torch::zeros({1, 3, 8, 8})}).toTensor();
    if (y.sizes() != torch::IntArrayRef({1, 3, 8 * net.scale, 8 * net.scale})) {
      return Status(StatusCode::kModelInvalid,
                    model_json_path + ": the imported graph's output shape is wrong");
    }
    return net;
  } catch (const std::exception& e) {
    return Status(StatusCode::kModelInvalid,
                  model_json_path + ": cannot import: " + std::string(e.what()).substr(0, 400));
  }
}

}  // namespace framemill
