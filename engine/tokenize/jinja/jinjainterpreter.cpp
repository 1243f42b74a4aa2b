#include "engine/tokenize/jinja/jinjainterpreter.h"

#include "engine/tokenize/jinja/jinjabuiltins.h"
#include "engine/tokenize/jinja/jinjalimits.h"

#include <unordered_map>

namespace engine::tokenize::jinja {
namespace {

enum class Flow { Normal, Break, Continue };

class Interpreter {
public:
    explicit Interpreter(const SourceLocator &locator) : m_locator(locator) {}
    ~Interpreter()
    {
        // A namespace may hold itself, directly or through lists and bound methods; emptying each
        // breaks every such cycle (only namespaces are mutable, so every cycle passes through one).
        for (const auto &ns : m_namespaces)
            ns->attributes.items.clear();
    }
    Interpreter(const Interpreter &) = delete;
    Interpreter &operator=(const Interpreter &) = delete;

    std::string run(const Body &body, const std::vector<std::pair<std::string, Value>> &variables)
    {
        m_scopes.emplace_back();
        for (auto &[name, value] : globalFunctions(m_namespaces))
            m_scopes.back()[name] = std::move(value);
        m_scopes.emplace_back();
        for (const auto &[name, value] : variables)
            m_scopes.back()[name] = value;
        m_scopes.emplace_back(); // the template's own `set`s
        std::string out;
        const TextWorkScope textWork;
        try {
            execBody(body, out);
        } catch (const RuntimeFailure &failure) {
            // Every evaluation step reports at its own line through located(); this is the net for
            // one that does not, so that no failure leaves the renderer as anything but engine::Error.
            throw invalidInput(std::string("chat template: ") + failure.what());
        }
        return out;
    }

private:
    using Scope = std::unordered_map<std::string, Value>;

    /// Runs `f`, turning a RuntimeFailure into Error(InvalidInput) at `offset`.
    template <typename F>
    auto located(size_t offset, F f) -> decltype(f())
    {
        try {
            return f();
        } catch (const RuntimeFailure &failure) {
            if (failure.raisedByTemplate())
                throw invalidInput("chat template raised an error (line " + m_locator.describe(offset) +
                                   "): " + failure.what());
            throw m_locator.error(offset, failure.what());
        }
    }

    Value lookup(const std::string &name) const
    {
        for (auto it = m_scopes.rbegin(); it != m_scopes.rend(); ++it) {
            const auto found = it->find(name);
            if (found != it->end())
                return found->second;
        }
        return Value(Undefined{repr(Value(name)) + " is undefined"});
    }

    void assign(const std::vector<std::string> &targets, const Value &value)
    {
        if (targets.size() == 1) {
            m_scopes.back()[targets[0]] = value;
            return;
        }
        const std::vector<Value> items = iterate(value);
        if (items.size() < targets.size())
            throw RuntimeFailure("not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                                 std::to_string(items.size()) + ")");
        if (items.size() > targets.size())
            throw RuntimeFailure("too many values to unpack (expected " + std::to_string(targets.size()) + ")");
        for (size_t i = 0; i < targets.size(); ++i)
            m_scopes.back()[targets[i]] = items[i];
    }

    Flow execBody(const Body &body, std::string &out)
    {
        for (const auto &stmt : body) {
            const Flow flow = exec(*stmt, out);
            if (flow != Flow::Normal)
                return flow;
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt &stmt, std::string &out)
    {
        switch (stmt.kind) {
        case StmtKind::Text: append(out, stmt.text, stmt.offset); return Flow::Normal;
        case StmtKind::Output: {
            const Value value = eval(*stmt.expr);
            append(out, located(stmt.offset, [&] { return toText(value); }), stmt.offset);
            return Flow::Normal;
        }
        case StmtKind::If:
            for (const IfBranch &branch : stmt.branches)
                if (!branch.condition || truthy(eval(*branch.condition)))
                    return execBody(branch.body, out);
            return Flow::Normal;
        case StmtKind::For: return execFor(stmt, out);
        case StmtKind::Set: {
            const Value value = eval(*stmt.expr);
            located(stmt.offset, [&] {
                if (stmt.attribute.empty()) {
                    assign(stmt.targets, value);
                    return 0;
                }
                const Value ns = lookup(stmt.targets[0]);
                if (!ns.isNamespace())
                    throw RuntimeFailure("cannot assign attribute on non-namespace object '" + stmt.targets[0] + "'");
                ns.ns().attributes.set(stmt.attribute, value);
                return 0;
            });
            return Flow::Normal;
        }
        case StmtKind::SetBlock: {
            std::string captured;
            execBody(stmt.body, captured);
            m_scopes.back()[stmt.targets[0]] = Value(std::move(captured));
            return Flow::Normal;
        }
        case StmtKind::Break: return Flow::Break;
        case StmtKind::Continue: return Flow::Continue;
        case StmtKind::Generation: return execBody(stmt.body, out);
        }
        return Flow::Normal;
    }

    /// Adds rendered text, refusing output past kMaxTextBytes (a loop that doubles a string, or
    /// prints a long one a million times, would otherwise take all memory).
    void append(std::string &out, const std::string &text, size_t offset)
    {
        if (out.size() + text.size() > kMaxTextBytes)
            throw m_locator.error(offset, "the rendered text grows past " + std::to_string(kMaxTextBytes >> 20) + " MiB");
        located(offset, [&] {
            chargeText(text.size());
            return 0;
        });
        out += text;
    }

    static Value concatenate(const Value &left, const Value &right)
    {
        std::string text = toText(left);
        const std::string rightText = toText(right);
        appendBounded(text, rightText);
        return Value(std::move(text));
    }

    /// Counts one for-loop iteration (or one `if` filter test) against kMaxLoopIterations.
    void countIteration(size_t offset)
    {
        if (++m_iterations > kMaxLoopIterations)
            throw m_locator.error(offset, "for loops run more than " + std::to_string(kMaxLoopIterations) +
                                              " iterations in one rendering");
    }

    Flow execFor(const Stmt &stmt, std::string &out)
    {
        const Value iterable = eval(*stmt.expr);
        std::vector<Value> items = located(stmt.expr->offset, [&] { return iterate(iterable); });
        if (stmt.filter) {
            std::vector<Value> kept;
            for (const Value &item : items) {
                countIteration(stmt.offset);
                m_scopes.emplace_back();
                located(stmt.offset, [&] {
                    assign(stmt.targets, item);
                    return 0;
                });
                const bool keep = truthy(eval(*stmt.filter));
                m_scopes.pop_back();
                if (keep)
                    kept.push_back(item);
            }
            items = std::move(kept);
        }
        if (items.empty())
            return execBody(stmt.elseBody, out);
        const auto length = static_cast<int64_t>(items.size());
        for (int64_t i = 0; i < length; ++i) {
            countIteration(stmt.offset);
            m_scopes.emplace_back();
            const auto index = static_cast<size_t>(i);
            located(stmt.offset, [&] {
                assign(stmt.targets, items[index]);
                return 0;
            });
            m_scopes.back()["loop"] = loopObject(items, i);
            const Flow flow = execBody(stmt.body, out);
            m_scopes.pop_back();
            if (flow == Flow::Break)
                break;
        }
        return Flow::Normal;
    }

    static Value loopObject(const std::vector<Value> &items, int64_t i)
    {
        const auto length = static_cast<int64_t>(items.size());
        Value loop = makeDict({
            {"index", Value(i + 1)},
            {"index0", Value(i)},
            {"revindex", Value(length - i)},
            {"revindex0", Value(length - i - 1)},
            {"first", Value(i == 0)},
            {"last", Value(i == length - 1)},
            {"length", Value(length)},
            {"depth", Value(1)},
            {"depth0", Value(0)},
            {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value(Undefined{"there is no previous item"})},
            {"nextitem", i + 1 < length ? items[static_cast<size_t>(i + 1)] : Value(Undefined{"there is no next item"})},
        });
        loop.dict().set("cycle", makeFunction("loop.cycle", [i](CallArgs &args) {
                            if (args.positional.empty() || !args.keyword.empty())
                                throw RuntimeFailure("loop.cycle() needs at least one positional argument");
                            return args.positional[static_cast<size_t>(i) % args.positional.size()];
                        }));
        return loop;
    }

    CallArgs evalArgs(const Expr &expr)
    {
        CallArgs args;
        for (size_t i = 1; i < expr.operands.size(); ++i)
            args.positional.push_back(eval(*expr.operands[i]));
        for (const auto &[key, value] : expr.keywords)
            args.keyword.emplace_back(key, eval(*value));
        return args;
    }

    Value eval(const Expr &expr)
    {
        switch (expr.kind) {
        case ExprKind::Literal: return expr.literal;
        case ExprKind::Name: return lookup(expr.name);
        case ExprKind::GetAttr: {
            const Value object = eval(*expr.operands[0]);
            return located(expr.offset, [&] { return getAttribute(object, expr.name); });
        }
        case ExprKind::GetItem: {
            const Value object = eval(*expr.operands[0]);
            const Value key = eval(*expr.operands[1]);
            return located(expr.offset, [&] { return getItem(object, key); });
        }
        case ExprKind::Slice: {
            const Value object = eval(*expr.operands[0]);
            Value parts[3];
            for (int i = 0; i < 3; ++i)
                parts[i] = expr.operands[static_cast<size_t>(i) + 1] ? eval(*expr.operands[static_cast<size_t>(i) + 1])
                                                                     : Value(None{});
            return located(expr.offset, [&] { return slice(object, parts[0], parts[1], parts[2]); });
        }
        case ExprKind::Call: {
            const Value callee = eval(*expr.operands[0]);
            CallArgs args = evalArgs(expr);
            return located(expr.offset, [&] {
                if (callee.isUndefined())
                    failUndefined(callee);
                if (!callee.isFunction())
                    throw RuntimeFailure("'" + typeName(callee) + "' object is not callable");
                return callee.function().call(args);
            });
        }
        case ExprKind::Filter: {
            const Value input = eval(*expr.operands[0]);
            CallArgs args = evalArgs(expr);
            return located(expr.offset, [&] { return applyFilter(expr.name, input, args); });
        }
        case ExprKind::Test: {
            const Value input = eval(*expr.operands[0]);
            CallArgs args = evalArgs(expr);
            return located(expr.offset, [&] { return Value(applyTest(expr.name, input, args) != expr.negated); });
        }
        case ExprKind::Not: return Value(!truthy(eval(*expr.operands[0])));
        case ExprKind::Negate:
        case ExprKind::Plus: {
            const Value operand = eval(*expr.operands[0]);
            return located(expr.offset, [&] { return unary(operand, expr.kind == ExprKind::Negate); });
        }
        case ExprKind::Binary: {
            const Value left = eval(*expr.operands[0]);
            const Value right = eval(*expr.operands[1]);
            if (expr.name == "~")
                return located(expr.offset, [&] { return concatenate(left, right); });
            return located(expr.offset, [&] { return arithmetic(expr.name, left, right); });
        }
        case ExprKind::Compare: return evalCompare(expr);
        case ExprKind::And: {
            Value left = eval(*expr.operands[0]);
            return truthy(left) ? eval(*expr.operands[1]) : left;
        }
        case ExprKind::Or: {
            Value left = eval(*expr.operands[0]);
            return truthy(left) ? left : eval(*expr.operands[1]);
        }
        case ExprKind::Conditional:
            if (truthy(eval(*expr.operands[1])))
                return eval(*expr.operands[0]);
            return expr.operands[2] ? eval(*expr.operands[2]) : Value(Undefined{"the condition was false and there is no else"});
        case ExprKind::List:
        case ExprKind::Tuple: {
            std::vector<Value> items;
            for (const ExprPtr &item : expr.operands)
                items.push_back(eval(*item));
            return located(expr.offset, [&] { return makeList(std::move(items), expr.kind == ExprKind::Tuple); });
        }
        case ExprKind::Dict: {
            Value dict = makeDict();
            for (size_t i = 0; i + 1 < expr.operands.size(); i += 2) {
                const Value key = eval(*expr.operands[i]);
                if (!key.isString())
                    throw m_locator.error(expr.operands[i]->offset, "dict keys must be strings here, not " + typeName(key));
                Value item = eval(*expr.operands[i + 1]);
                located(expr.offset, [&] {
                    dict.dict().set(key.string(), std::move(item));
                    return 0;
                });
            }
            return dict;
        }
        }
        return Value();
    }

    Value evalCompare(const Expr &expr)
    {
        Value left = eval(*expr.operands[0]);
        for (size_t i = 0; i < expr.ops.size(); ++i) {
            Value right = eval(*expr.operands[i + 1]);
            const std::string &op = expr.ops[i];
            const bool holds = located(expr.operands[i + 1]->offset, [&] {
                if (op == "==")
                    return equals(left, right);
                if (op == "!=")
                    return !equals(left, right);
                if (op == "in")
                    return contains(right, left);
                if (op == "not in")
                    return !contains(right, left);
                return compare(left, right, op);
            });
            if (!holds)
                return Value(false);
            left = std::move(right);
        }
        return Value(true);
    }

    const SourceLocator &m_locator;
    std::vector<Scope> m_scopes;
    int64_t m_iterations = 0; ///< for-loop iterations so far in this rendering
    std::vector<std::shared_ptr<NamespaceObject>> m_namespaces; ///< made by namespace(), emptied at the end
};

} // namespace

std::string render(const Body &body, const std::vector<std::pair<std::string, Value>> &variables,
                   const SourceLocator &locator)
{
    return Interpreter(locator).run(body, variables);
}

} // namespace engine::tokenize::jinja
