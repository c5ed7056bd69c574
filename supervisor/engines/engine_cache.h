// The compiled engines kept between jobs: one folder per engine key (engine_key.h) under
// <cache>/engines, where <cache> is the folder program answers are kept in
// (supervisor/process/program_answers.h: $CACHE_DIRECTORY for the service, else
// $XDG_CACHE_HOME/framemill or ~/.cache/framemill), made 0700.
//
//   <cache>/engines/<key id>/engine.pt2     the package (AOTInductor, scripts/export-pt2.py)
//                           /engine.pt2.json  its model card, as export-pt2.py wrote it
//                           /manifest.json  the key's text, the package's sha256 and size, when
//                                           and how it was built
//
// An entry is written whole into a folder of its own (".build-*") and renamed into place, so a
// reader sees an entry complete or not at all. It is believed only when its folder and files
// are this user's and no one else may write them, its manifest's key text is the key asked for,
// and the package's bytes, read through the descriptor the worker is then handed, have the
// manifest's sha256: a package edited in the cache, or one of another key, is never loaded.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/checked_file.h"
#include "common/status.h"
#include "supervisor/engines/engine_key.h"

namespace framemill {

// <cache>/engines, "" when no cache folder is named (no HOME, no $CACHE_DIRECTORY).
std::string EngineCacheDir();

struct CachedEngine {
  std::string id;        // the key's id, the folder's name
  std::string folder;    // its path
  std::string key_text;  // as the manifest has it
  std::string sha256;    // the package's
  int64_t bytes = 0;
  std::string built_at;  // UTC, ISO 8601
  double build_seconds = 0;
};

// The entry for `key` in `cache_dir`, checked as above, with the package open (`*package`) and
// its card's scale (`*scale`); nullopt when there is none. kModelInvalid when an entry is there
// and fails a check (the message says which; the caller runs without it).
Result<std::optional<CachedEngine>> FindEngine(const std::string& cache_dir, const EngineKey& key,
                                               UniqueFd* package, int* scale);

// Every entry in `cache_dir` (a folder whose manifest does not read is listed with an empty
// sha256), by id.
std::vector<CachedEngine> ListEngines(const std::string& cache_dir);

// Removes every entry and unfinished build; returns how many entries were removed.
Result<int> ClearEngines(const std::string& cache_dir);

// Holds `key`'s build lock in `cache_dir` (a file there, locked until the descriptor closes): one
// build of a key at a time across processes (two jobs of one model on two GPUs of one kind, a job
// and `framemill model compile`). Waits while another holds it; kCancelled once `stop` (may be
// null) is set first.
Result<UniqueFd> LockEngineKey(const std::string& cache_dir, const EngineKey& key,
                               const std::atomic<bool>* stop = nullptr);

// Moves a finished build folder (holding engine.pt2 and engine.pt2.json) into place as `key`'s
// entry, writing its manifest; an entry already there for the key is replaced.
Result<CachedEngine> KeepEngine(const std::string& cache_dir, const std::string& build_folder,
                                const EngineKey& key, double build_seconds);

}  // namespace framemill
