// The library search paths an ELF file carries (DT_RUNPATH, or the older DT_RPATH), read from the
// file itself. A Python-installed LibTorch finds the CUDA libraries it loads late (NVRTC,
// cuSPARSELt, cuFFT ...) through such paths ("$ORIGIN/../../nvidia/cuda_nvrtc/lib"), so the
// sandbox grants them beside the directories of the libraries already mapped.
#pragma once

#include <string>
#include <vector>

namespace framemill {

// The directories named by `path`'s DT_RUNPATH and DT_RPATH entries, with $ORIGIN (and
// ${ORIGIN}) replaced by the file's directory. Empty for a file that is not a 64-bit ELF file,
// has no such entry, or cannot be read; never fails.
std::vector<std::string> ElfRunPaths(const std::string& path);

}  // namespace framemill
