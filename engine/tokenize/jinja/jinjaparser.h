#pragma once
// Syntax tree and parser of the chat-template interpreter, following Jinja2's grammar and operator
// precedence (filters bind tighter than arithmetic; `~` tighter than `+`). Internal to engine/tokenize.

#include "engine/tokenize/jinja/jinjalexer.h"
#include "engine/tokenize/jinja/jinjavalue.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace engine::tokenize::jinja {

enum class ExprKind {
    Literal,     ///< literal
    Name,        ///< name
    GetAttr,     ///< operands[0].name
    GetItem,     ///< operands[0][operands[1]]
    Slice,       ///< operands[0][operands[1]:operands[2]:operands[3]], absent parts null
    Call,        ///< operands[0](operands[1..], keywords)
    Filter,      ///< operands[0] | name(operands[1..], keywords)
    Test,        ///< operands[0] is [not] name(operands[1..], keywords)
    Not,
    Negate,
    Plus,
    Binary,      ///< operands[0] name operands[1]; name is "+", "-", "*", "/", "//", "%", "**", "~"
    Compare,     ///< operands[0] ops[0] operands[1] ops[1] ... (chained like Python)
    And,
    Or,
    Conditional, ///< operands[0] if operands[1] else operands[2] (null: undefined)
    List,
    Tuple,
    Dict,        ///< operands alternate key, value
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    ExprKind kind = ExprKind::Literal;
    size_t offset = 0;
    int depth = 1; ///< height of this subtree (a leaf is 1); the parser keeps it under kMaxNesting
    Value literal;
    std::string name;
    bool negated = false;
    std::vector<ExprPtr> operands;
    std::vector<std::string> ops;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
};

enum class StmtKind {
    Text,       ///< text
    Output,     ///< {{ expr }}
    If,         ///< branches, the last one's condition null for {% else %}
    For,        ///< for targets in expr [if filter]: body, elseBody
    Set,        ///< set targets = expr, or set targets[0].attribute = expr
    SetBlock,   ///< set targets[0] %} body {% endset
    Break,
    Continue,
    Generation, ///< transformers' {% generation %} body {% endgeneration %}: renders the body
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct IfBranch {
    ExprPtr condition;
    Body body;
};

struct Stmt {
    StmtKind kind = StmtKind::Text;
    size_t offset = 0;
    std::string text;
    ExprPtr expr;
    std::vector<IfBranch> branches;
    std::vector<std::string> targets;
    std::string attribute;
    ExprPtr filter;
    Body body;
    Body elseBody;
};

/// Parses tokens from lex(); throws Error(InvalidInput) naming line:column for syntax errors,
/// unknown filters and tests, and constructs the interpreter does not support (macros, includes...).
Body parse(const std::vector<Token> &tokens, const SourceLocator &locator);

} // namespace engine::tokenize::jinja
