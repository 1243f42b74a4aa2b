#include "engine/tokenize/textpattern.h"

#include "engine/tokenize/jsonfields.h"

namespace engine::tokenize {

TextPattern::TextPattern(const nlohmann::json &pattern, const std::string &where, const std::string &path)
{
    if (!pattern.is_object())
        throw invalidInput(fields::at(where, path) + " is not an object with \"String\" or \"Regex\"");
    if (const auto it = pattern.find("String"); it != pattern.end() && it->is_string()) {
        m_literal = it->get<std::string>();
    } else if (const auto rit = pattern.find("Regex"); rit != pattern.end() && rit->is_string()) {
        m_regex = std::make_unique<OnigRegex>(rit->get<std::string>(), fields::at(where, path + ".Regex"));
    } else {
        throw invalidInput(fields::at(where, path) + " has neither a \"String\" nor a \"Regex\"");
    }
}

std::vector<std::pair<size_t, size_t>> TextPattern::findAll(std::string_view text) const
{
    if (m_regex)
        return m_regex->findAll(text);
    std::vector<std::pair<size_t, size_t>> matches;
    if (m_literal.empty())
        return matches;
    for (size_t pos = text.find(m_literal); pos != std::string_view::npos; pos = text.find(m_literal, pos + m_literal.size()))
        matches.emplace_back(pos, pos + m_literal.size());
    return matches;
}

std::string TextPattern::replaceAll(std::string_view text, std::string_view content) const
{
    std::string out;
    size_t last = 0;
    for (const auto &[begin, end] : findAll(text)) {
        out.append(text.substr(last, begin - last));
        out.append(content);
        last = end;
    }
    out.append(text.substr(last));
    return out;
}

} // namespace engine::tokenize
