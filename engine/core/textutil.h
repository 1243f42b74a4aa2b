#pragma once
// Small text helpers shared by the parsers of user input (sizes, device lists).

#include <cctype>
#include <string_view>

namespace engine {

/// `s` without leading and trailing whitespace.
inline std::string_view trimWhitespace(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

} // namespace engine
