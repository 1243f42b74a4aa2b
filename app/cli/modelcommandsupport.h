#pragma once
// Pieces shared by the commands that run a saved model (score, generate).

#include <cstdint>
#include <string>
#include <vector>

namespace app::cli {

/// Parses "1,2,3" (spaces allowed) into ids. Throws engine::Error(InvalidInput) naming `option`.
std::vector<int64_t> parseIdList(const std::string &text, const std::string &option);

} // namespace app::cli
