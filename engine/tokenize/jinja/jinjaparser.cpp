#include "engine/tokenize/jinja/jinjaparser.h"

#include "engine/tokenize/jinja/jinjabuiltins.h"
#include "engine/tokenize/jinja/jinjalimits.h"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace engine::tokenize::jinja {
namespace {

/// Jinja2 tags the interpreter refuses, with a clear message rather than "unknown tag".
constexpr std::array<std::string_view, 14> kUnsupportedTags = {
    "macro", "call", "filter", "include", "import", "from", "extends",
    "block", "with", "autoescape", "do", "trans", "print", "raw"};

class Parser {
public:
    Parser(const std::vector<Token> &tokens, const SourceLocator &locator) : m_tokens(tokens), m_locator(locator) {}

    Body parseTemplate()
    {
        Body body = parseBody({}, 0, "");
        return body;
    }

private:
    const Token &current() const { return m_tokens[m_pos]; }
    const Token &peek(size_t ahead = 1) const { return m_tokens[std::min(m_pos + ahead, m_tokens.size() - 1)]; }
    const Token &advance()
    {
        const Token &token = m_tokens[m_pos];
        if (m_pos + 1 < m_tokens.size())
            ++m_pos;
        return token;
    }

    static bool isName(const Token &token, std::string_view name)
    {
        return token.type == TokenType::Name && token.text == name;
    }
    static bool isOp(const Token &token, std::string_view op)
    {
        return token.type == TokenType::Operator && token.text == op;
    }

    static std::string describe(const Token &token)
    {
        switch (token.type) {
        case TokenType::Data: return "template text";
        case TokenType::VariableBegin: return "'{{'";
        case TokenType::VariableEnd: return "'}}'";
        case TokenType::BlockBegin: return "'{%'";
        case TokenType::BlockEnd: return "'%}'";
        case TokenType::Name: return "'" + token.text + "'";
        case TokenType::String: return "a string";
        case TokenType::Integer:
        case TokenType::Float: return "the number " + token.text;
        case TokenType::Operator: return "'" + token.text + "'";
        case TokenType::End: return "the end of the template";
        }
        return "?";
    }

    [[noreturn]] void fail(const Token &token, const std::string &what) const { throw m_locator.error(token.offset, what); }

    void expectOp(std::string_view op)
    {
        if (!isOp(current(), op))
            fail(current(), "expected '" + std::string(op) + "', found " + describe(current()));
        advance();
    }

    void expectBlockEnd(std::string_view tag)
    {
        if (current().type != TokenType::BlockEnd)
            fail(current(), "expected '%}' to end '{% " + std::string(tag) + " %}', found " + describe(current()));
        advance();
    }

    std::string expectName(std::string_view what)
    {
        if (current().type != TokenType::Name)
            fail(current(), "expected " + std::string(what) + ", found " + describe(current()));
        return advance().text;
    }

    /// Statements up to a {% name %} with name in `ends`; leaves that name token current.
    Body parseBody(std::initializer_list<std::string_view> ends, size_t openOffset, std::string_view openTag)
    {
        Body body;
        while (true) {
            const Token &token = current();
            switch (token.type) {
            case TokenType::Data: {
                auto stmt = std::make_unique<Stmt>();
                stmt->kind = StmtKind::Text;
                stmt->offset = token.offset;
                stmt->text = token.text;
                body.push_back(std::move(stmt));
                advance();
                break;
            }
            case TokenType::VariableBegin: {
                auto stmt = std::make_unique<Stmt>();
                stmt->kind = StmtKind::Output;
                stmt->offset = token.offset;
                advance();
                stmt->expr = parseTuple(true);
                if (current().type != TokenType::VariableEnd)
                    fail(current(), "expected '}}', found " + describe(current()));
                advance();
                body.push_back(std::move(stmt));
                break;
            }
            case TokenType::BlockBegin: {
                const Token &name = peek();
                if (name.type == TokenType::Name &&
                    std::find(ends.begin(), ends.end(), std::string_view(name.text)) != ends.end()) {
                    advance();
                    return body;
                }
                advance();
                body.push_back(parseStatement(token.offset));
                break;
            }
            case TokenType::End:
                if (ends.size() > 0)
                    throw m_locator.error(openOffset, "'{% " + std::string(openTag) + " %}' is never closed (missing '{% " +
                                                          std::string(*(ends.end() - 1)) + " %}')");
                return body;
            default: fail(token, "unexpected " + describe(token));
            }
        }
    }

    std::unique_ptr<Stmt> parseStatement(size_t offset)
    {
        const Token &token = current();
        if (token.type != TokenType::Name)
            fail(token, "expected a statement name after '{%', found " + describe(token));
        const Nesting nesting(*this, m_blockDepth, token, "blocks");
        const std::string &tag = token.text;
        auto stmt = std::make_unique<Stmt>();
        stmt->offset = offset;
        if (tag == "if")
            parseIf(*stmt);
        else if (tag == "for")
            parseFor(*stmt);
        else if (tag == "set")
            parseSet(*stmt);
        else if (tag == "break" || tag == "continue") {
            if (m_loopDepth == 0)
                fail(token, "'{% " + tag + " %}' outside of a for loop");
            stmt->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
            advance();
            expectBlockEnd(tag);
        } else if (tag == "generation") {
            advance();
            expectBlockEnd(tag);
            stmt->kind = StmtKind::Generation;
            stmt->body = parseBody({"endgeneration"}, offset, "generation");
            advance();
            expectBlockEnd("endgeneration");
        } else if (std::find(kUnsupportedTags.begin(), kUnsupportedTags.end(), tag) != kUnsupportedTags.end()) {
            fail(token, "'{% " + tag + " %}' is not supported by this chat-template engine");
        } else if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
            fail(token, "unexpected '{% " + tag + " %}' (no open block it could close)");
        } else {
            fail(token, "unknown tag '" + tag + "'");
        }
        return stmt;
    }

    void parseIf(Stmt &stmt)
    {
        stmt.kind = StmtKind::If;
        std::string tag = "if";
        while (true) {
            advance(); // if / elif / else
            IfBranch branch;
            if (tag != "else")
                branch.condition = parseTuple(false);
            expectBlockEnd(tag);
            if (tag == "else")
                branch.body = parseBody({"endif"}, stmt.offset, "if");
            else
                branch.body = parseBody({"elif", "else", "endif"}, stmt.offset, "if");
            stmt.branches.push_back(std::move(branch));
            tag = current().text;
            if (tag == "endif") {
                advance();
                expectBlockEnd(tag);
                return;
            }
        }
    }

    void parseFor(Stmt &stmt)
    {
        stmt.kind = StmtKind::For;
        advance();
        stmt.targets = parseTargets("in");
        if (!isName(current(), "in"))
            fail(current(), "expected 'in' in '{% for %}', found " + describe(current()));
        advance();
        stmt.expr = parseTuple(false);
        if (isName(current(), "if")) {
            advance();
            stmt.filter = parseExpression();
        }
        if (isName(current(), "recursive"))
            fail(current(), "recursive for loops are not supported by this chat-template engine");
        expectBlockEnd("for");
        ++m_loopDepth;
        stmt.body = parseBody({"else", "endfor"}, stmt.offset, "for");
        --m_loopDepth;
        if (current().text == "else") {
            advance();
            expectBlockEnd("else");
            stmt.elseBody = parseBody({"endfor"}, stmt.offset, "for");
        }
        advance();
        expectBlockEnd("endfor");
    }

    /// name, or name, name, ... (unpacking); stops before `stopName` or '='.
    std::vector<std::string> parseTargets(std::string_view stopName)
    {
        std::vector<std::string> targets;
        const bool parenthesized = isOp(current(), "(");
        if (parenthesized)
            advance();
        while (true) {
            targets.push_back(expectName("a variable name"));
            if (!isOp(current(), ","))
                break;
            advance();
            if ((parenthesized && isOp(current(), ")")) || isName(current(), stopName) || isOp(current(), "="))
                break;
        }
        if (parenthesized)
            expectOp(")");
        return targets;
    }

    void parseSet(Stmt &stmt)
    {
        advance();
        if (current().type == TokenType::Name && isOp(peek(), ".")) {
            stmt.targets.push_back(advance().text);
            advance();
            stmt.attribute = expectName("an attribute name");
        } else {
            stmt.targets = parseTargets("");
        }
        if (isOp(current(), "=")) {
            advance();
            stmt.kind = StmtKind::Set;
            stmt.expr = parseTuple(true);
            expectBlockEnd("set");
            return;
        }
        if (isOp(current(), "|"))
            fail(current(), "filtered '{% set %}' blocks are not supported by this chat-template engine");
        if (!stmt.attribute.empty() || stmt.targets.size() != 1)
            fail(current(), "expected '=' in '{% set %}', found " + describe(current()));
        expectBlockEnd("set");
        stmt.kind = StmtKind::SetBlock;
        stmt.body = parseBody({"endset"}, stmt.offset, "set");
        advance();
        expectBlockEnd("endset");
    }

    /// Counts one level of parser recursion while it lives; the limit keeps `((((...` from running the
    /// stack out before any node is made (attach() bounds the finished tree's height).
    class Nesting {
    public:
        Nesting(Parser &parser, int &depth, const Token &at, const char *what) : m_depth(depth)
        {
            if (depth >= kMaxNesting)
                parser.fail(at, std::string(what) + " nest deeper than " + std::to_string(kMaxNesting) + " levels");
            ++m_depth;
        }
        ~Nesting() { --m_depth; }
        Nesting(const Nesting &) = delete;
        Nesting &operator=(const Nesting &) = delete;

    private:
        int &m_depth;
    };

    /// Makes `child` an operand of `parent` (null: an absent part). A left-leaning chain such as
    /// a+b+c+... or x|f|f|... grows the tree without recursing in the parser, so the height is
    /// checked here: the evaluator and the destructor recurse once per level of it.
    void attach(Expr &parent, ExprPtr child)
    {
        if (child)
            noteChildDepth(parent, *child);
        parent.operands.push_back(std::move(child));
    }

    void noteChildDepth(Expr &parent, const Expr &child)
    {
        if (child.depth >= kMaxNesting)
            throw m_locator.error(parent.offset, "expressions nest deeper than " + std::to_string(kMaxNesting) + " levels");
        parent.depth = std::max(parent.depth, child.depth + 1);
    }

    ExprPtr node(ExprKind kind, size_t offset)
    {
        auto expr = std::make_unique<Expr>();
        expr->kind = kind;
        expr->offset = offset;
        return expr;
    }

    /// expression, or an unparenthesized tuple `a, b`.
    ExprPtr parseTuple(bool withConditional)
    {
        const size_t offset = current().offset;
        ExprPtr first = withConditional ? parseExpression() : parseOr();
        if (!isOp(current(), ","))
            return first;
        ExprPtr tuple = node(ExprKind::Tuple, offset);
        attach(*tuple, std::move(first));
        while (isOp(current(), ",")) {
            advance();
            if (current().type == TokenType::VariableEnd || current().type == TokenType::BlockEnd || isName(current(), "if"))
                break;
            attach(*tuple, withConditional ? parseExpression() : parseOr());
        }
        return tuple;
    }

    ExprPtr parseExpression()
    {
        const Nesting nesting(*this, m_exprDepth, current(), "expressions");
        ExprPtr expr = parseOr();
        while (isName(current(), "if")) {
            const size_t offset = advance().offset;
            ExprPtr condition = parseOr();
            ExprPtr otherwise;
            if (isName(current(), "else")) {
                advance();
                otherwise = parseExpression();
            }
            ExprPtr conditional = node(ExprKind::Conditional, offset);
            attach(*conditional, std::move(expr));
            attach(*conditional, std::move(condition));
            attach(*conditional, std::move(otherwise));
            expr = std::move(conditional);
        }
        return expr;
    }

    ExprPtr binary(ExprKind kind, std::string op, size_t offset, ExprPtr left, ExprPtr right)
    {
        ExprPtr expr = node(kind, offset);
        expr->name = std::move(op);
        attach(*expr, std::move(left));
        attach(*expr, std::move(right));
        return expr;
    }

    ExprPtr parseOr()
    {
        ExprPtr left = parseAnd();
        while (isName(current(), "or")) {
            const size_t offset = advance().offset;
            left = binary(ExprKind::Or, "or", offset, std::move(left), parseAnd());
        }
        return left;
    }

    ExprPtr parseAnd()
    {
        ExprPtr left = parseNot();
        while (isName(current(), "and")) {
            const size_t offset = advance().offset;
            left = binary(ExprKind::And, "and", offset, std::move(left), parseNot());
        }
        return left;
    }

    ExprPtr parseNot()
    {
        if (isName(current(), "not")) {
            const Nesting nesting(*this, m_exprDepth, current(), "expressions");
            ExprPtr expr = node(ExprKind::Not, advance().offset);
            attach(*expr, parseNot());
            return expr;
        }
        return parseCompare();
    }

    ExprPtr parseCompare()
    {
        const size_t offset = current().offset;
        ExprPtr first = parseMath1();
        ExprPtr compare;
        while (true) {
            std::string op;
            const Token &token = current();
            if (token.type == TokenType::Operator &&
                (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == ">" ||
                 token.text == "<=" || token.text == ">=")) {
                op = token.text;
                advance();
            } else if (isName(token, "in")) {
                op = "in";
                advance();
            } else if (isName(token, "not") && isName(peek(), "in")) {
                op = "not in";
                advance();
                advance();
            } else {
                break;
            }
            if (!compare) {
                compare = node(ExprKind::Compare, offset);
                attach(*compare, std::move(first));
            }
            compare->ops.push_back(op);
            attach(*compare, parseMath1());
        }
        return compare ? std::move(compare) : std::move(first);
    }

    ExprPtr parseMath1()
    {
        ExprPtr left = parseConcat();
        while (isOp(current(), "+") || isOp(current(), "-")) {
            const Token &op = advance();
            left = binary(ExprKind::Binary, op.text, op.offset, std::move(left), parseConcat());
        }
        return left;
    }

    ExprPtr parseConcat()
    {
        ExprPtr left = parseMath2();
        while (isOp(current(), "~")) {
            const Token &op = advance();
            left = binary(ExprKind::Binary, "~", op.offset, std::move(left), parseMath2());
        }
        return left;
    }

    ExprPtr parseMath2()
    {
        ExprPtr left = parsePow();
        while (isOp(current(), "*") || isOp(current(), "/") || isOp(current(), "//") || isOp(current(), "%")) {
            const Token &op = advance();
            left = binary(ExprKind::Binary, op.text, op.offset, std::move(left), parsePow());
        }
        return left;
    }

    ExprPtr parsePow()
    {
        ExprPtr left = parseUnary(true);
        while (isOp(current(), "**")) {
            const Token &op = advance();
            left = binary(ExprKind::Binary, "**", op.offset, std::move(left), parseUnary(true));
        }
        return left;
    }

    ExprPtr parseUnary(bool withFilter)
    {
        ExprPtr expr;
        if (isOp(current(), "-") || isOp(current(), "+")) {
            const Nesting nesting(*this, m_exprDepth, current(), "expressions");
            const Token &op = advance();
            expr = node(op.text == "-" ? ExprKind::Negate : ExprKind::Plus, op.offset);
            attach(*expr, parseUnary(false));
        } else {
            expr = parsePrimary();
        }
        expr = parsePostfix(std::move(expr));
        if (withFilter)
            expr = parseFilterExpr(std::move(expr));
        return expr;
    }

    ExprPtr literal(Value value, size_t offset)
    {
        ExprPtr expr = node(ExprKind::Literal, offset);
        expr->literal = std::move(value);
        return expr;
    }

    ExprPtr parsePrimary()
    {
        const Token &token = current();
        switch (token.type) {
        case TokenType::Name: {
            advance();
            if (token.text == "true" || token.text == "True")
                return literal(Value(true), token.offset);
            if (token.text == "false" || token.text == "False")
                return literal(Value(false), token.offset);
            if (token.text == "none" || token.text == "None")
                return literal(Value(None{}), token.offset);
            ExprPtr expr = node(ExprKind::Name, token.offset);
            expr->name = token.text;
            return expr;
        }
        case TokenType::String: {
            std::string text;
            const size_t offset = token.offset;
            while (current().type == TokenType::String) // adjacent literals concatenate
                text += advance().text;
            return literal(Value(std::move(text)), offset);
        }
        case TokenType::Integer: advance(); return literal(Value(token.integer), token.offset);
        case TokenType::Float: advance(); return literal(Value(token.floating), token.offset);
        case TokenType::Operator:
            if (token.text == "(") {
                advance();
                if (isOp(current(), ")")) {
                    advance();
                    return node(ExprKind::Tuple, token.offset);
                }
                ExprPtr first = parseExpression();
                if (isOp(current(), ",")) {
                    ExprPtr tuple = node(ExprKind::Tuple, token.offset);
                    attach(*tuple, std::move(first));
                    while (isOp(current(), ",")) {
                        advance();
                        if (isOp(current(), ")"))
                            break;
                        attach(*tuple, parseExpression());
                    }
                    first = std::move(tuple);
                }
                expectOp(")");
                return first;
            }
            if (token.text == "[") {
                advance();
                ExprPtr list = node(ExprKind::List, token.offset);
                while (!isOp(current(), "]")) {
                    if (!list->operands.empty())
                        expectOp(",");
                    if (isOp(current(), "]"))
                        break;
                    attach(*list, parseExpression());
                }
                advance();
                return list;
            }
            if (token.text == "{") {
                advance();
                ExprPtr dict = node(ExprKind::Dict, token.offset);
                while (!isOp(current(), "}")) {
                    if (!dict->operands.empty())
                        expectOp(",");
                    if (isOp(current(), "}"))
                        break;
                    attach(*dict, parseExpression());
                    expectOp(":");
                    attach(*dict, parseExpression());
                }
                advance();
                return dict;
            }
            break;
        default: break;
        }
        fail(token, "expected an expression, found " + describe(token));
    }

    ExprPtr parsePostfix(ExprPtr expr)
    {
        while (true) {
            if (isOp(current(), ".") || isOp(current(), "["))
                expr = parseSubscript(std::move(expr));
            else if (isOp(current(), "("))
                expr = parseCall(std::move(expr), ExprKind::Call, "");
            else
                return expr;
        }
    }

    ExprPtr parseSubscript(ExprPtr object)
    {
        const Token &open = advance();
        if (open.text == ".") {
            const Token &name = current();
            if (name.type == TokenType::Name) {
                advance();
                ExprPtr expr = node(ExprKind::GetAttr, name.offset);
                expr->name = name.text;
                attach(*expr, std::move(object));
                return expr;
            }
            if (name.type == TokenType::Integer) {
                advance();
                ExprPtr expr = node(ExprKind::GetItem, name.offset);
                attach(*expr, std::move(object));
                attach(*expr, literal(Value(name.integer), name.offset));
                return expr;
            }
            fail(name, "expected an attribute name after '.', found " + describe(name));
        }
        // [index] or [start:stop:step]
        ExprPtr parts[3];
        int part = 0;
        bool isSlice = false;
        while (!isOp(current(), "]")) {
            if (isOp(current(), ":")) {
                if (part == 2)
                    fail(current(), "a slice takes at most start:stop:step");
                isSlice = true;
                ++part;
                advance();
                continue;
            }
            if (parts[part])
                fail(current(), "expected ']' or ':', found " + describe(current()));
            parts[part] = parseExpression();
            if (isOp(current(), ","))
                fail(current(), "tuple subscripts are not supported by this chat-template engine");
        }
        advance();
        if (!isSlice) {
            if (!parts[0])
                fail(open, "empty subscript '[]'");
            ExprPtr expr = node(ExprKind::GetItem, open.offset);
            attach(*expr, std::move(object));
            attach(*expr, std::move(parts[0]));
            return expr;
        }
        ExprPtr expr = node(ExprKind::Slice, open.offset);
        attach(*expr, std::move(object));
        for (ExprPtr &p : parts)
            attach(*expr, std::move(p));
        return expr;
    }

    /// (args, name=value, ...) into `expr`'s operands (after those it already has) and keywords.
    void parseCallArgs(Expr &expr)
    {
        expectOp("(");
        bool first = true;
        while (!isOp(current(), ")")) {
            if (!first)
                expectOp(",");
            first = false;
            if (isOp(current(), ")"))
                break;
            if (isOp(current(), "*") || isOp(current(), "**"))
                fail(current(), "*args and **kwargs are not supported by this chat-template engine");
            if (current().type == TokenType::Name && isOp(peek(), "=")) {
                std::string key = advance().text;
                advance();
                ExprPtr value = parseExpression();
                noteChildDepth(expr, *value);
                expr.keywords.emplace_back(std::move(key), std::move(value));
            } else {
                if (!expr.keywords.empty())
                    fail(current(), "a positional argument follows a keyword argument");
                attach(expr, parseExpression());
            }
        }
        advance();
    }

    ExprPtr parseCall(ExprPtr callee, ExprKind kind, std::string name)
    {
        ExprPtr expr = node(kind, current().offset);
        expr->name = std::move(name);
        attach(*expr, std::move(callee));
        parseCallArgs(*expr);
        return expr;
    }

    ExprPtr parseFilterExpr(ExprPtr expr)
    {
        while (true) {
            if (isOp(current(), "|")) {
                advance();
                const Token &name = current();
                const std::string filter = expectName("a filter name after '|'");
                if (!hasFilter(filter))
                    fail(name, isJinjaFilter(filter) ? "filter '" + filter + "' is not supported by this chat-template engine"
                                                     : "no filter named '" + filter + "'");
                ExprPtr applied = node(ExprKind::Filter, name.offset);
                applied->name = filter;
                attach(*applied, std::move(expr));
                if (isOp(current(), "("))
                    parseCallArgs(*applied);
                expr = std::move(applied);
            } else if (isName(current(), "is")) {
                advance();
                ExprPtr test = node(ExprKind::Test, current().offset);
                if (isName(current(), "not")) {
                    advance();
                    test->negated = true;
                }
                const Token &name = current();
                // `is` takes keywords as test names too: `x is none`, `x is true`.
                if (name.type != TokenType::Name)
                    fail(name, "expected a test name after 'is', found " + describe(name));
                advance();
                if (!hasTest(name.text))
                    fail(name, isJinjaTest(name.text) ? "test '" + name.text + "' is not supported by this chat-template engine"
                                                      : "no test named '" + name.text + "'");
                test->name = name.text;
                attach(*test, std::move(expr));
                const Token &next = current();
                if (isOp(next, "(")) {
                    parseCallArgs(*test);
                } else if ((next.type == TokenType::Name || next.type == TokenType::String ||
                            next.type == TokenType::Integer || next.type == TokenType::Float || isOp(next, "[") ||
                            isOp(next, "{")) &&
                           !isName(next, "else") && !isName(next, "or") && !isName(next, "and")) {
                    // Jinja's one-argument form without parentheses: `x is divisibleby 3`.
                    if (isName(next, "is"))
                        fail(next, "tests cannot be chained with 'is'");
                    attach(*test, parsePostfix(parsePrimary()));
                }
                expr = std::move(test);
            } else if (isOp(current(), "(")) {
                expr = parseCall(std::move(expr), ExprKind::Call, "");
            } else {
                return expr;
            }
        }
    }

    const std::vector<Token> &m_tokens;
    const SourceLocator &m_locator;
    size_t m_pos = 0;
    int m_loopDepth = 0;
    int m_exprDepth = 0;  ///< parser recursion inside expressions (Nesting)
    int m_blockDepth = 0; ///< statements open around the current one (Nesting)
};

} // namespace

Body parse(const std::vector<Token> &tokens, const SourceLocator &locator) { return Parser(tokens, locator).parseTemplate(); }

} // namespace engine::tokenize::jinja
