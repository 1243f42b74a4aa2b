#pragma once
// Values of the chat-template interpreter (a Jinja2 subset): Python's types as templates see them.
// Lists, dicts and namespaces are shared by reference, as in Python. Internal to engine/tokenize.

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace engine::tokenize::jinja {

/// A failure while rendering (Python's TypeError, UndefinedError, ...); the interpreter adds where.
class RuntimeFailure : public std::runtime_error {
public:
    explicit RuntimeFailure(const std::string &message, bool raisedByTemplate = false)
        : std::runtime_error(message), m_raisedByTemplate(raisedByTemplate) {}
    /// True for raise_exception(...) in the template.
    bool raisedByTemplate() const { return m_raisedByTemplate; }

private:
    bool m_raisedByTemplate;
};

struct Value;
struct ListObject;
struct DictObject;
struct NamespaceObject;
struct FunctionObject;

/// jinja2.Undefined: renders empty, is falsy and iterates as empty; `hint` is the error raised when
/// it is used any other way ("'x' is undefined", "'dict object' has no attribute 'y'").
struct Undefined {
    std::string hint;
};
struct None {};

struct Value {
    std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<ListObject>,
                 std::shared_ptr<DictObject>, std::shared_ptr<NamespaceObject>, std::shared_ptr<FunctionObject>>
        data;

    Value() : data(Undefined{}) {}
    Value(Undefined u) : data(std::move(u)) {}
    Value(None n) : data(n) {}
    Value(bool b) : data(b) {}
    Value(int64_t i) : data(i) {}
    Value(int i) : data(static_cast<int64_t>(i)) {}
    Value(double d) : data(d) {}
    Value(std::string s) : data(std::move(s)) {}
    Value(const char *s) : data(std::string(s)) {}
    Value(std::shared_ptr<ListObject> l) : data(std::move(l)) {}
    Value(std::shared_ptr<DictObject> d) : data(std::move(d)) {}
    Value(std::shared_ptr<NamespaceObject> n) : data(std::move(n)) {}
    Value(std::shared_ptr<FunctionObject> f) : data(std::move(f)) {}

    bool isUndefined() const { return std::holds_alternative<Undefined>(data); }
    bool isNone() const { return std::holds_alternative<None>(data); }
    bool isBool() const { return std::holds_alternative<bool>(data); }
    bool isInt() const { return std::holds_alternative<int64_t>(data); }
    bool isFloat() const { return std::holds_alternative<double>(data); }
    /// int, float or bool (bool is an int in Python).
    bool isNumber() const { return isBool() || isInt() || isFloat(); }
    bool isString() const { return std::holds_alternative<std::string>(data); }
    bool isList() const { return std::holds_alternative<std::shared_ptr<ListObject>>(data); }
    bool isDict() const { return std::holds_alternative<std::shared_ptr<DictObject>>(data); }
    bool isNamespace() const { return std::holds_alternative<std::shared_ptr<NamespaceObject>>(data); }
    bool isFunction() const { return std::holds_alternative<std::shared_ptr<FunctionObject>>(data); }

    const std::string &string() const { return std::get<std::string>(data); }
    ListObject &list() const { return *std::get<std::shared_ptr<ListObject>>(data); }
    DictObject &dict() const { return *std::get<std::shared_ptr<DictObject>>(data); }
    NamespaceObject &ns() const { return *std::get<std::shared_ptr<NamespaceObject>>(data); }
    FunctionObject &function() const { return *std::get<std::shared_ptr<FunctionObject>>(data); }
    const Undefined &undefined() const { return std::get<Undefined>(data); }
    /// bool or int as int64.
    int64_t integer() const { return isBool() ? (std::get<bool>(data) ? 1 : 0) : std::get<int64_t>(data); }
    /// Any number as double.
    double number() const { return isFloat() ? std::get<double>(data) : static_cast<double>(integer()); }
};

/// A list, or a tuple (they print and compare differently).
struct ListObject {
    std::vector<Value> items;
    bool tuple = false;
    int depth = 1; ///< nesting of lists, dicts and namespaces inside, this one included (kMaxValueNesting)
};

/// A dict with string keys in insertion order (Python 3.7+ dicts keep it; tojson shows it).
struct DictObject {
    std::vector<std::pair<std::string, Value>> items;
    int depth = 1; ///< as ListObject::depth; set() keeps it, and refuses a value nested too deep

    const Value *find(const std::string &key) const;
    void set(const std::string &key, Value value);
};

/// jinja2's namespace(): a mutable attribute bag that `{% set ns.x = ... %}` may change inside loops.
struct NamespaceObject {
    DictObject attributes;
};

/// Positional and keyword arguments of a call, filter or test.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

/// A global function or a method bound to its receiver.
struct FunctionObject {
    std::string name;
    std::function<Value(CallArgs &)> call;
};

/// Containers nested in `value` (0 for a number or string, 1 for a flat list).
int nesting(const Value &value);
/// Throw RuntimeFailure naming the limit when the list would hold more than kMaxListItems or
/// nest deeper than kMaxValueNesting.
Value makeList(std::vector<Value> items, bool tuple = false);
Value makeDict(std::vector<std::pair<std::string, Value>> items = {});
Value makeFunction(std::string name, std::function<Value(CallArgs &)> call);

/// While one lives, the text this thread builds is counted against kMaxTextWork (the renderer holds
/// one per rendering; outside of one nothing is counted).
class TextWorkScope {
public:
    TextWorkScope();
    ~TextWorkScope();
    TextWorkScope(const TextWorkScope &) = delete;
    TextWorkScope &operator=(const TextWorkScope &) = delete;

private:
    size_t m_outer;
    bool m_outerActive;
};
/// Counts `bytes` of text made; RuntimeFailure naming kMaxTextWork past it.
void chargeText(size_t bytes);

/// out += more, or RuntimeFailure naming kMaxTextBytes when the string would grow past it.
void appendBounded(std::string &out, std::string_view more);

/// Python's type name: "str", "int", "list", "NoneType", ...
std::string typeName(const Value &value);
/// Python truthiness; Undefined is false.
bool truthy(const Value &value);
/// str(value) as Jinja prints it; Undefined prints as "".
std::string toText(const Value &value);
/// repr(value).
std::string repr(const Value &value);
/// ==, with Python's rules (1 == 1.0 == True; a list never equals a tuple; Undefined == Undefined).
bool equals(const Value &a, const Value &b);
/// a `op` b for op "<", "<=", ">" or ">=" on numbers, strings and sequences; RuntimeFailure otherwise.
bool compare(const Value &a, const Value &b, std::string_view op);
/// Python's binary operators: + - * / // % ** on numbers, + and * on strings and lists.
Value arithmetic(std::string_view op, const Value &a, const Value &b);
/// Unary - (minus) or + on a number.
Value unary(const Value &value, bool minus);
/// `item in container` for strings (substring), lists, tuples and dicts (keys); Undefined holds nothing.
bool contains(const Value &container, const Value &item);
/// What a for loop visits: list items, dict keys, string characters; Undefined is empty.
std::vector<Value> iterate(const Value &value);
/// Throws the Undefined's hint as a RuntimeFailure.
[[noreturn]] void failUndefined(const Value &value);

/// json.dumps(value, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter
/// calls it; indent < 0 means None.
struct JsonOptions {
    bool ensureAscii = false;
    int indent = -1;
    std::string itemSeparator;  ///< empty: ", " without indent, "," with
    std::string keySeparator;   ///< empty: ": "
    bool customSeparators = false;
    bool sortKeys = false;
};
std::string toJson(const Value &value, const JsonOptions &options);

} // namespace engine::tokenize::jinja
