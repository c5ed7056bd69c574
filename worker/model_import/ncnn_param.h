// The text half of an ncnn network: the ".param" graph (magic 7767517, a line "LAYERS BLOBS",
// then one line per layer: type, name, input count, output count, input blob names, output blob
// names, "key=value" parameters). Parsed strictly: a wrong magic or count, a blob used before it
// is made or consumed twice, a repeated key or a value that is not a number is an error naming the
// file's line. What the layers mean is ncnn_network.cpp's business, not this file's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

// One parameter value. ncnn tells a float from an int by its spelling (a '.' or an exponent), and
// an array by its key (-23300 - id, value "COUNT,v1,...,vCOUNT").
struct NcnnValue {
  bool is_float = false;
  bool is_array = false;
  std::vector<double> values;  // one for a scalar; ints are exact in a double
};

struct NcnnLayer {
  std::string type;                  // "Convolution", "Interp", ...
  std::string name;                  // unique in the file
  std::string file;                  // the .param file's label (ParseNcnnParam's)
  int line = 0;                      // 1-based line in it
  std::vector<std::string> bottoms;  // input blob names
  std::vector<std::string> tops;     // output blob names
  std::map<int, NcnnValue> params;   // by id (0..31; arrays under their id, not -23300 - id)

  // "FILE line 5 (Convolution Conv_0)": how messages name the layer.
  std::string Where() const;

  // The value of `id` or `def` when absent. kModelInvalid (naming the layer and key) when the
  // value is spelled as the other kind (an int for a float parameter or the reverse) or is an
  // array: ncnn would read such a value as garbage bits, so it is refused, not converted.
  Result<int> Int(int id, int def) const;
  Result<float> Float(int id, float def) const;
  // An array of floats (an absent key gives an empty array).
  Result<std::vector<float>> FloatArray(int id) const;
  // kModelInvalid naming the first key not in `known`: a parameter the importer does not
  // understand could change what the layer computes.
  Status OnlyKeys(const std::vector<int>& known) const;
};

struct NcnnGraph {
  std::vector<NcnnLayer> layers;  // in file order, which is an order ncnn runs them in
  int blob_count = 0;
};

// Parses the text of a .param file; `label` names the file in messages. Errors are
// kModelInvalid: "LABEL line N: what is wrong".
Result<NcnnGraph> ParseNcnnParam(const std::string& text, const std::string& label);

}  // namespace framemill
