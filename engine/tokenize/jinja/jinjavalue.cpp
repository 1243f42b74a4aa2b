#include "engine/tokenize/jinja/jinjavalue.h"

#include "engine/tokenize/jinja/jinjalimits.h"
#include "engine/tokenize/pystring.h"
#include "engine/tokenize/utf8.h"

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdio>

namespace engine::tokenize::jinja {
namespace {

[[noreturn]] void failNesting()
{
    throw RuntimeFailure("values nest deeper than " + std::to_string(kMaxValueNesting) + " levels");
}

int containerDepth(const Value &inner)
{
    const int depth = nesting(inner) + 1;
    if (depth > kMaxValueNesting)
        failNesting();
    return depth;
}

/// repr() of a namespace that holds itself would recurse forever (Python prints `...`); this
/// counts the levels repr() is inside, per thread, since a template may render on any thread.
class ReprNesting {
public:
    ReprNesting()
    {
        if (s_depth >= kMaxValueNesting)
            failNesting();
        ++s_depth;
    }
    ~ReprNesting() { --s_depth; }
    ReprNesting(const ReprNesting &) = delete;
    ReprNesting &operator=(const ReprNesting &) = delete;

private:
    static thread_local int s_depth;
};
thread_local int ReprNesting::s_depth = 0;

void appendJsonString(std::string &out, const std::string &text, bool ensureAscii)
{
    out += '"';
    for (size_t pos = 0; pos < text.size();) {
        const size_t start = pos;
        const char32_t cp = utf8::next(text, pos);
        char buffer[16];
        switch (cp) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (cp < 0x20 || (ensureAscii && cp >= 0x7F)) {
                if (cp >= 0x10000) {
                    const char32_t v = cp - 0x10000;
                    std::snprintf(buffer, sizeof buffer, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                                  static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
                } else {
                    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(cp));
                }
                out += buffer;
            } else {
                out.append(text, start, pos - start);
            }
        }
    }
    out += '"';
}

void appendJson(std::string &out, const Value &value, const JsonOptions &options, int depth)
{
    if (depth >= kMaxValueNesting)
        failNesting();
    const bool pretty = options.indent >= 0;
    const std::string itemSeparator =
        options.customSeparators ? options.itemSeparator : (pretty ? std::string(",") : std::string(", "));
    const std::string keySeparator = options.customSeparators ? options.keySeparator : std::string(": ");
    auto newline = [&](int level) {
        if (pretty) {
            out += '\n';
            appendBounded(out, std::string(static_cast<size_t>(options.indent) * static_cast<size_t>(level), ' '));
        }
    };
    if (value.isNone()) {
        out += "null";
    } else if (value.isBool()) {
        out += std::get<bool>(value.data) ? "true" : "false";
    } else if (value.isInt()) {
        out += std::to_string(value.integer());
    } else if (value.isFloat()) {
        const double d = value.number();
        out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : pystring::formatFloat(d);
    } else if (value.isString()) {
        appendJsonString(out, value.string(), options.ensureAscii);
    } else if (value.isList()) {
        const auto &items = value.list().items;
        if (items.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0)
                out += itemSeparator;
            newline(depth + 1);
            appendJson(out, items[i], options, depth + 1);
            appendBounded(out, {});
        }
        newline(depth);
        out += ']';
    } else if (value.isDict()) {
        std::vector<const std::pair<std::string, Value> *> items;
        for (const auto &item : value.dict().items)
            items.push_back(&item);
        if (items.empty()) {
            out += "{}";
            return;
        }
        if (options.sortKeys)
            std::stable_sort(items.begin(), items.end(), [](auto *a, auto *b) { return a->first < b->first; });
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0)
                out += itemSeparator;
            newline(depth + 1);
            appendJsonString(out, items[i]->first, options.ensureAscii);
            out += keySeparator;
            appendJson(out, items[i]->second, options, depth + 1);
            appendBounded(out, {});
        }
        newline(depth);
        out += '}';
    } else {
        throw RuntimeFailure("Object of type " + typeName(value) + " is not JSON serializable");
    }
}

std::string joinRepr(const std::vector<Value> &items)
{
    std::string out;
    for (size_t i = 0; i < items.size(); ++i)
        out += (i > 0 ? ", " : "") + repr(items[i]);
    return out;
}

std::string dictRepr(const DictObject &dict)
{
    std::string out = "{";
    for (size_t i = 0; i < dict.items.size(); ++i)
        out += (i > 0 ? ", " : "") + pystring::repr(dict.items[i].first) + ": " + repr(dict.items[i].second);
    return out + "}";
}

bool orderNumbers(const Value &a, const Value &b, std::string_view op)
{
    if (!a.isFloat() && !b.isFloat()) {
        const int64_t x = a.integer();
        const int64_t y = b.integer();
        return op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y;
    }
    const double x = a.number();
    const double y = b.number();
    return op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y;
}

} // namespace

const Value *DictObject::find(const std::string &key) const
{
    for (const auto &item : items)
        if (item.first == key)
            return &item.second;
    return nullptr;
}

void DictObject::set(const std::string &key, Value value)
{
    depth = std::max(depth, containerDepth(value));
    for (auto &item : items)
        if (item.first == key) {
            item.second = std::move(value);
            return;
        }
    items.emplace_back(key, std::move(value));
}

namespace {
thread_local size_t t_textWork = 0;
thread_local bool t_textWorkActive = false;

/// Bytes of the strings directly in `items` (nested lists are shared, not copied).
size_t stringBytes(const std::vector<Value> &items)
{
    size_t bytes = 0;
    for (const Value &item : items)
        if (item.isString())
            bytes += item.string().size();
    return bytes;
}
} // namespace

TextWorkScope::TextWorkScope() : m_outer(t_textWork), m_outerActive(t_textWorkActive)
{
    t_textWork = 0;
    t_textWorkActive = true;
}

TextWorkScope::~TextWorkScope()
{
    t_textWork = m_outer;
    t_textWorkActive = m_outerActive;
}

void chargeText(size_t bytes)
{
    if (!t_textWorkActive)
        return;
    t_textWork += bytes;
    if (t_textWork > kMaxTextWork)
        throw RuntimeFailure("the template builds more than " + std::to_string(kMaxTextWork >> 20) +
                             " MiB of text in one rendering");
}

void appendBounded(std::string &out, std::string_view more)
{
    chargeText(more.size());
    if (out.size() + more.size() > kMaxTextBytes)
        throw RuntimeFailure("a string grows past " + std::to_string(kMaxTextBytes >> 20) + " MiB");
    out += more;
}

int nesting(const Value &value)
{
    if (value.isList())
        return value.list().depth;
    if (value.isDict())
        return value.dict().depth;
    if (value.isNamespace())
        return value.ns().attributes.depth;
    return 0;
}

Value makeList(std::vector<Value> items, bool tuple)
{
    if (items.size() > kMaxListItems)
        throw RuntimeFailure("a list grows past " + std::to_string(kMaxListItems) + " items");
    auto list = std::make_shared<ListObject>();
    for (const Value &item : items)
        list->depth = std::max(list->depth, containerDepth(item));
    list->items = std::move(items);
    list->tuple = tuple;
    return Value(std::move(list));
}

Value makeDict(std::vector<std::pair<std::string, Value>> items)
{
    auto dict = std::make_shared<DictObject>();
    for (const auto &item : items)
        dict->depth = std::max(dict->depth, containerDepth(item.second));
    dict->items = std::move(items);
    return Value(std::move(dict));
}

Value makeFunction(std::string name, std::function<Value(CallArgs &)> call)
{
    auto function = std::make_shared<FunctionObject>();
    function->name = std::move(name);
    function->call = std::move(call);
    return Value(std::move(function));
}

std::string typeName(const Value &value)
{
    switch (value.data.index()) {
    case 0: return "Undefined";
    case 1: return "NoneType";
    case 2: return "bool";
    case 3: return "int";
    case 4: return "float";
    case 5: return "str";
    case 6: return value.list().tuple ? "tuple" : "list";
    case 7: return "dict";
    case 8: return "Namespace";
    default: return "builtin_function_or_method";
    }
}

bool truthy(const Value &value)
{
    switch (value.data.index()) {
    case 0:
    case 1: return false;
    case 2: return std::get<bool>(value.data);
    case 3: return value.integer() != 0;
    case 4: return value.number() != 0.0;
    case 5: return !value.string().empty();
    case 6: return !value.list().items.empty();
    case 7: return !value.dict().items.empty();
    default: return true;
    }
}

std::string toText(const Value &value)
{
    if (value.isUndefined())
        return "";
    if (value.isString())
        return value.string();
    return repr(value);
}

std::string repr(const Value &value)
{
    const ReprNesting nestingGuard;
    switch (value.data.index()) {
    case 0: return "Undefined";
    case 1: return "None";
    case 2: return std::get<bool>(value.data) ? "True" : "False";
    case 3: return std::to_string(value.integer());
    case 4: return pystring::formatFloat(value.number());
    case 5: return pystring::repr(value.string());
    case 6: {
        const ListObject &list = value.list();
        if (!list.tuple)
            return "[" + joinRepr(list.items) + "]";
        return "(" + joinRepr(list.items) + (list.items.size() == 1 ? ",)" : ")");
    }
    case 7: return dictRepr(value.dict());
    case 8: return "<Namespace " + dictRepr(value.ns().attributes) + ">";
    default: return "<built-in function " + value.function().name + ">";
    }
}

bool equals(const Value &a, const Value &b)
{
    if (a.isNumber() && b.isNumber()) {
        if (!a.isFloat() && !b.isFloat())
            return a.integer() == b.integer();
        return a.number() == b.number();
    }
    if (a.data.index() != b.data.index())
        return false;
    switch (a.data.index()) {
    case 0:
    case 1: return true;
    case 5: return a.string() == b.string();
    case 6: {
        const ListObject &x = a.list();
        const ListObject &y = b.list();
        if (x.tuple != y.tuple || x.items.size() != y.items.size())
            return false;
        for (size_t i = 0; i < x.items.size(); ++i)
            if (!equals(x.items[i], y.items[i]))
                return false;
        return true;
    }
    case 7: {
        const DictObject &x = a.dict();
        const DictObject &y = b.dict();
        if (x.items.size() != y.items.size())
            return false;
        for (const auto &[key, item] : x.items) {
            const Value *other = y.find(key);
            if (!other || !equals(item, *other))
                return false;
        }
        return true;
    }
    case 8: return &a.ns() == &b.ns();
    default: return &a.function() == &b.function();
    }
}

bool compare(const Value &a, const Value &b, std::string_view op)
{
    if (a.isUndefined())
        failUndefined(a);
    if (b.isUndefined())
        failUndefined(b);
    if (a.isNumber() && b.isNumber())
        return orderNumbers(a, b, op);
    if (a.isString() && b.isString()) {
        const int c = a.string().compare(b.string());
        return op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (a.isList() && b.isList() && a.list().tuple == b.list().tuple) {
        const auto &x = a.list().items;
        const auto &y = b.list().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equals(x[i], y[i]))
                return compare(x[i], y[i], op);
        return orderNumbers(Value(static_cast<int64_t>(x.size())), Value(static_cast<int64_t>(y.size())), op);
    }
    throw RuntimeFailure("'" + std::string(op) + "' not supported between instances of '" + typeName(a) + "' and '" +
                         typeName(b) + "'");
}

void failUndefined(const Value &value)
{
    const std::string &hint = value.undefined().hint;
    throw RuntimeFailure(hint.empty() ? std::string("value is undefined") : hint);
}

namespace {

[[noreturn]] void unsupportedOperands(std::string_view op, const Value &a, const Value &b)
{
    throw RuntimeFailure("unsupported operand type(s) for " + std::string(op) + ": '" + typeName(a) + "' and '" +
                         typeName(b) + "'");
}

[[noreturn]] void overflow() { throw RuntimeFailure("integer overflow (values beyond 64 bits are not supported)"); }

template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b)
{
    int64_t result = 0;
    if (op(a, b, &result))
        overflow();
    return result;
}

bool add(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
bool sub(int64_t a, int64_t b, int64_t *r) { return __builtin_sub_overflow(a, b, r); }
bool mul(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

Value repeat(const Value &sequence, int64_t times)
{
    const size_t size = sequence.isString() ? sequence.string().size() : sequence.list().items.size();
    if (sequence.isString() && times > 0 && size > 0 && static_cast<uint64_t>(times) > kMaxTextBytes / size)
        throw RuntimeFailure("a string grows past " + std::to_string(kMaxTextBytes >> 20) + " MiB");
    if (sequence.isList() && times > 0 && size > 0 && static_cast<uint64_t>(times) > kMaxListItems / size)
        throw RuntimeFailure("a list grows past " + std::to_string(kMaxListItems) + " items");
    if (times > 0)
        chargeText((sequence.isString() ? size : stringBytes(sequence.list().items)) * static_cast<size_t>(times));
    if (sequence.isString()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i)
            out += sequence.string();
        return Value(std::move(out));
    }
    std::vector<Value> items;
    for (int64_t i = 0; i < times; ++i)
        items.insert(items.end(), sequence.list().items.begin(), sequence.list().items.end());
    return makeList(std::move(items), sequence.list().tuple);
}

} // namespace

Value arithmetic(std::string_view op, const Value &a, const Value &b)
{
    if (a.isUndefined())
        failUndefined(a);
    if (b.isUndefined())
        failUndefined(b);
    const bool numbers = a.isNumber() && b.isNumber();
    const bool integers = numbers && !a.isFloat() && !b.isFloat();
    if (op == "+") {
        if (integers)
            return Value(checked(add, a.integer(), b.integer()));
        if (numbers)
            return Value(a.number() + b.number());
        if (a.isString() && b.isString()) {
            if (a.string().size() + b.string().size() > kMaxTextBytes)
                throw RuntimeFailure("a string grows past " + std::to_string(kMaxTextBytes >> 20) + " MiB");
            chargeText(a.string().size() + b.string().size());
            return Value(a.string() + b.string());
        }
        if (a.isList() && b.isList() && a.list().tuple == b.list().tuple) {
            if (a.list().items.size() + b.list().items.size() > kMaxListItems)
                throw RuntimeFailure("a list grows past " + std::to_string(kMaxListItems) + " items");
            chargeText(stringBytes(a.list().items) + stringBytes(b.list().items));
            std::vector<Value> items = a.list().items;
            items.insert(items.end(), b.list().items.begin(), b.list().items.end());
            return makeList(std::move(items), a.list().tuple);
        }
    } else if (op == "-") {
        if (integers)
            return Value(checked(sub, a.integer(), b.integer()));
        if (numbers)
            return Value(a.number() - b.number());
    } else if (op == "*") {
        if (integers)
            return Value(checked(mul, a.integer(), b.integer()));
        if (numbers)
            return Value(a.number() * b.number());
        if ((a.isString() || a.isList()) && (b.isBool() || b.isInt()))
            return repeat(a, b.integer());
        if ((b.isString() || b.isList()) && (a.isBool() || a.isInt()))
            return repeat(b, a.integer());
    } else if (op == "/") {
        if (numbers) {
            if (b.number() == 0.0)
                throw RuntimeFailure("division by zero");
            return Value(a.number() / b.number());
        }
    } else if (op == "//" || op == "%") {
        if (integers) {
            const int64_t x = a.integer();
            const int64_t y = b.integer();
            if (y == 0)
                throw RuntimeFailure("integer division or modulo by zero");
            if (x == INT64_MIN && y == -1)
                overflow();
            int64_t quotient = x / y;
            int64_t remainder = x % y;
            if (remainder != 0 && ((remainder < 0) != (y < 0))) {
                --quotient;
                remainder += y;
            }
            return Value(op == "//" ? quotient : remainder);
        }
        if (numbers) {
            const double x = a.number();
            const double y = b.number();
            if (y == 0.0)
                throw RuntimeFailure(op == "//" ? "float floor division by zero" : "float modulo");
            // CPython's float_divmod, signed zeros included.
            double mod = std::fmod(x, y);
            double div = (x - mod) / y;
            if (mod != 0.0) {
                if ((y < 0) != (mod < 0)) {
                    mod += y;
                    div -= 1.0;
                }
            } else {
                mod = std::copysign(0.0, y);
            }
            if (op == "%")
                return Value(mod);
            double floordiv = 0.0;
            if (div != 0.0) {
                floordiv = std::floor(div);
                if (div - floordiv > 0.5)
                    floordiv += 1.0;
            } else {
                floordiv = std::copysign(0.0, x / y);
            }
            return Value(floordiv);
        }
        if (op == "%" && a.isString())
            throw RuntimeFailure("printf-style string formatting ('%') is not supported by this chat-template engine");
    } else if (op == "**") {
        if (integers && b.integer() >= 0) {
            // By squaring: 1 ** 5555555550 took billions of steps one multiplication at a time. Squaring
            // only while exponent bits remain overflows only where the result would.
            int64_t result = 1;
            int64_t base = a.integer();
            for (int64_t exponent = b.integer(); exponent > 0;) {
                if (exponent & 1)
                    result = checked(mul, result, base);
                exponent >>= 1;
                if (exponent > 0)
                    base = checked(mul, base, base);
            }
            return Value(result);
        }
        if (numbers) {
            if (a.number() < 0 && std::floor(b.number()) != b.number())
                throw RuntimeFailure("a negative number to a fractional power is complex, which is not supported");
            if (a.number() == 0.0 && b.number() < 0)
                throw RuntimeFailure("0.0 cannot be raised to a negative power");
            const double result = std::pow(a.number(), b.number());
            if (std::isinf(result) && std::isfinite(a.number()) && std::isfinite(b.number()))
                throw RuntimeFailure("numerical result out of range");
            return Value(result);
        }
    }
    unsupportedOperands(op, a, b);
}

Value unary(const Value &value, bool minus)
{
    if (value.isUndefined())
        failUndefined(value);
    if (value.isFloat())
        return Value(minus ? -value.number() : value.number());
    if (value.isNumber()) {
        if (minus && value.integer() == INT64_MIN)
            overflow();
        return Value(minus ? -value.integer() : value.integer());
    }
    throw RuntimeFailure(std::string("bad operand type for unary ") + (minus ? "-" : "+") + ": '" + typeName(value) + "'");
}

bool contains(const Value &container, const Value &item)
{
    if (container.isUndefined())
        return false;
    if (container.isString()) {
        if (!item.isString())
            throw RuntimeFailure("'in <string>' requires string as left operand, not " + typeName(item));
        return container.string().find(item.string()) != std::string::npos;
    }
    if (container.isList()) {
        for (const Value &element : container.list().items)
            if (equals(element, item))
                return true;
        return false;
    }
    if (container.isDict()) {
        if ((item.isList() && !item.list().tuple) || item.isDict())
            throw RuntimeFailure("unhashable type: '" + typeName(item) + "'");
        return item.isString() && container.dict().find(item.string()) != nullptr;
    }
    throw RuntimeFailure("argument of type '" + typeName(container) + "' is not iterable");
}

std::vector<Value> iterate(const Value &value)
{
    if (value.isUndefined())
        return {};
    if (value.isList())
        return value.list().items;
    std::vector<Value> items;
    if (value.isDict()) {
        for (const auto &item : value.dict().items)
            items.emplace_back(item.first);
        return items;
    }
    if (value.isString()) {
        const std::string &text = value.string();
        for (size_t pos = 0; pos < text.size();) {
            const size_t start = pos;
            utf8::next(text, pos);
            items.emplace_back(text.substr(start, pos - start));
        }
        return items;
    }
    throw RuntimeFailure("'" + typeName(value) + "' object is not iterable");
}

std::string toJson(const Value &value, const JsonOptions &options)
{
    std::string out;
    appendJson(out, value, options, 0);
    return out;
}

} // namespace engine::tokenize::jinja
