#pragma once
// Pieces shared by the commands that run a saved model (score, generate).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace app::cli {

/// Parses "1,2,3" (spaces allowed) into ids. Throws engine::Error(InvalidInput) naming `option`.
std::vector<int64_t> parseIdList(const std::string &text, const std::string &option);

/// Runs a command body and turns an escaping exception into one line on stderr and exit code 1.
int reportingErrors(const std::function<int()> &body);

} // namespace app::cli
