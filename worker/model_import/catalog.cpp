#include "worker/model_import/catalog.h"

#include <unistd.h>

#include "common/file_util.h"
#include "common/model_card.h"
#include "common/sha256.h"
#include "worker/model_import/ncnn_network.h"
#include "worker/model_import/tfjs_layers_network.h"

namespace framemill {
namespace {

constexpr const char* kEsrganNetwork = "RDN super-resolution (UpscalerJS ESRGAN)";
constexpr const char* kAnimeNetwork = "SRVGGNetCompact (Real-ESRGAN realesr-animevideov3)";

std::vector<CatalogEntry> BuildCatalog() {
  std::vector<CatalogEntry> c;
  for (const char* size : {"slim", "medium"}) {
    for (int scale : {2, 3, 4, 8}) {
      CatalogEntry e;
      e.name = std::string("esrgan-") + size + "-x" + std::to_string(scale);
      e.package = std::string("@upscalerjs/esrgan-") + size;
      e.version = "1.0.0";
      e.files = {"models/x" + std::to_string(scale) + "/model.json"};
      e.importer = ImporterKind::kTfjsLayers;
      e.scale = scale;
      e.network = std::string(kEsrganNetwork) + ", " + size;
      e.licence = "MIT";
      c.push_back(e);
    }
  }
  for (int scale : {2, 3, 4}) {
    CatalogEntry e;
    const std::string base = "real-esrgan/models/realesr-animevideov3-x" + std::to_string(scale);
    e.name = "realesr-animevideov3-x" + std::to_string(scale);
    e.package = "waifu2x";
    e.version = "1.6.5";
    e.files = {base + ".param", base + ".bin"};
    e.importer = ImporterKind::kNcnn;
    e.scale = scale;
    e.network = kAnimeNetwork;
    e.licence = "BSD-3-Clause";
    c.push_back(e);
  }
  return c;
}

Result<ImportedNetwork> RunImporter(const CatalogEntry& e, const std::vector<std::string>& paths) {
  switch (e.importer) {
    case ImporterKind::kTfjsLayers:
      // UpscalerJS's RDN models take and give 0-255 (their inputRange/outputRange).
      return ImportTfjsLayersNetwork(paths[0], TfjsValueRange::kZeroTo255);
    case ImporterKind::kNcnn:
      return ImportNcnnNetwork(paths[0], paths[1]);
  }
  return Status(StatusCode::kInternal, "unknown importer");
}

}  // namespace

const char* Name(ImporterKind kind) {
  switch (kind) {
    case ImporterKind::kTfjsLayers:
      return "tfjs-layers";
    case ImporterKind::kNcnn:
      return "ncnn";
  }
  return "?";
}

const std::vector<CatalogEntry>& ModelCatalog() {
  static const std::vector<CatalogEntry> catalog = BuildCatalog();
  return catalog;
}

std::string PackageDirectory(const std::string& packages_dir, const CatalogEntry& entry) {
  std::string short_name = entry.package.substr(entry.package.rfind('/') + 1);
  return packages_dir + "/" + short_name + "-" + entry.version;
}

Status ImportCatalogModel(const std::string& name, const std::string& out,
                          const std::string& packages_dir) {
  const CatalogEntry* entry = nullptr;
  std::string known;
  for (const CatalogEntry& e : ModelCatalog()) {
    if (e.name == name) entry = &e;
    known += (known.empty() ? "" : ", ") + e.name;
  }
  if (entry == nullptr) {
    return Status(StatusCode::kInvalidJob,
                  "no importable model \"" + name + "\" (known: " + known + ")");
  }
  std::vector<std::string> paths;
  for (const std::string& f : entry->files) {
    paths.push_back(PackageDirectory(packages_dir, *entry) + "/package/" + f);
    if (!PathExists(paths.back())) {
      return Status(StatusCode::kInputMissing,
                    paths.back() + " not found: run scripts/fetch-model-packages.sh " +
                        packages_dir + " (it fetches " + entry->package + "@" + entry->version +
                        "), or pass --packages DIR");
    }
  }
  Result<ImportedNetwork> net = RunImporter(*entry, paths);
  if (!net.ok()) return net.status().WithContext("importing " + name);
  if (net->scale != entry->scale) {
    return Status(StatusCode::kModelInvalid, "importing " + name + ": the network scales by " +
                                                 std::to_string(net->scale) + ", not " +
                                                 std::to_string(entry->scale));
  }
  const std::string tmp = out + ".tmp." + std::to_string(::getpid());
  try {
    net->module.save(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    return Status(StatusCode::kIo, "cannot write " + tmp + ": " + e.what());
  }
  Result<std::string> sha = Sha256OfFile(tmp);
  Status s = sha.ok() ? SyncFile(tmp) : sha.status();
  if (s.ok()) s = DurableRename(tmp, out);
  if (!s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  ModelCard card;
  card.name = name;
  card.format = "torchscript";
  card.architecture = entry->network + ": " + net->architecture;
  card.scale = net->scale;
  card.channels = 3;
  card.source_channel_order = net->source_channel_order;
  card.source_value_range = net->source_value_range;
  card.receptive_field = net->receptive_field;
  card.min_size = net->min_size;
  card.max_size = net->max_size;
  card.size_multiple = net->size_multiple;
  card.licence = entry->licence;
  std::string files;
  for (const std::string& f : entry->files) files += (files.empty() ? "" : " ") + f;
  card.source = "npm:" + entry->package + "@" + entry->version + " " + files;
  card.sha256 = *sha;
  return SaveModelCard(out, card);
}

}  // namespace framemill
