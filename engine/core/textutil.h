#pragma once
// Small text helpers shared by the parsers of user input (sizes, device lists) and their messages.

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

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

/// The items with `separator` between them: "a, b, c" for lists in messages.
inline std::string joined(const std::vector<std::string> &items, std::string_view separator = ", ")
{
    std::string text;
    for (const auto &item : items) {
        if (!text.empty())
            text += separator;
        text += item;
    }
    return text;
}

} // namespace engine
