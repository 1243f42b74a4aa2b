#include "engine/tokenize/pystring.h"

#include "engine/tokenize/utf8.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace engine::tokenize::pystring {
namespace {

bool inSet(char32_t cp, const std::u32string &set) { return set.find(cp) != std::u32string::npos; }

icu::UnicodeString toIcu(std::string_view text)
{
    return icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
}

std::string fromIcu(const icu::UnicodeString &value)
{
    std::string out;
    value.toUTF8String(out);
    return out;
}

bool isPrintable(char32_t cp)
{
    if (cp < 0x80)
        return cp >= 0x20 && cp != 0x7F;
    switch (u_charType(static_cast<UChar32>(cp))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR:
        return false;
    default:
        return true;
    }
}

/// The full title-case mapping of one code point ("ß" -> "Ss", "ǆ" -> "ǅ").
std::string titleCase(std::string_view oneCodePoint)
{
    icu::UnicodeString value = toIcu(oneCodePoint);
    value.toTitle(nullptr, icu::Locale::getRoot(), U_TITLECASE_NO_LOWERCASE | U_TITLECASE_NO_BREAK_ADJUSTMENT);
    return fromIcu(value);
}

} // namespace

bool isSpace(char32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    return utf8::isWhitespace(cp);
}

std::u32string decode(std::string_view text)
{
    std::u32string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();)
        out.push_back(utf8::next(text, pos));
    return out;
}

std::string encode(std::u32string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (const char32_t cp : text)
        utf8::append(out, cp);
    return out;
}

size_t length(std::string_view text)
{
    size_t count = 0;
    for (const char c : text)
        count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return count;
}

std::string strip(std::string_view text, const std::optional<std::string> &chars, bool left, bool right)
{
    const std::u32string cps = decode(text);
    const std::u32string set = chars ? decode(*chars) : std::u32string();
    auto strippable = [&](char32_t cp) { return chars ? inSet(cp, set) : isSpace(cp); };
    size_t begin = 0;
    size_t end = cps.size();
    if (left)
        while (begin < end && strippable(cps[begin]))
            ++begin;
    if (right)
        while (end > begin && strippable(cps[end - 1]))
            --end;
    return encode(std::u32string_view(cps).substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view text, const std::optional<std::string> &sep, int64_t maxsplit)
{
    std::vector<std::string> parts;
    if (sep) {
        if (sep->empty())
            throw std::invalid_argument("empty separator");
        size_t start = 0;
        while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
            const size_t at = text.find(*sep, start);
            if (at == std::string_view::npos)
                break;
            parts.emplace_back(text.substr(start, at - start));
            start = at + sep->size();
        }
        parts.emplace_back(text.substr(start));
        return parts;
    }
    const std::u32string cps = decode(text);
    size_t i = 0;
    while (true) {
        while (i < cps.size() && isSpace(cps[i]))
            ++i;
        if (i == cps.size())
            break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
            // CPython keeps the rest as it is, trailing whitespace included.
            parts.push_back(encode(std::u32string_view(cps).substr(i)));
            break;
        }
        const size_t start = i;
        while (i < cps.size() && !isSpace(cps[i]))
            ++i;
        parts.push_back(encode(std::u32string_view(cps).substr(start, i - start)));
    }
    return parts;
}

std::string replace(std::string_view text, std::string_view from, std::string_view to, int64_t count)
{
    std::string out;
    int64_t done = 0;
    if (from.empty()) {
        // Python inserts `to` before every code point and at the end.
        size_t pos = 0;
        while (pos <= text.size()) {
            if (count >= 0 && done == count) {
                out.append(text.substr(pos));
                break;
            }
            out.append(to);
            ++done;
            if (pos == text.size())
                break;
            const size_t next = pos + static_cast<size_t>(utf8::sequenceLength(static_cast<unsigned char>(text[pos])));
            out.append(text.substr(pos, next - pos));
            pos = next;
        }
        return out;
    }
    size_t start = 0;
    while (count < 0 || done < count) {
        const size_t at = text.find(from, start);
        if (at == std::string_view::npos)
            break;
        out.append(text.substr(start, at - start));
        out.append(to);
        start = at + from.size();
        ++done;
    }
    out.append(text.substr(start));
    return out;
}

std::string upper(std::string_view text) { return fromIcu(toIcu(text).toUpper(icu::Locale::getRoot())); }

std::string lower(std::string_view text) { return fromIcu(toIcu(text).toLower(icu::Locale::getRoot())); }

std::string title(std::string_view text)
{
    // CPython's do_title: full title-case after an uncased character, full lower-case after a cased one.
    std::string out;
    bool previousCased = false;
    for (size_t pos = 0; pos < text.size();) {
        const size_t start = pos;
        const auto c = static_cast<UChar32>(utf8::next(text, pos));
        const std::string_view one = text.substr(start, pos - start);
        out += previousCased ? lower(one) : titleCase(one);
        previousCased = u_hasBinaryProperty(c, UCHAR_CASED);
    }
    return out;
}

std::string capitalize(std::string_view text)
{
    if (text.empty())
        return std::string();
    size_t first = 0;
    utf8::next(text, first);
    return titleCase(text.substr(0, first)) + lower(text.substr(first));
}

std::string repr(std::string_view text)
{
    const bool hasSingle = text.find('\'') != std::string_view::npos;
    const bool hasDouble = text.find('"') != std::string_view::npos;
    const char quote = hasSingle && !hasDouble ? '"' : '\'';
    std::string out(1, quote);
    for (size_t pos = 0; pos < text.size();) {
        const size_t start = pos;
        const char32_t cp = utf8::next(text, pos);
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (!isPrintable(cp)) {
            char buffer[16];
            if (cp < 0x100)
                std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(cp));
            else if (cp < 0x10000)
                std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(cp));
            else
                std::snprintf(buffer, sizeof buffer, "\\U%08x", static_cast<unsigned>(cp));
            out += buffer;
        } else {
            out.append(text.substr(start, pos - start));
        }
    }
    out += quote;
    return out;
}

std::string formatFloat(double value)
{
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value < 0 ? "-inf" : "inf";
    // Shortest round-trip digits, then Python's float_repr_style rule: positional notation when
    // -4 < exponent + 1 <= 16, else d.ddde+XX.
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    const std::string scientific(buffer, result.ptr);
    const size_t ePos = scientific.find('e');
    std::string mantissa = scientific.substr(0, ePos);
    const int exponent = std::stoi(scientific.substr(ePos + 1));
    const bool negative = mantissa[0] == '-';
    if (negative)
        mantissa.erase(0, 1);
    std::string digits;
    for (const char c : mantissa)
        if (c != '.')
            digits += c;
    const int point = exponent + 1; // digits before the decimal point
    std::string out = negative ? "-" : "";
    if (point > -4 && point <= 16) {
        if (point <= 0) {
            out += "0.";
            out.append(static_cast<size_t>(-point), '0');
            out += digits;
        } else if (static_cast<size_t>(point) >= digits.size()) {
            out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
        out += '.';
        out.append(digits, 1);
    }
    char exponentText[16];
    std::snprintf(exponentText, sizeof exponentText, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exponentText;
}

} // namespace engine::tokenize::pystring
