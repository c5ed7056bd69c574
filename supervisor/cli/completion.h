// Shell completion made from the command-line parser itself, so that it names exactly the
// commands and options the binary accepts. Installed by the package as
// /usr/share/bash-completion/completions/framemill (generated at build time).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace framemill {

// A bash script defining and registering `_framemill`: after `framemill` it offers the commands
// and global options; after a command its options and sub-commands (model export|list); an
// option that takes a value, and positional arguments, complete file names.
std::string BashCompletion(const CLI::App& app);

}  // namespace framemill
