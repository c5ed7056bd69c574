// Where the tests find the trained models scripts/fetch-model-packages.sh fetched:
// $FRAMEMILL_MODEL_PACKAGES, else .deps/model-packages in the source tree. Missing files fail the
// test with the command that fetches them (the README's test command runs it first).
#pragma once

#include <cstdlib>
#include <string>
#include <sys/stat.h>

#include <doctest/doctest.h>

namespace framemill::unit {

inline std::string ModelPackagesDir() {
  const char* env = std::getenv("FRAMEMILL_MODEL_PACKAGES");
  return env != nullptr && *env != '\0'
             ? env
             : std::string(FRAMEMILL_SOURCE_DIR) + "/.deps/model-packages";
}

// `relative` inside the packages directory, which must exist.
inline std::string PackageFile(const std::string& relative) {
  const std::string path = ModelPackagesDir() + "/" + relative;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    FAIL(path << " is missing: run scripts/fetch-model-packages.sh (or set "
                 "FRAMEMILL_MODEL_PACKAGES to where it put the packages)");
  }
  return path;
}

}  // namespace framemill::unit
