#pragma once
// Python str semantics on valid UTF-8, for the chat-template interpreter: lengths and indices count
// code points, whitespace is str.isspace(), case mapping is full Unicode (root locale).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace engine::tokenize::pystring {

/// str.isspace() for one code point (Unicode White_Space plus U+001C..U+001F, as Python has it).
bool isSpace(char32_t cp);

std::u32string decode(std::string_view text);
std::string encode(std::u32string_view text);

/// len(text): the number of code points.
size_t length(std::string_view text);

/// str.strip / lstrip / rstrip; `chars` absent strips whitespace.
std::string strip(std::string_view text, const std::optional<std::string> &chars, bool left, bool right);

/// str.split(sep, maxsplit): `sep` absent splits on runs of whitespace and drops empty parts;
/// maxsplit < 0 means no limit. Throws std::invalid_argument for an empty separator.
std::vector<std::string> split(std::string_view text, const std::optional<std::string> &sep, int64_t maxsplit);

/// str.replace(old, new, count); count < 0 replaces all. An empty `from` inserts between code points.
std::string replace(std::string_view text, std::string_view from, std::string_view to, int64_t count);

std::string upper(std::string_view text);
std::string lower(std::string_view text);
/// str.title(): a cased character after an uncased one is title-cased, the others lower-cased
/// (full mappings, one code point at a time: a final sigma is not special-cased as CPython does).
std::string title(std::string_view text);
/// str.capitalize(): the first code point title-cased, the rest lower-cased (full mappings).
std::string capitalize(std::string_view text);

/// repr(text) as Python writes it: single quotes unless the text holds ' and no ".
std::string repr(std::string_view text);

/// repr(value) for a float: the shortest round-trip digits, "1.0", "1e+16", "1e-05", "inf", "nan".
std::string formatFloat(double value);

} // namespace engine::tokenize::pystring
