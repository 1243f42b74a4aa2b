#pragma once
// Tokenizer of the chat-template interpreter: Jinja2's lexer with the environment transformers
// uses (trim_blocks and lstrip_blocks on, keep_trailing_newline off). Internal to engine/tokenize.

#include "engine/core/error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace engine::tokenize::jinja {

enum class TokenType {
    Data,          ///< template text between tags, whitespace control already applied
    VariableBegin, ///< {{
    VariableEnd,   ///< }}
    BlockBegin,    ///< {%
    BlockEnd,      ///< %}
    Name,
    String,        ///< text holds the unescaped value
    Integer,
    Float,
    Operator,      ///< text holds the operator: "+", "//", "==", "(", ...
    End,
};

struct Token {
    TokenType type = TokenType::End;
    std::string text;
    int64_t integer = 0;
    double floating = 0.0;
    size_t offset = 0; ///< byte offset in the normalized source
};

/// The source as Jinja reads it: "\r\n" and "\r" become "\n", and one trailing newline is dropped.
std::string normalizeSource(std::string_view source);

/// Turns byte offsets of a normalized source into "line:column" (1-based, columns in code points)
/// and builds the errors that name them.
class SourceLocator {
public:
    explicit SourceLocator(std::string_view source);
    std::string describe(size_t offset) const;
    /// Error(InvalidInput) "chat template line L:C: <what>".
    Error error(size_t offset, const std::string &what) const;

private:
    std::string m_source;
    std::vector<size_t> m_lineStarts;
};

/// Tokenizes a normalized source; comments are dropped. Throws Error(InvalidInput) for unclosed
/// tags, comments and strings, unbalanced brackets, unexpected characters and {% raw %}.
std::vector<Token> lex(const std::string &source, const SourceLocator &locator);

} // namespace engine::tokenize::jinja
