// Finding model files by name: `--machine p100x4` and `--app circuit` look in
// $HONE_MODELS/{machines,apps}, then in the models/ folder of the source tree
// hone was built from. A value with a '/' or ending in ".toml" is a path.
#pragma once

#include "support/Expected.h"

#include <string>
#include <vector>

namespace hone::model {

/// The folders searched for `kind` ("machines" or "apps"), in order.
std::vector<std::string> modelFolders(const std::string &kind);
/// The names of the models of a kind that the search path holds.
std::vector<std::string> modelNames(const std::string &kind);
/// The file for `nameOrPath`; the error lists the known names and a did-you-mean.
support::Expected<std::string> findModel(const std::string &kind, const std::string &nameOrPath);

} // namespace hone::model
