#include "engine/tokenize/jinja/jinjalexer.h"

#include "engine/tokenize/pystring.h"
#include "engine/tokenize/utf8.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

namespace engine::tokenize::jinja {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }
bool isHex(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool startsWith(const std::string &text, size_t pos, std::string_view prefix)
{
    return text.compare(pos, prefix.size(), prefix) == 0;
}

/// Skips Python whitespace (regex \s) from `pos`.
size_t skipSpace(const std::string &text, size_t pos)
{
    while (pos < text.size()) {
        size_t next = pos;
        if (!pystring::isSpace(utf8::next(text, next)))
            break;
        pos = next;
    }
    return pos;
}

bool allSpace(std::string_view text)
{
    for (size_t pos = 0; pos < text.size();)
        if (!pystring::isSpace(utf8::next(text, pos)))
            return false;
    return true;
}

/// Digits with single underscores between them ((\d+_)*\d+); returns the end or `pos` when none.
size_t scanDigits(const std::string &text, size_t pos)
{
    size_t end = pos;
    size_t i = pos;
    while (i < text.size() && isDigit(text[i])) {
        while (i < text.size() && isDigit(text[i]))
            ++i;
        end = i;
        if (i + 1 < text.size() && text[i] == '_' && isDigit(text[i + 1]))
            ++i;
        else
            break;
    }
    return end;
}

/// Jinja's float_re at `pos` (not after a '.'); returns the end or `pos`.
size_t scanFloat(const std::string &text, size_t pos)
{
    const size_t whole = scanDigits(text, pos);
    if (whole == pos)
        return pos;
    // (\.digits)? e[+-]?digits
    size_t i = whole;
    if (i < text.size() && text[i] == '.') {
        const size_t fraction = scanDigits(text, i + 1);
        if (fraction > i + 1)
            i = fraction;
    }
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        size_t j = i + 1;
        if (j < text.size() && (text[j] == '+' || text[j] == '-'))
            ++j;
        const size_t exponent = scanDigits(text, j);
        if (exponent > j)
            return exponent;
    }
    // \.digits
    if (whole < text.size() && text[whole] == '.') {
        const size_t fraction = scanDigits(text, whole + 1);
        if (fraction > whole + 1)
            return fraction;
    }
    return pos;
}

/// Jinja's integer_re at `pos`: 0b/0o/0x forms, [1-9](_?\d)*, 0(_?0)*; returns the end or `pos`.
size_t scanInteger(const std::string &text, size_t pos, int *base)
{
    *base = 10;
    if (text[pos] == '0' && pos + 1 < text.size()) {
        const char prefix = static_cast<char>(text[pos + 1] | 0x20);
        auto valid = [&](char c) {
            return prefix == 'b' ? (c == '0' || c == '1') : prefix == 'o' ? (c >= '0' && c <= '7') : isHex(c);
        };
        if (prefix == 'b' || prefix == 'o' || prefix == 'x') {
            size_t i = pos + 2;
            size_t end = pos;
            while (i < text.size()) {
                if (text[i] == '_' && i + 1 < text.size() && valid(text[i + 1]))
                    ++i;
                if (!valid(text[i]))
                    break;
                end = ++i;
            }
            if (end != pos) {
                *base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : 16;
                return end;
            }
        }
    }
    if (!isDigit(text[pos]))
        return pos;
    const bool zero = text[pos] == '0';
    size_t i = pos + 1;
    size_t end = i;
    while (i < text.size()) {
        size_t j = i;
        if (text[j] == '_')
            ++j;
        if (j >= text.size() || !(zero ? text[j] == '0' : isDigit(text[j])))
            break;
        i = end = j + 1;
    }
    return end;
}

void appendHexEscapeText(std::string &out, char32_t cp)
{
    // What Python's backslashreplace writes for a non-ASCII character, without the backslash.
    char buffer[16];
    if (cp < 0x100)
        std::snprintf(buffer, sizeof buffer, "x%02x", static_cast<unsigned>(cp));
    else if (cp < 0x10000)
        std::snprintf(buffer, sizeof buffer, "u%04x", static_cast<unsigned>(cp));
    else
        std::snprintf(buffer, sizeof buffer, "U%08x", static_cast<unsigned>(cp));
    out += buffer;
}

/// Python's unicode-escape decoding of a string literal's body, as Jinja applies it.
std::string unescape(const std::string &raw, size_t offset, const SourceLocator &locator)
{
    std::string out;
    for (size_t i = 0; i < raw.size();) {
        if (raw[i] != '\\') {
            out += raw[i++];
            continue;
        }
        const size_t at = offset + i;
        const char c = raw[i + 1]; // the lexer guarantees a character after each backslash
        i += 2;
        switch (c) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
            const size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            if (i + digits > raw.size() ||
                !std::all_of(raw.begin() + static_cast<long>(i), raw.begin() + static_cast<long>(i + digits), isHex))
                throw locator.error(at, std::string("truncated \\") + c + " escape in string literal");
            const unsigned long cp = std::stoul(raw.substr(i, digits), nullptr, 16);
            if (cp > 0x10FFFF)
                throw locator.error(at, "illegal Unicode character in string literal");
            if (cp >= 0xD800 && cp <= 0xDFFF)
                throw locator.error(at, "surrogate code point in string literal");
            utf8::append(out, static_cast<char32_t>(cp));
            i += digits;
            break;
        }
        case 'N': throw locator.error(at, "\\N{...} escapes are not supported");
        default:
            if (c >= '0' && c <= '7') {
                unsigned cp = static_cast<unsigned>(c - '0');
                for (int k = 0; k < 2 && i < raw.size() && raw[i] >= '0' && raw[i] <= '7'; ++k)
                    cp = cp * 8 + static_cast<unsigned>(raw[i++] - '0');
                utf8::append(out, cp);
            } else if (static_cast<unsigned char>(c) >= 0x80) {
                // Python turns the character into "\xe9" first, so the backslash stays literal text.
                size_t pos = i - 2 + 1;
                const char32_t cp = utf8::next(raw, pos);
                out += '\\';
                appendHexEscapeText(out, cp);
                i = pos;
            } else {
                out += '\\';
                out += c;
            }
        }
    }
    return out;
}

class Lexer {
public:
    Lexer(const std::string &source, const SourceLocator &locator) : m_source(source), m_locator(locator) {}

    std::vector<Token> run()
    {
        size_t pos = 0;
        while (pos < m_source.size()) {
            const size_t tag = findTagStart(pos);
            if (tag == std::string::npos) {
                emit(TokenType::Data, m_source.substr(pos), pos);
                break;
            }
            const char kind = m_source[tag + 1];
            size_t after = tag + 2;
            char sign = 0;
            if (after < m_source.size() && (m_source[after] == '-' || m_source[after] == '+'))
                sign = m_source[after++];
            std::string text = m_source.substr(pos, tag - pos);
            if (sign == '-') {
                text = pystring::strip(text, std::nullopt, false, true);
            } else if (sign != '+' && kind != '{') {
                // lstrip_blocks: whitespace between the line start and a block or comment tag goes.
                const size_t lineStart = text.rfind('\n') + 1; // npos + 1 == 0
                const bool atLineStart = pos == 0 || m_source[pos - 1] == '\n';
                if ((lineStart > 0 || atLineStart) && lineStart < text.size() &&
                    allSpace(std::string_view(text).substr(lineStart)))
                    text.resize(lineStart);
            }
            if (!text.empty())
                emit(TokenType::Data, text, pos);
            if (kind == '#') {
                pos = skipComment(tag, after);
                continue;
            }
            if (kind == '%' && isRawTag(after))
                throw m_locator.error(tag, "{% raw %} blocks are not supported");
            emit(kind == '{' ? TokenType::VariableBegin : TokenType::BlockBegin, kind == '{' ? "{{" : "{%", tag);
            pos = lexTag(tag, after, kind == '%');
        }
        emit(TokenType::End, "", m_source.size());
        return std::move(m_tokens);
    }

private:
    size_t findTagStart(size_t pos) const
    {
        for (size_t i = m_source.find('{', pos); i != std::string::npos; i = m_source.find('{', i + 1))
            if (i + 1 < m_source.size() && (m_source[i + 1] == '{' || m_source[i + 1] == '%' || m_source[i + 1] == '#'))
                return i;
        return std::string::npos;
    }

    void emit(TokenType type, std::string text, size_t offset)
    {
        Token token;
        token.type = type;
        token.text = std::move(text);
        token.offset = offset;
        m_tokens.push_back(std::move(token));
    }

    size_t skipComment(size_t tag, size_t after) const
    {
        const size_t end = m_source.find("#}", after);
        if (end == std::string::npos)
            throw m_locator.error(tag, "comment is never closed (missing '#}')");
        const char sign = end > after ? m_source[end - 1] : 0;
        if (sign == '-')
            return skipSpace(m_source, end + 2);
        if (sign != '+' && end + 2 < m_source.size() && m_source[end + 2] == '\n')
            return end + 3; // trim_blocks
        return end + 2;
    }

    bool isRawTag(size_t pos) const
    {
        pos = skipSpace(m_source, pos);
        if (!startsWith(m_source, pos, "raw"))
            return false;
        pos = skipSpace(m_source, pos + 3);
        return startsWith(m_source, pos, "%}") || startsWith(m_source, pos, "-%}");
    }

    /// Tokens of one {{ }} or {% %} up to and including its end; returns the position after it.
    size_t lexTag(size_t tag, size_t pos, bool block)
    {
        std::vector<std::pair<char, size_t>> open; // brackets to close, with where they opened
        while (true) {
            if (pos >= m_source.size()) {
                if (!open.empty())
                    throw m_locator.error(open.back().second,
                                          std::string("'") + open.back().first + "' is never closed");
                throw m_locator.error(tag, block ? "'{%' tag is never closed (missing '%}')"
                                                 : "'{{' tag is never closed (missing '}}')");
            }
            if (open.empty()) {
                if (block && startsWith(m_source, pos, "+%}")) {
                    emit(TokenType::BlockEnd, "%}", pos);
                    return pos + 3;
                }
                if (startsWith(m_source, pos, block ? "-%}" : "-}}")) {
                    emit(block ? TokenType::BlockEnd : TokenType::VariableEnd, block ? "%}" : "}}", pos);
                    return skipSpace(m_source, pos + 3);
                }
                if (startsWith(m_source, pos, block ? "%}" : "}}")) {
                    emit(block ? TokenType::BlockEnd : TokenType::VariableEnd, block ? "%}" : "}}", pos);
                    pos += 2;
                    if (block && pos < m_source.size() && m_source[pos] == '\n')
                        ++pos; // trim_blocks
                    return pos;
                }
            }
            const size_t spaceEnd = skipSpace(m_source, pos);
            if (spaceEnd > pos) {
                pos = spaceEnd;
                continue;
            }
            pos = lexToken(pos, open);
        }
    }

    size_t lexToken(size_t pos, std::vector<std::pair<char, size_t>> &open)
    {
        const char c = m_source[pos];
        if (isDigit(c)) {
            const bool afterDot = pos > 0 && m_source[pos - 1] == '.';
            const size_t floatEnd = afterDot ? pos : scanFloat(m_source, pos);
            if (floatEnd > pos) {
                std::string digits;
                for (size_t i = pos; i < floatEnd; ++i)
                    if (m_source[i] != '_')
                        digits += m_source[i];
                emit(TokenType::Float, m_source.substr(pos, floatEnd - pos), pos);
                // As Python's float(): 1e999 is inf and 1e-999 is 0.0 (std::stod throws for both).
                m_tokens.back().floating = std::strtod(digits.c_str(), nullptr);
                return floatEnd;
            }
            int base = 10;
            const size_t intEnd = scanInteger(m_source, pos, &base);
            std::string digits;
            for (size_t i = pos + (base == 10 ? 0 : 2); i < intEnd; ++i)
                if (m_source[i] != '_')
                    digits += m_source[i];
            emit(TokenType::Integer, m_source.substr(pos, intEnd - pos), pos);
            try {
                m_tokens.back().integer = static_cast<int64_t>(std::stoll(digits, nullptr, base));
            } catch (const std::out_of_range &) {
                throw m_locator.error(pos, "integer literal does not fit in 64 bits");
            }
            return intEnd;
        }
        if (isNameStart(c)) {
            size_t end = pos + 1;
            while (end < m_source.size() && isNameChar(m_source[end]))
                ++end;
            emit(TokenType::Name, m_source.substr(pos, end - pos), pos);
            return end;
        }
        if (c == '\'' || c == '"') {
            size_t i = pos + 1;
            while (i < m_source.size() && m_source[i] != c)
                i += m_source[i] == '\\' ? 2 : 1;
            if (i >= m_source.size())
                throw m_locator.error(pos, "string literal is never closed (missing " + std::string(1, c) + ")");
            emit(TokenType::String, unescape(m_source.substr(pos + 1, i - pos - 1), pos + 1, m_locator), pos);
            return i + 1;
        }
        static const std::array<std::string_view, 6> twoChar = {"//", "**", "==", "!=", ">=", "<="};
        for (const std::string_view op : twoChar)
            if (startsWith(m_source, pos, op)) {
                emit(TokenType::Operator, std::string(op), pos);
                return pos + 2;
            }
        static const std::string_view oneChar = "+-/*%~[](){}><=.:|,;";
        if (oneChar.find(c) == std::string_view::npos) {
            size_t next = pos;
            const char32_t cp = utf8::next(m_source, next);
            std::string shown;
            utf8::append(shown, cp);
            throw m_locator.error(pos, "unexpected character '" + shown + "'");
        }
        if (c == '(' || c == '[' || c == '{') {
            open.emplace_back(c, pos);
        } else if (c == ')' || c == ']' || c == '}') {
            if (open.empty())
                throw m_locator.error(pos, std::string("unexpected '") + c + "'");
            const char opener = open.back().first;
            const char expected = opener == '(' ? ')' : opener == '[' ? ']' : '}';
            if (c != expected)
                throw m_locator.error(pos, std::string("unexpected '") + c + "', expected '" + expected + "'");
            open.pop_back();
        }
        emit(TokenType::Operator, std::string(1, c), pos);
        return pos + 1;
    }

    const std::string &m_source;
    const SourceLocator &m_locator;
    std::vector<Token> m_tokens;
};

} // namespace

std::string normalizeSource(std::string_view source)
{
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n')
                ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n')
        out.pop_back();
    return out;
}

SourceLocator::SourceLocator(std::string_view source) : m_source(source)
{
    m_lineStarts.push_back(0);
    for (size_t i = 0; i < m_source.size(); ++i)
        if (m_source[i] == '\n')
            m_lineStarts.push_back(i + 1);
}

std::string SourceLocator::describe(size_t offset) const
{
    const auto it = std::upper_bound(m_lineStarts.begin(), m_lineStarts.end(), offset);
    const size_t line = static_cast<size_t>(it - m_lineStarts.begin());
    const size_t start = m_lineStarts[line - 1];
    const size_t column = pystring::length(std::string_view(m_source).substr(start, offset - start)) + 1;
    return std::to_string(line) + ":" + std::to_string(column);
}

Error SourceLocator::error(size_t offset, const std::string &what) const
{
    return invalidInput("chat template line " + describe(offset) + ": " + what);
}

std::vector<Token> lex(const std::string &source, const SourceLocator &locator) { return Lexer(source, locator).run(); }

} // namespace engine::tokenize::jinja
