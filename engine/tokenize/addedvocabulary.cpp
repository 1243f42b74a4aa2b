#include "engine/tokenize/addedvocabulary.h"

#include "engine/tokenize/utf8.h"

#include <algorithm>

namespace engine::tokenize {
namespace {

/// The code point that ends at `end` (which must be > 0).
char32_t previousChar(std::string_view text, size_t end)
{
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
        --start;
    return utf8::next(text, start);
}

/// Start of the run of whitespace that ends at `end`.
size_t whitespaceStartBefore(std::string_view text, size_t end)
{
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
            --start;
        size_t probe = start;
        if (!utf8::isWhitespace(utf8::next(text, probe)))
            break;
        end = start;
    }
    return end;
}

/// End of the run of whitespace that starts at `pos`.
size_t whitespaceEndAfter(std::string_view text, size_t pos)
{
    while (pos < text.size()) {
        size_t probe = pos;
        if (!utf8::isWhitespace(utf8::next(text, probe)))
            break;
        pos = probe;
    }
    return pos;
}

} // namespace

void AddedVocabulary::Trie::insert(std::string_view text, int token)
{
    if (text.empty())
        return;
    int node = 0;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        auto &children = nodes[node].children;
        const auto it = std::find_if(children.begin(), children.end(), [&](const auto &p) { return p.first == byte; });
        if (it != children.end()) {
            node = it->second;
        } else {
            const int child = static_cast<int>(nodes.size());
            children.emplace_back(byte, child);
            nodes.emplace_back();
            node = child;
        }
    }
    nodes[node].token = token;
    firstByte[static_cast<unsigned char>(text.front())] = true;
}

std::pair<int, size_t> AddedVocabulary::Trie::longestAt(std::string_view text, size_t pos) const
{
    std::pair<int, size_t> best{-1, 0};
    if (!firstByte[static_cast<unsigned char>(text[pos])])
        return best;
    int node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto &children = nodes[node].children;
        const auto it = std::find_if(children.begin(), children.end(), [&](const auto &p) { return p.first == byte; });
        if (it == children.end())
            break;
        node = it->second;
        if (nodes[node].token >= 0)
            best = {nodes[node].token, i + 1 - pos};
    }
    return best;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : m_tokens(std::move(tokens))
{
    for (size_t i = 0; i < m_tokens.size(); ++i) {
        const AddedToken &token = m_tokens[i];
        m_byId[token.id] = i;
        m_idByContent[token.content] = token.id;
        (token.normalized ? m_normalized : m_raw).insert(token.content, static_cast<int>(i));
    }
}

const AddedToken *AddedVocabulary::byId(int id) const
{
    const auto it = m_byId.find(id);
    return it == m_byId.end() ? nullptr : &m_tokens[it->second];
}

int AddedVocabulary::idOf(std::string_view content) const
{
    const auto it = m_idByContent.find(std::string(content));
    return it == m_idByContent.end() ? -1 : it->second;
}

std::vector<AddedVocabulary::Segment> AddedVocabulary::split(std::string_view text, bool normalized) const
{
    const Trie &trie = normalized ? m_normalized : m_raw;
    std::vector<Segment> segments;
    if (trie.nodes.size() == 1) {
        segments.push_back({text, -1});
        return segments;
    }
    size_t consumed = 0; // end of the last token (including stripped whitespace)
    size_t pos = 0;
    while (pos < text.size()) {
        const auto [index, length] = trie.longestAt(text, pos);
        if (index < 0) {
            ++pos;
            continue;
        }
        const AddedToken &token = m_tokens[static_cast<size_t>(index)];
        size_t start = pos;
        size_t stop = pos + length;
        if (token.singleWord) {
            const bool wordBefore = start > 0 && utf8::isWordChar(previousChar(text, start));
            size_t probe = stop;
            const bool wordAfter = stop < text.size() && utf8::isWordChar(utf8::next(text, probe));
            if (wordBefore || wordAfter) {
                pos = stop; // the automaton does not report overlapping matches
                continue;
            }
        }
        if (token.lstrip)
            start = std::max(whitespaceStartBefore(text, start), consumed);
        if (token.rstrip)
            stop = whitespaceEndAfter(text, stop);
        if (start > consumed)
            segments.push_back({text.substr(consumed, start - consumed), -1});
        segments.push_back({text.substr(start, stop - start), token.id});
        consumed = stop;
        pos = stop;
    }
    if (consumed < text.size())
        segments.push_back({text.substr(consumed), -1});
    return segments;
}

} // namespace engine::tokenize
