#include "common/tile_setting.h"

#include <cstdlib>

namespace framemill {
namespace {

// Checks a fixed setting's bounds; "" when it is fine, else why not.
std::string FixedError(int64_t size, int64_t overlap) {
  if (size < kMinTileSize || size > kMaxTileSize) {
    return "size must be in " + std::to_string(kMinTileSize) + ".." + std::to_string(kMaxTileSize) +
           " pixels, got " + std::to_string(size);
  }
  if (overlap < 0 || overlap > kMaxTileOverlap) {
    return "overlap must be in 0.." + std::to_string(kMaxTileOverlap) + " pixels, got " +
           std::to_string(overlap);
  }
  if (size < 2 * overlap + kMinTileInterior) {
    return "size " + std::to_string(size) + " leaves too little between two overlaps of " +
           std::to_string(overlap) + ": it must be at least 2 * overlap + " +
           std::to_string(kMinTileInterior) + " = " +
           std::to_string(2 * overlap + kMinTileInterior);
  }
  return "";
}

TileSetting Auto() { return {TileMode::kAuto, 0, kAutoTileOverlap}; }

}  // namespace

std::string Name(const TileSetting& tile) {
  switch (tile.mode) {
    case TileMode::kOff:
      return "off";
    case TileMode::kAuto:
      return "auto";
    case TileMode::kFixed:
      return std::to_string(tile.size) + ":" + std::to_string(tile.overlap);
  }
  return "?";
}

std::optional<TileSetting> ParseTileSetting(const std::string& word) {
  if (word == "off") return TileSetting{};
  if (word == "auto") return Auto();
  size_t colon = word.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == word.size() ||
      word.find(':', colon + 1) != std::string::npos ||
      word.find_first_not_of("0123456789:") != std::string::npos || word.size() > 12) {
    return std::nullopt;
  }
  int64_t size = std::strtoll(word.substr(0, colon).c_str(), nullptr, 10);
  int64_t overlap = std::strtoll(word.substr(colon + 1).c_str(), nullptr, 10);
  if (!FixedError(size, overlap).empty()) return std::nullopt;
  return TileSetting{TileMode::kFixed, static_cast<int>(size), static_cast<int>(overlap)};
}

Result<TileSetting> ReadTileSetting(const nlohmann::json& value, const std::string& key_path,
                                    StatusCode code) {
  auto bad = [&](const std::string& why) { return Status(code, key_path + ": " + why); };
  const char* shapes = "must be \"off\", \"auto\" or {\"size\": N, \"overlap\": M}";
  if (value.is_string()) {
    const std::string& word = value.get_ref<const std::string&>();
    if (word == "off") return TileSetting{};
    if (word == "auto") return Auto();
    return bad(std::string(shapes) + ", got \"" + word + "\"");
  }
  if (!value.is_object()) return bad(shapes);
  int64_t size = 0, overlap = 0;
  for (const auto& [key, v] : value.items()) {
    if (key != "size" && key != "overlap")
      return bad("unknown key \"" + key + "\" (" + shapes + ")");
    if (!v.is_number_integer()) return bad(key + " must be an integer number of pixels");
    (key == "size" ? size : overlap) = v.get<int64_t>();
  }
  if (!value.contains("size")) return bad("size is missing");
  if (!value.contains("overlap")) return bad("overlap is missing");
  std::string why = FixedError(size, overlap);
  if (!why.empty()) return bad(why);
  return TileSetting{TileMode::kFixed, static_cast<int>(size), static_cast<int>(overlap)};
}

}  // namespace framemill
