#include "app/cli/modelcommandsupport.h"

#include "engine/core/error.h"

#include "app/cli/command.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace app::cli {

std::vector<int64_t> parseIdList(const std::string &text, const std::string &option)
{
    std::vector<int64_t> ids;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos)
            end = text.size();
        size_t first = pos, last = end;
        while (first < last && std::isspace(static_cast<unsigned char>(text[first])))
            ++first;
        while (last > first && std::isspace(static_cast<unsigned char>(text[last - 1])))
            --last;
        int64_t value = 0;
        const auto [ptr, ec] = std::from_chars(text.data() + first, text.data() + last, value);
        if (first == last || ec != std::errc() || ptr != text.data() + last || value < 0) {
            throw engine::invalidInput(option + ": '" + text.substr(first, last - first)
                                       + "' is not a token id (expected non-negative integers separated by commas)");
        }
        ids.push_back(value);
        pos = end + 1;
    }
    return ids;
}

int reportingErrors(const std::function<int()> &body)
{
    try {
        return body();
    } catch (const engine::Error &e) {
        std::fprintf(stderr, "tunebench: %s\n", e.what());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tunebench: internal error: %s\n", e.what());
    }
    return ExitFailed;
}

} // namespace app::cli
