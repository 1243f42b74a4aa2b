#include "engine/tokenize/jinja/jinjabuiltins.h"

#include "engine/tokenize/jinja/jinjalimits.h"
#include "engine/tokenize/pystring.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>

namespace engine::tokenize::jinja {
namespace {

/// Binds a call's arguments to parameter names, Python style.
class Params {
public:
    Params(std::string_view function, CallArgs &args, std::initializer_list<std::string_view> names)
        : m_function(function), m_names(names), m_values(names.size(), nullptr)
    {
        if (args.positional.size() > m_names.size())
            throw RuntimeFailure(m_function + "() takes at most " + std::to_string(m_names.size()) + " argument(s) (" +
                                 std::to_string(args.positional.size()) + " given)");
        for (size_t i = 0; i < args.positional.size(); ++i)
            m_values[i] = &args.positional[i];
        for (auto &[key, value] : args.keyword) {
            const auto it = std::find(m_names.begin(), m_names.end(), key);
            if (it == m_names.end())
                throw RuntimeFailure(m_function + "() got an unexpected keyword argument '" + key + "'");
            const size_t index = static_cast<size_t>(it - m_names.begin());
            if (m_values[index])
                throw RuntimeFailure(m_function + "() got multiple values for argument '" + key + "'");
            m_values[index] = &value;
        }
    }

    /// The argument, or nullptr when not given (a None counts as given).
    const Value *get(size_t i) const { return m_values[i]; }
    bool given(size_t i) const { return m_values[i] != nullptr; }

    const Value &required(size_t i) const
    {
        if (!m_values[i])
            throw RuntimeFailure(m_function + "() missing required argument '" + std::string(m_names[i]) + "'");
        return *m_values[i];
    }

    std::optional<std::string> optionalString(size_t i) const
    {
        if (!m_values[i] || m_values[i]->isNone())
            return std::nullopt;
        return string(i);
    }

    std::string string(size_t i) const
    {
        const Value &value = required(i);
        if (!value.isString())
            throw RuntimeFailure(m_function + "() argument '" + std::string(m_names[i]) + "' must be str, not " +
                                 typeName(value));
        return value.string();
    }

    int64_t integer(size_t i, int64_t fallback) const
    {
        if (!m_values[i] || m_values[i]->isNone())
            return fallback;
        const Value &value = *m_values[i];
        if (!value.isInt() && !value.isBool())
            throw RuntimeFailure(m_function + "() argument '" + std::string(m_names[i]) + "' must be an integer, not " +
                                 typeName(value));
        return value.integer();
    }

    bool flag(size_t i, bool fallback) const { return m_values[i] ? truthy(*m_values[i]) : fallback; }

private:
    std::string m_function;
    std::vector<std::string_view> m_names;
    std::vector<const Value *> m_values;
};

Value undefinedValue(std::string hint) { return Value(Undefined{std::move(hint)}); }

/// jinja2.utils.object_type_repr: "dict object", "None", ...
std::string objectTypeRepr(const Value &value)
{
    if (value.isNone())
        return "None";
    if (value.isNamespace())
        return "jinja2.utils.Namespace object";
    return typeName(value) + " object";
}

Value missingAttribute(const Value &object, const std::string &name)
{
    return undefinedValue(pystring::repr(objectTypeRepr(object)) + " has no attribute " + pystring::repr(name));
}

Value missingElement(const Value &object, const Value &key)
{
    return undefinedValue(objectTypeRepr(object) + " has no element " + repr(key));
}

std::string text(const Value &value) { return toText(value); }

/// Jinja's title filter (not str.title): after a run of -, whitespace, (, {, [ or <, the next
/// character is upper-cased; the rest of each word is lower-cased.
std::string titleFilter(const std::string &input)
{
    std::string out;
    bool wordStart = true;
    for (const char32_t cp : pystring::decode(input)) {
        const bool separator = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || pystring::isSpace(cp);
        const std::string one = pystring::encode(std::u32string(1, cp));
        out += separator ? one : wordStart ? pystring::upper(one) : pystring::lower(one);
        wordStart = separator;
    }
    return out;
}

int64_t pyLength(const Value &value)
{
    if (value.isUndefined())
        return 0;
    if (value.isString())
        return static_cast<int64_t>(pystring::length(value.string()));
    if (value.isList())
        return static_cast<int64_t>(value.list().items.size());
    if (value.isDict())
        return static_cast<int64_t>(value.dict().items.size());
    throw RuntimeFailure("object of type '" + typeName(value) + "' has no len()");
}

bool startsOrEnds(const std::string &text, const Value &affix, bool start, std::string_view method)
{
    auto check = [&](const Value &candidate) {
        if (!candidate.isString())
            throw RuntimeFailure(std::string(method) + " first arg must be str or a tuple of str, not " + typeName(candidate));
        const std::string &a = candidate.string();
        if (a.size() > text.size())
            return false;
        return start ? text.compare(0, a.size(), a) == 0 : text.compare(text.size() - a.size(), a.size(), a) == 0;
    };
    if (affix.isList() && affix.list().tuple)
        return std::any_of(affix.list().items.begin(), affix.list().items.end(), check);
    return check(affix);
}

/// str.replace, refusing a result past kMaxTextBytes before building it ("a".replace("", x) puts x
/// between every character).
Value boundedReplace(const std::string &s, const std::string &from, const std::string &to, int64_t count)
{
    if (to.size() > from.size()) {
        size_t found = 0;
        if (from.empty())
            found = pystring::length(s) + 1;
        else
            for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + from.size()))
                ++found;
        if (count >= 0)
            found = std::min(found, static_cast<size_t>(count));
        if (s.size() + found * (to.size() - from.size()) > kMaxTextBytes)
            throw RuntimeFailure("a string grows past " + std::to_string(kMaxTextBytes >> 20) + " MiB");
    }
    chargeText(s.size());
    return Value(pystring::replace(s, from, to, count));
}

Value stringList(const std::vector<std::string> &parts)
{
    std::vector<Value> items;
    for (const std::string &part : parts)
        items.emplace_back(part);
    return makeList(std::move(items));
}

/// A method of str bound to `self`, or nullopt for names str has not (or we do not support).
std::optional<Value> stringMethod(const std::string &self, const std::string &name)
{
    using Fn = Value (*)(const std::string &, CallArgs &);
    static const std::map<std::string, Fn, std::less<>> methods = {
        {"strip", [](const std::string &s, CallArgs &a) {
             Params p("strip", a, {"chars"});
             return Value(pystring::strip(s, p.optionalString(0), true, true));
         }},
        {"lstrip", [](const std::string &s, CallArgs &a) {
             Params p("lstrip", a, {"chars"});
             return Value(pystring::strip(s, p.optionalString(0), true, false));
         }},
        {"rstrip", [](const std::string &s, CallArgs &a) {
             Params p("rstrip", a, {"chars"});
             return Value(pystring::strip(s, p.optionalString(0), false, true));
         }},
        {"startswith", [](const std::string &s, CallArgs &a) {
             Params p("startswith", a, {"prefix"});
             return Value(startsOrEnds(s, p.required(0), true, "startswith"));
         }},
        {"endswith", [](const std::string &s, CallArgs &a) {
             Params p("endswith", a, {"suffix"});
             return Value(startsOrEnds(s, p.required(0), false, "endswith"));
         }},
        {"split", [](const std::string &s, CallArgs &a) {
             Params p("split", a, {"sep", "maxsplit"});
             const auto sep = p.optionalString(0);
             if (sep && sep->empty())
                 throw RuntimeFailure("empty separator");
             return stringList(pystring::split(s, sep, p.integer(1, -1)));
         }},
        {"upper", [](const std::string &s, CallArgs &a) {
             Params p("upper", a, {});
             return Value(pystring::upper(s));
         }},
        {"lower", [](const std::string &s, CallArgs &a) {
             Params p("lower", a, {});
             return Value(pystring::lower(s));
         }},
        {"title", [](const std::string &s, CallArgs &a) {
             Params p("title", a, {});
             return Value(pystring::title(s));
         }},
        {"capitalize", [](const std::string &s, CallArgs &a) {
             Params p("capitalize", a, {});
             return Value(pystring::capitalize(s));
         }},
        {"replace", [](const std::string &s, CallArgs &a) {
             Params p("replace", a, {"old", "new", "count"});
             return boundedReplace(s, p.string(0), p.string(1), p.integer(2, -1));
         }},
        {"join", [](const std::string &s, CallArgs &a) {
             Params p("join", a, {"iterable"});
             std::string out;
             bool first = true;
             for (const Value &item : iterate(p.required(0))) {
                 if (!item.isString())
                     throw RuntimeFailure("sequence item: expected str instance, " + typeName(item) + " found");
                 appendBounded(out, first ? "" : s);
                 appendBounded(out, item.string());
                 first = false;
             }
             return Value(std::move(out));
         }},
    };
    const auto it = methods.find(name);
    if (it == methods.end())
        return std::nullopt;
    const Fn fn = it->second;
    return makeFunction("str." + name, [self, fn](CallArgs &args) { return fn(self, args); });
}

std::optional<Value> dictMethod(const Value &self, const std::string &name)
{
    if (name == "items" || name == "keys" || name == "values") {
        return makeFunction("dict." + name, [self, name](CallArgs &args) {
            Params p(name, args, {});
            std::vector<Value> out;
            for (const auto &[key, value] : self.dict().items) {
                if (name == "items")
                    out.push_back(makeList({Value(key), value}, true));
                else
                    out.push_back(name == "keys" ? Value(key) : value);
            }
            return makeList(std::move(out));
        });
    }
    if (name == "get") {
        return makeFunction("dict.get", [self](CallArgs &args) {
            Params p("get", args, {"key", "default"});
            const Value &key = p.required(0);
            const Value *found = key.isString() ? self.dict().find(key.string()) : nullptr;
            return found ? *found : (p.given(1) ? *p.get(1) : Value(None{}));
        });
    }
    return std::nullopt;
}

JsonOptions jsonOptions(CallArgs &args)
{
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
    Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions options;
    options.ensureAscii = p.flag(0, false);
    const int64_t indent = p.integer(1, -1);
    // json.dumps takes any indent; past a few columns it is a way to make gigabytes of spaces.
    if (indent > 64)
        throw RuntimeFailure("tojson() indent over 64 is not supported");
    options.indent = static_cast<int>(std::max<int64_t>(indent, -1));
    if (p.given(2) && !p.get(2)->isNone()) {
        const Value &separators = *p.get(2);
        if (!separators.isList() || separators.list().items.size() != 2 || !separators.list().items[0].isString() ||
            !separators.list().items[1].isString())
            throw RuntimeFailure("tojson() separators must be a pair of strings");
        options.customSeparators = true;
        options.itemSeparator = separators.list().items[0].string();
        options.keySeparator = separators.list().items[1].string();
    }
    options.sortKeys = p.flag(3, false);
    return options;
}

Value firstOrLast(const Value &input, bool last)
{
    const std::vector<Value> items = iterate(input);
    if (items.empty())
        return undefinedValue(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
    return last ? items.back() : items.front();
}

/// A finite double as int64, or RuntimeFailure where Python would make an integer past 64 bits
/// (casting such a double is undefined behaviour).
int64_t truncateToInt64(double value)
{
    constexpr double kLimit = 9223372036854775808.0; // 2^63, exact as a double
    if (!(value >= -kLimit && value < kLimit))
        throw RuntimeFailure("integer overflow (values beyond 64 bits are not supported)");
    return static_cast<int64_t>(value);
}

Value toInteger(const Value &input, CallArgs &args)
{
    Params p("int", args, {"default", "base"});
    const Value fallback = p.given(0) ? *p.get(0) : Value(0);
    const int base = static_cast<int>(p.integer(1, 10));
    if (input.isUndefined())
        failUndefined(input); // int(Undefined) raises in Jinja
    if (input.isBool() || input.isInt())
        return Value(input.integer());
    if (input.isFloat())
        return std::isfinite(input.number()) ? Value(truncateToInt64(input.number())) : fallback;
    if (input.isString()) {
        std::string digits = pystring::strip(input.string(), std::nullopt, true, true);
        digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
        try {
            size_t used = 0;
            const long long value = std::stoll(digits, &used, base);
            if (used == digits.size())
                return Value(static_cast<int64_t>(value));
        } catch (const std::exception &) {
        }
        double value = 0.0;
        try {
            size_t used = 0;
            value = std::stod(digits, &used);
            if (used != digits.size() || !std::isfinite(value))
                return fallback;
        } catch (const std::exception &) {
            return fallback;
        }
        return Value(truncateToInt64(value));
    }
    return fallback;
}

Value toFloat(const Value &input, CallArgs &args)
{
    Params p("float", args, {"default"});
    const Value fallback = p.given(0) ? *p.get(0) : Value(0.0);
    if (input.isUndefined())
        failUndefined(input);
    if (input.isNumber())
        return Value(input.number());
    if (input.isString()) {
        const std::string digits = pystring::strip(input.string(), std::nullopt, true, true);
        try {
            size_t used = 0;
            const double value = std::stod(digits, &used);
            if (used == digits.size())
                return Value(value);
        } catch (const std::exception &) {
        }
    }
    return fallback;
}

/// selectattr / rejectattr: keep items whose attribute passes the test (truthiness without one).
Value selectByAttribute(const Value &input, CallArgs &args, bool keep, std::string_view filter)
{
    if (args.positional.empty())
        throw RuntimeFailure(std::string(filter) + "() needs an attribute name");
    if (!args.keyword.empty())
        throw RuntimeFailure(std::string(filter) + "() takes no keyword arguments here");
    const Value attribute = args.positional[0];
    if (!attribute.isString())
        throw RuntimeFailure(std::string(filter) + "() attribute must be a string");
    std::optional<std::string> test;
    CallArgs testArgs;
    if (args.positional.size() > 1) {
        if (!args.positional[1].isString() || !hasTest(args.positional[1].string()))
            throw RuntimeFailure(std::string(filter) + "() names an unknown test " + repr(args.positional[1]));
        test = args.positional[1].string();
        testArgs.positional.assign(args.positional.begin() + 2, args.positional.end());
    }
    std::vector<Value> out;
    for (const Value &item : iterate(input)) {
        const Value value = getAttribute(item, attribute.string());
        CallArgs copy = testArgs;
        const bool passes = test ? applyTest(*test, value, copy) : truthy(value);
        if (passes == keep)
            out.push_back(item);
    }
    return makeList(std::move(out));
}

Value mapItems(const Value &input, CallArgs &args)
{
    std::vector<Value> out;
    if (args.positional.empty()) {
        Params p("map", args, {"attribute", "default"});
        if (!p.given(0) || !p.get(0)->isString())
            throw RuntimeFailure("map() needs attribute='name' or a filter name");
        for (const Value &item : iterate(input)) {
            Value value = getAttribute(item, p.get(0)->string());
            if (value.isUndefined() && p.given(1))
                value = *p.get(1);
            out.push_back(std::move(value));
        }
        return makeList(std::move(out));
    }
    const Value name = args.positional[0];
    if (!name.isString() || !hasFilter(name.string()))
        throw RuntimeFailure("map() names an unknown filter " + repr(name));
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value &item : iterate(input)) {
        CallArgs copy = rest;
        out.push_back(applyFilter(name.string(), item, copy));
    }
    return makeList(std::move(out));
}

using FilterFn = Value (*)(const Value &, CallArgs &);

const std::map<std::string, FilterFn, std::less<>> &filters()
{
    static const std::map<std::string, FilterFn, std::less<>> table = {
        {"trim", [](const Value &v, CallArgs &a) {
             Params p("trim", a, {"chars"});
             return Value(pystring::strip(text(v), p.optionalString(0), true, true));
         }},
        {"length", [](const Value &v, CallArgs &a) {
             Params p("length", a, {});
             return Value(pyLength(v));
         }},
        {"count", [](const Value &v, CallArgs &a) {
             Params p("count", a, {});
             return Value(pyLength(v));
         }},
        {"upper", [](const Value &v, CallArgs &a) {
             Params p("upper", a, {});
             return Value(pystring::upper(text(v)));
         }},
        {"lower", [](const Value &v, CallArgs &a) {
             Params p("lower", a, {});
             return Value(pystring::lower(text(v)));
         }},
        {"title", [](const Value &v, CallArgs &a) {
             Params p("title", a, {});
             return Value(titleFilter(text(v)));
         }},
        {"capitalize", [](const Value &v, CallArgs &a) {
             Params p("capitalize", a, {});
             return Value(pystring::capitalize(text(v)));
         }},
        {"tojson", [](const Value &v, CallArgs &a) { return Value(toJson(v, jsonOptions(a))); }},
        {"default", [](const Value &v, CallArgs &a) {
             Params p("default", a, {"default_value", "boolean"});
             const bool useDefault = v.isUndefined() || (p.flag(1, false) && !truthy(v));
             return useDefault ? (p.given(0) ? *p.get(0) : Value("")) : v;
         }},
        {"first", [](const Value &v, CallArgs &a) {
             Params p("first", a, {});
             return firstOrLast(v, false);
         }},
        {"last", [](const Value &v, CallArgs &a) {
             Params p("last", a, {});
             return firstOrLast(v, true);
         }},
        {"join", [](const Value &v, CallArgs &a) {
             Params p("join", a, {"d", "attribute"});
             const std::string separator = p.given(0) ? text(*p.get(0)) : std::string();
             std::string out;
             bool first = true;
             for (const Value &item : iterate(v)) {
                 const Value shown = p.given(1) && !p.get(1)->isNone() ? getItem(item, *p.get(1)) : item;
                 appendBounded(out, first ? "" : separator);
                 appendBounded(out, text(shown));
                 first = false;
             }
             return Value(std::move(out));
         }},
        {"replace", [](const Value &v, CallArgs &a) {
             Params p("replace", a, {"old", "new", "count"});
             return boundedReplace(text(v), text(p.required(0)), text(p.required(1)), p.integer(2, -1));
         }},
        {"list", [](const Value &v, CallArgs &a) {
             Params p("list", a, {});
             return makeList(iterate(v));
         }},
        {"string", [](const Value &v, CallArgs &a) {
             Params p("string", a, {});
             return Value(text(v));
         }},
        {"int", toInteger},
        {"float", toFloat},
        {"abs", [](const Value &v, CallArgs &a) {
             Params p("abs", a, {});
             if (!v.isNumber())
                 throw RuntimeFailure("bad operand type for abs(): '" + typeName(v) + "'");
             if (v.isFloat())
                 return Value(std::fabs(v.number()));
             return v.integer() < 0 ? unary(v, true) : unary(v, false);
         }},
        {"reverse", [](const Value &v, CallArgs &a) {
             Params p("reverse", a, {});
             if (v.isString()) {
                 std::u32string cps = pystring::decode(v.string());
                 std::reverse(cps.begin(), cps.end());
                 return Value(pystring::encode(cps));
             }
             std::vector<Value> items = iterate(v);
             std::reverse(items.begin(), items.end());
             return makeList(std::move(items));
         }},
        {"items", [](const Value &v, CallArgs &a) {
             Params p("items", a, {});
             if (v.isUndefined())
                 return makeList({});
             if (!v.isDict())
                 throw RuntimeFailure("items() can only be used on a dict, not " + typeName(v));
             std::vector<Value> out;
             for (const auto &[key, value] : v.dict().items)
                 out.push_back(makeList({Value(key), value}, true));
             return makeList(std::move(out));
         }},
        {"selectattr", [](const Value &v, CallArgs &a) { return selectByAttribute(v, a, true, "selectattr"); }},
        {"rejectattr", [](const Value &v, CallArgs &a) { return selectByAttribute(v, a, false, "rejectattr"); }},
        {"map", mapItems},
    };
    return table;
}

using TestFn = bool (*)(const Value &, CallArgs &);

bool noArgs(std::string_view name, CallArgs &args)
{
    Params p(name, args, {});
    return true;
}

const Value &oneArg(std::string_view name, CallArgs &args)
{
    if (args.positional.size() != 1 || !args.keyword.empty())
        throw RuntimeFailure("test '" + std::string(name) + "' takes one argument");
    return args.positional[0];
}

const std::map<std::string, TestFn, std::less<>> &tests()
{
    static const std::map<std::string, TestFn, std::less<>> table = {
        {"defined", [](const Value &v, CallArgs &a) { return noArgs("defined", a) && !v.isUndefined(); }},
        {"undefined", [](const Value &v, CallArgs &a) { return noArgs("undefined", a) && v.isUndefined(); }},
        {"none", [](const Value &v, CallArgs &a) { return noArgs("none", a) && v.isNone(); }},
        {"string", [](const Value &v, CallArgs &a) { return noArgs("string", a) && v.isString(); }},
        {"number", [](const Value &v, CallArgs &a) { return noArgs("number", a) && v.isNumber(); }},
        {"integer", [](const Value &v, CallArgs &a) { return noArgs("integer", a) && v.isInt(); }},
        {"float", [](const Value &v, CallArgs &a) { return noArgs("float", a) && v.isFloat(); }},
        {"boolean", [](const Value &v, CallArgs &a) { return noArgs("boolean", a) && v.isBool(); }},
        {"true", [](const Value &v, CallArgs &a) { return noArgs("true", a) && v.isBool() && v.integer() == 1; }},
        {"false", [](const Value &v, CallArgs &a) { return noArgs("false", a) && v.isBool() && v.integer() == 0; }},
        {"mapping", [](const Value &v, CallArgs &a) { return noArgs("mapping", a) && v.isDict(); }},
        {"sequence", [](const Value &v, CallArgs &a) {
             // Undefined has __len__ and __getitem__, so Jinja calls it a sequence.
             return noArgs("sequence", a) && (v.isUndefined() || v.isString() || v.isList() || v.isDict());
         }},
        {"iterable", [](const Value &v, CallArgs &a) {
             return noArgs("iterable", a) && (v.isUndefined() || v.isString() || v.isList() || v.isDict());
         }},
        {"callable", [](const Value &v, CallArgs &a) { return noArgs("callable", a) && v.isFunction(); }},
        {"odd", [](const Value &v, CallArgs &a) {
             noArgs("odd", a);
             return equals(arithmetic("%", v, Value(2)), Value(1));
         }},
        {"even", [](const Value &v, CallArgs &a) {
             noArgs("even", a);
             return equals(arithmetic("%", v, Value(2)), Value(0));
         }},
        {"divisibleby", [](const Value &v, CallArgs &a) {
             return equals(arithmetic("%", v, oneArg("divisibleby", a)), Value(0));
         }},
        {"eq", [](const Value &v, CallArgs &a) { return equals(v, oneArg("eq", a)); }},
        {"equalto", [](const Value &v, CallArgs &a) { return equals(v, oneArg("equalto", a)); }},
        {"==", [](const Value &v, CallArgs &a) { return equals(v, oneArg("==", a)); }},
        {"ne", [](const Value &v, CallArgs &a) { return !equals(v, oneArg("ne", a)); }},
        {"!=", [](const Value &v, CallArgs &a) { return !equals(v, oneArg("!=", a)); }},
        {"lt", [](const Value &v, CallArgs &a) { return compare(v, oneArg("lt", a), "<"); }},
        {"le", [](const Value &v, CallArgs &a) { return compare(v, oneArg("le", a), "<="); }},
        {"gt", [](const Value &v, CallArgs &a) { return compare(v, oneArg("gt", a), ">"); }},
        {"ge", [](const Value &v, CallArgs &a) { return compare(v, oneArg("ge", a), ">="); }},
        {"in", [](const Value &v, CallArgs &a) { return contains(oneArg("in", a), v); }},
    };
    return table;
}

constexpr std::array<std::string_view, 54> kJinjaFilters = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags",
    "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount",
    "wordwrap", "xmlattr"};

constexpr std::array<std::string_view, 13> kJinjaOnlyTests = {
    "escaped", "filter", "test", "sameas", "greaterthan", "lessthan", "<", ">", "<=", ">=", "lower", "upper", "in"};

int64_t rangeArg(const Value &value)
{
    if (!value.isInt() && !value.isBool())
        throw RuntimeFailure("'" + typeName(value) + "' object cannot be interpreted as an integer");
    return value.integer();
}

} // namespace

bool hasFilter(std::string_view name) { return filters().count(name) > 0 || name == "d"; }
bool hasTest(std::string_view name) { return tests().count(name) > 0; }

bool isJinjaFilter(std::string_view name)
{
    return std::find(kJinjaFilters.begin(), kJinjaFilters.end(), name) != kJinjaFilters.end();
}

bool isJinjaTest(std::string_view name)
{
    return std::find(kJinjaOnlyTests.begin(), kJinjaOnlyTests.end(), name) != kJinjaOnlyTests.end() || hasTest(name);
}

Value applyFilter(const std::string &name, const Value &input, CallArgs &args)
{
    const auto it = filters().find(name == "d" ? std::string("default") : name);
    if (it == filters().end())
        throw RuntimeFailure("no filter named '" + name + "'");
    return it->second(input, args);
}

bool applyTest(const std::string &name, const Value &input, CallArgs &args)
{
    const auto it = tests().find(name);
    if (it == tests().end())
        throw RuntimeFailure("no test named '" + name + "'");
    return it->second(input, args);
}

Value getAttribute(const Value &object, const std::string &name)
{
    if (object.isUndefined())
        failUndefined(object);
    if (object.isString()) {
        if (auto method = stringMethod(object.string(), name))
            return *method;
    } else if (object.isDict()) {
        if (auto method = dictMethod(object, name))
            return *method;
        if (const Value *found = object.dict().find(name))
            return *found;
    } else if (object.isNamespace()) {
        if (const Value *found = object.ns().attributes.find(name))
            return *found;
    }
    return missingAttribute(object, name);
}

Value getItem(const Value &object, const Value &key)
{
    if (object.isUndefined())
        failUndefined(object);
    const bool integerKey = key.isInt() || key.isBool();
    if (object.isList() && integerKey) {
        const auto &items = object.list().items;
        int64_t index = key.integer();
        if (index < 0)
            index += static_cast<int64_t>(items.size());
        if (index >= 0 && index < static_cast<int64_t>(items.size()))
            return items[static_cast<size_t>(index)];
        return missingElement(object, key);
    }
    if (object.isString() && integerKey) {
        const std::u32string cps = pystring::decode(object.string());
        int64_t index = key.integer();
        if (index < 0)
            index += static_cast<int64_t>(cps.size());
        if (index >= 0 && index < static_cast<int64_t>(cps.size()))
            return Value(pystring::encode(std::u32string(1, cps[static_cast<size_t>(index)])));
        return missingElement(object, key);
    }
    if (object.isDict() && key.isString())
        if (const Value *found = object.dict().find(key.string()))
            return *found;
    if (key.isString())
        return getAttribute(object, key.string());
    return missingElement(object, key);
}

Value slice(const Value &object, const Value &start, const Value &stop, const Value &step)
{
    if (object.isUndefined())
        failUndefined(object);
    auto bound = [](const Value &v) -> std::optional<int64_t> {
        if (v.isNone())
            return std::nullopt;
        if (!v.isInt() && !v.isBool())
            throw RuntimeFailure("slice indices must be integers or None, not " + typeName(v));
        return v.integer();
    };
    const std::optional<int64_t> stepValue = bound(step);
    const int64_t by = stepValue.value_or(1);
    if (by == 0)
        throw RuntimeFailure("slice step cannot be zero");
    std::u32string cps;
    int64_t size = 0;
    if (object.isString()) {
        cps = pystring::decode(object.string());
        size = static_cast<int64_t>(cps.size());
    } else if (object.isList()) {
        size = static_cast<int64_t>(object.list().items.size());
    } else if (object.isDict()) {
        throw RuntimeFailure("unhashable type: 'slice'"); // Jinja slices with Python's [], not its getitem
    } else {
        throw RuntimeFailure("'" + typeName(object) + "' object is not subscriptable");
    }
    // Python's PySlice_AdjustIndices.
    auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
        if (!v)
            return fallback;
        int64_t i = *v;
        if (i < 0) {
            i += size;
            if (i < 0)
                i = by < 0 ? -1 : 0;
        } else if (i >= size) {
            i = by < 0 ? size - 1 : size;
        }
        return i;
    };
    const int64_t from = adjust(bound(start), by < 0 ? size - 1 : 0);
    const int64_t to = adjust(bound(stop), by < 0 ? -1 : size);
    std::vector<size_t> indices;
    for (int64_t i = from; by > 0 ? i < to : i > to; i += by)
        indices.push_back(static_cast<size_t>(i));
    if (object.isString()) {
        std::u32string out;
        for (const size_t i : indices)
            out += cps[i];
        return Value(pystring::encode(out));
    }
    std::vector<Value> items;
    for (const size_t i : indices)
        items.push_back(object.list().items[i]);
    return makeList(std::move(items), object.list().tuple);
}

std::vector<std::pair<std::string, Value>> globalFunctions(std::vector<std::shared_ptr<NamespaceObject>> &namespaces)
{
    std::vector<std::pair<std::string, Value>> globals;
    globals.emplace_back("raise_exception", makeFunction("raise_exception", [](CallArgs &args) -> Value {
                             Params p("raise_exception", args, {"message"});
                             throw RuntimeFailure(text(p.required(0)), true);
                         }));
    globals.emplace_back("namespace", makeFunction("namespace", [&namespaces](CallArgs &args) {
                             auto ns = std::make_shared<NamespaceObject>();
                             namespaces.push_back(ns);
                             for (const Value &initial : args.positional) {
                                 if (!initial.isDict())
                                     throw RuntimeFailure("namespace() takes dicts and keyword arguments, not " +
                                                          typeName(initial));
                                 for (const auto &[key, value] : initial.dict().items)
                                     ns->attributes.set(key, value);
                             }
                             for (const auto &[key, value] : args.keyword)
                                 ns->attributes.set(key, value);
                             return Value(std::move(ns));
                         }));
    globals.emplace_back("range", makeFunction("range", [](CallArgs &args) {
                             if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3)
                                 throw RuntimeFailure("range() takes 1 to 3 positional arguments");
                             int64_t start = 0;
                             int64_t stop = 0;
                             int64_t step = 1;
                             if (args.positional.size() == 1) {
                                 stop = rangeArg(args.positional[0]);
                             } else {
                                 start = rangeArg(args.positional[0]);
                                 stop = rangeArg(args.positional[1]);
                                 if (args.positional.size() == 3)
                                     step = rangeArg(args.positional[2]);
                             }
                             if (step == 0)
                                 throw RuntimeFailure("range() arg 3 must not be zero");
                             std::vector<Value> items;
                             for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                                 if (items.size() >= 100000) // jinja2.sandbox.MAX_RANGE
                                     throw RuntimeFailure("range too big (the sandbox allows 100000 items)");
                                 items.emplace_back(i);
                             }
                             return makeList(std::move(items));
                         }));
    globals.emplace_back("strftime_now", makeFunction("strftime_now", [](CallArgs &args) {
                             Params p("strftime_now", args, {"format"});
                             const std::string format = p.string(0);
                             const std::time_t now = std::time(nullptr);
                             std::tm local{};
                             localtime_r(&now, &local);
                             std::string out(256, '\0');
                             const size_t written = std::strftime(out.data(), out.size(), format.c_str(), &local);
                             if (written == 0 && !format.empty())
                                 throw RuntimeFailure("strftime_now() format gives an empty or too long date");
                             out.resize(written);
                             return Value(std::move(out));
                         }));
    return globals;
}

} // namespace engine::tokenize::jinja
