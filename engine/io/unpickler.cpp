#include "engine/io/unpickler.h"

#include "engine/core/error.h"

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

namespace engine::io {

namespace {

/// Values deeper than this are refused (state dicts nest about 4 deep); keeps destruction shallow.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxDims = 64;

enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Global, Storage, Tensor };

enum class GlobalId { OrderedDict, RebuildTensorV2, RebuildTensor, RebuildParameter, RebuildParameterWithState, StorageType };

const char *kindName(Kind kind)
{
    switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
    }
    return "?";
}

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
    explicit Value(Kind k) : kind(k) {}
    Kind kind;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0.0;
    std::string text;                                  // String, Bytes, Global ("module.name"), Storage key
    std::vector<ValuePtr> items;                       // Tuple, List
    std::vector<std::pair<ValuePtr, ValuePtr>> entries; // Dict, in insertion order
    std::unordered_map<std::string, size_t> stringKeys; // Dict: index of each str key in entries
    GlobalId global = GlobalId::OrderedDict;           // Global
    c10::ScalarType dtype = c10::ScalarType::Float;    // Global StorageType, Storage
    torch::Tensor tensor;                              // Storage (1-D, whole storage), Tensor
    int depth = 1;
    bool contained = false; // once inside another container a value is frozen: no cycles, depths stay true
};

struct AllowedGlobal {
    const char *module;
    const char *name;
    GlobalId id;
    c10::ScalarType dtype;
};

constexpr AllowedGlobal kAllowedGlobals[] = {
    {"collections", "OrderedDict", GlobalId::OrderedDict, c10::ScalarType::Float},
    {"torch._utils", "_rebuild_tensor_v2", GlobalId::RebuildTensorV2, c10::ScalarType::Float},
    {"torch._utils", "_rebuild_tensor", GlobalId::RebuildTensor, c10::ScalarType::Float},
    {"torch._utils", "_rebuild_parameter", GlobalId::RebuildParameter, c10::ScalarType::Float},
    {"torch._utils", "_rebuild_parameter_with_state", GlobalId::RebuildParameterWithState, c10::ScalarType::Float},
    {"torch", "FloatStorage", GlobalId::StorageType, c10::ScalarType::Float},
    {"torch", "HalfStorage", GlobalId::StorageType, c10::ScalarType::Half},
    {"torch", "BFloat16Storage", GlobalId::StorageType, c10::ScalarType::BFloat16},
    {"torch", "DoubleStorage", GlobalId::StorageType, c10::ScalarType::Double},
    {"torch", "LongStorage", GlobalId::StorageType, c10::ScalarType::Long},
    {"torch", "IntStorage", GlobalId::StorageType, c10::ScalarType::Int},
    {"torch", "ShortStorage", GlobalId::StorageType, c10::ScalarType::Short},
    {"torch", "CharStorage", GlobalId::StorageType, c10::ScalarType::Char},
    {"torch", "ByteStorage", GlobalId::StorageType, c10::ScalarType::Byte},
    {"torch", "BoolStorage", GlobalId::StorageType, c10::ScalarType::Bool},
};

/// Printable form of bytes from the file, for messages.
std::string printable(std::string_view text)
{
    std::string out;
    for (char c : text.substr(0, 200))
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (text.size() > 200)
        out += "...";
    return out;
}

class Unpickler {
public:
    Unpickler(const std::string &source, std::string_view bytes, const StorageReader &readStorage)
        : m_source(source), m_bytes(bytes), m_readStorage(readStorage)
    {
    }

    ValuePtr run();

private:
    [[noreturn]] void corrupt(const std::string &what) const
    {
        throw invalidInput(m_source + ": corrupt pickle (data.pkl, opcode at byte " + std::to_string(m_opcodeAt) +
                           "): " + what);
    }
    [[noreturn]] void unsupported(const std::string &what) const
    {
        throw invalidInput(m_source + ": " + what + " at byte " + std::to_string(m_opcodeAt) +
                           " of data.pkl: only state-dict contents are allowed");
    }

    const char *take(size_t n)
    {
        if (m_bytes.size() - m_at < n)
            corrupt("truncated: needs " + std::to_string(n) + " more bytes, " +
                    std::to_string(m_bytes.size() - m_at) + " left");
        const char *p = m_bytes.data() + m_at;
        m_at += n;
        return p;
    }
    uint64_t readUnsigned(size_t n)
    {
        const auto *p = reinterpret_cast<const unsigned char *>(take(n));
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i)
            v |= uint64_t(p[i]) << (8 * i);
        return v;
    }
    std::string readLine()
    {
        const size_t end = m_bytes.find('\n', m_at);
        if (end == std::string_view::npos)
            corrupt("truncated: unterminated line");
        std::string line(m_bytes.substr(m_at, end - m_at));
        m_at = end + 1;
        return line;
    }

    void push(ValuePtr value) { m_stack.push_back(std::move(value)); }
    ValuePtr pop()
    {
        if (m_stack.size() <= stackFloor())
            corrupt("stack underflow");
        ValuePtr v = std::move(m_stack.back());
        m_stack.pop_back();
        return v;
    }
    ValuePtr &top()
    {
        if (m_stack.size() <= stackFloor())
            corrupt("stack underflow");
        return m_stack.back();
    }
    size_t stackFloor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    std::vector<ValuePtr> popMark()
    {
        if (m_marks.empty())
            corrupt("no MARK on the stack");
        const size_t mark = m_marks.back();
        m_marks.pop_back();
        std::vector<ValuePtr> items(std::make_move_iterator(m_stack.begin() + ptrdiff_t(mark)),
                                    std::make_move_iterator(m_stack.end()));
        m_stack.resize(mark);
        return items;
    }

    static ValuePtr make(Kind kind) { return std::make_shared<Value>(kind); }
    ValuePtr makeInt(int64_t v)
    {
        auto value = make(Kind::Int);
        value->integer = v;
        return value;
    }
    ValuePtr makeTuple(std::vector<ValuePtr> items)
    {
        auto tuple = make(Kind::Tuple);
        for (auto &item : items)
            adopt(*tuple, item);
        tuple->items = std::move(items);
        return tuple;
    }
    /// Records that `child` now lives inside `parent`: freezes it and updates the depth.
    void adopt(Value &parent, const ValuePtr &child)
    {
        if (child.get() == &parent)
            unsupported("refuses a container inside itself");
        child->contained = true;
        parent.depth = std::max(parent.depth, child->depth + 1);
        if (parent.depth > kMaxDepth)
            unsupported("values nested deeper than " + std::to_string(kMaxDepth));
    }
    Value &mutableContainer(Kind kind, const char *opcode)
    {
        Value &target = *top();
        if (target.kind != kind)
            unsupported(std::string(opcode) + " on a " + kindName(target.kind));
        if (target.contained)
            unsupported(std::string(opcode) + " on a container that is already inside another one");
        return target;
    }
    void setItem(Value &dict, ValuePtr key, ValuePtr value)
    {
        adopt(dict, key);
        adopt(dict, value);
        if (key->kind == Kind::String) {
            const auto [it, inserted] = dict.stringKeys.emplace(key->text, dict.entries.size());
            if (!inserted) {
                dict.entries[it->second].second = std::move(value);
                return;
            }
        }
        dict.entries.emplace_back(std::move(key), std::move(value));
    }

    void memoPut(uint64_t index)
    {
        m_memo[index] = top();
    }
    ValuePtr memoGet(uint64_t index)
    {
        const auto it = m_memo.find(index);
        if (it == m_memo.end())
            corrupt("memo entry " + std::to_string(index) + " was never stored");
        return it->second;
    }

    ValuePtr resolveGlobal(const std::string &module, const std::string &name);
    ValuePtr call(const ValuePtr &callable, const ValuePtr &args);
    ValuePtr persistentLoad(const ValuePtr &pid);
    ValuePtr rebuildTensor(const std::vector<ValuePtr> &args, const char *function);
    int64_t intArg(const ValuePtr &value, const char *what, const char *function);
    std::vector<int64_t> intsArg(const ValuePtr &value, const char *what, const char *function);

    const std::string &m_source;
    std::string_view m_bytes;
    const StorageReader &m_readStorage;
    size_t m_at = 0;
    size_t m_opcodeAt = 0;
    std::vector<ValuePtr> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, ValuePtr> m_memo;
    std::map<std::string, ValuePtr> m_storages;
};

ValuePtr Unpickler::run()
{
    while (true) {
        m_opcodeAt = m_at;
        const auto opcode = static_cast<unsigned char>(*take(1));
        switch (opcode) {
        case 0x80: { // PROTO
            const unsigned protocol = static_cast<unsigned char>(*take(1));
            if (protocol > 5)
                corrupt("unknown pickle protocol " + std::to_string(protocol));
            break;
        }
        case 0x95: // FRAME (protocol 4): a length hint only
            take(8);
            break;
        case '.': { // STOP
            if (!m_marks.empty())
                corrupt("STOP inside a MARK");
            return pop();
        }
        case 'c': { // GLOBAL
            const std::string module = readLine();
            const std::string name = readLine();
            push(resolveGlobal(module, name));
            break;
        }
        case 0x93: { // STACK_GLOBAL
            const ValuePtr name = pop();
            const ValuePtr module = pop();
            if (name->kind != Kind::String || module->kind != Kind::String)
                corrupt("STACK_GLOBAL needs two strings");
            push(resolveGlobal(module->text, name->text));
            break;
        }
        case 'i': { // INST: a class and its module inline, called with the marked arguments
            const std::string module = readLine();
            const std::string name = readLine();
            resolveGlobal(module, name); // refuses any global that is not allowed, naming it
            unsupported("refuses opcode INST ('" + printable(module) + "." + printable(name) + "')");
        }
        case 'o': // OBJ
            unsupported("refuses opcode OBJ (object construction)");
        case 0x81: // NEWOBJ
        case 0x92: // NEWOBJ_EX
            unsupported("refuses opcode NEWOBJ (object construction)");
        case 'P': // PERSID (text form)
            unsupported("refuses opcode PERSID");
        case 'q': // BINPUT
            memoPut(readUnsigned(1));
            break;
        case 'r': // LONG_BINPUT
            memoPut(readUnsigned(4));
            break;
        case 0x94: // MEMOIZE
            memoPut(m_memo.size());
            break;
        case 'h': // BINGET
            push(memoGet(readUnsigned(1)));
            break;
        case 'j': // LONG_BINGET
            push(memoGet(readUnsigned(4)));
            break;
        case '(': // MARK
            m_marks.push_back(m_stack.size());
            break;
        case '0': // POP
            pop();
            break;
        case '1': // POP_MARK
            popMark();
            break;
        case '2': // DUP
            push(top());
            break;
        case '}': // EMPTY_DICT
            push(make(Kind::Dict));
            break;
        case ']': // EMPTY_LIST
            push(make(Kind::List));
            break;
        case ')': // EMPTY_TUPLE
            push(make(Kind::Tuple));
            break;
        case 't': // TUPLE
            push(makeTuple(popMark()));
            break;
        case 0x85: // TUPLE1
        case 0x86: // TUPLE2
        case 0x87: { // TUPLE3
            const size_t n = opcode - 0x84;
            std::vector<ValuePtr> items(n);
            for (size_t i = n; i-- > 0;)
                items[i] = pop();
            push(makeTuple(std::move(items)));
            break;
        }
        case 's': { // SETITEM
            ValuePtr value = pop();
            ValuePtr key = pop();
            setItem(mutableContainer(Kind::Dict, "SETITEM"), std::move(key), std::move(value));
            break;
        }
        case 'u': { // SETITEMS
            std::vector<ValuePtr> items = popMark();
            if (items.size() % 2 != 0)
                corrupt("SETITEMS with an odd number of items");
            Value &dict = mutableContainer(Kind::Dict, "SETITEMS");
            for (size_t i = 0; i < items.size(); i += 2)
                setItem(dict, std::move(items[i]), std::move(items[i + 1]));
            break;
        }
        case 'a': { // APPEND
            ValuePtr value = pop();
            Value &list = mutableContainer(Kind::List, "APPEND");
            adopt(list, value);
            list.items.push_back(std::move(value));
            break;
        }
        case 'e': { // APPENDS
            std::vector<ValuePtr> items = popMark();
            Value &list = mutableContainer(Kind::List, "APPENDS");
            for (auto &item : items) {
                adopt(list, item);
                list.items.push_back(std::move(item));
            }
            break;
        }
        case 'J': // BININT
            push(makeInt(int32_t(uint32_t(readUnsigned(4)))));
            break;
        case 'K': // BININT1
            push(makeInt(int64_t(readUnsigned(1))));
            break;
        case 'M': // BININT2
            push(makeInt(int64_t(readUnsigned(2))));
            break;
        case 0x8a: // LONG1
        case 0x8b: { // LONG4
            const uint64_t n = readUnsigned(opcode == 0x8a ? 1 : 4);
            if (n > 8)
                unsupported("an integer of " + std::to_string(n) + " bytes");
            const uint64_t raw = readUnsigned(size_t(n));
            int64_t v = int64_t(raw);
            if (n > 0 && n < 8 && (raw >> (8 * n - 1)) & 1) // sign-extend
                v = int64_t(raw | (~uint64_t(0) << (8 * n)));
            push(makeInt(v));
            break;
        }
        case 'G': { // BINFLOAT, big-endian
            const auto *p = reinterpret_cast<const unsigned char *>(take(8));
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i)
                bits = (bits << 8) | p[i];
            auto value = make(Kind::Float);
            std::memcpy(&value->real, &bits, sizeof bits);
            push(value);
            break;
        }
        case 'X': // BINUNICODE
        case 0x8c: // SHORT_BINUNICODE
        case 0x8d: // BINUNICODE8
        case 'B': // BINBYTES
        case 'C': { // SHORT_BINBYTES
            const size_t lengthBytes = (opcode == 0x8c || opcode == 'C') ? 1 : opcode == 0x8d ? 8 : 4;
            const uint64_t length = readUnsigned(lengthBytes);
            if (length > m_bytes.size() - m_at)
                corrupt("truncated: a string of " + std::to_string(length) + " bytes runs past the end");
            auto value = make((opcode == 'B' || opcode == 'C') ? Kind::Bytes : Kind::String);
            value->text.assign(take(size_t(length)), size_t(length));
            push(value);
            break;
        }
        case 0x88: // NEWTRUE
        case 0x89: { // NEWFALSE
            auto value = make(Kind::Bool);
            value->boolean = opcode == 0x88;
            push(value);
            break;
        }
        case 'N': // NONE
            push(make(Kind::None));
            break;
        case 'R': { // REDUCE
            ValuePtr args = pop();
            ValuePtr callable = pop();
            push(call(callable, args));
            break;
        }
        case 'b': { // BUILD: only the attributes of an OrderedDict (state_dict()'s `_metadata`), ignored
            ValuePtr state = pop();
            const Value &target = *top();
            if (target.kind != Kind::Dict || (state->kind != Kind::Dict && state->kind != Kind::None))
                unsupported(std::string("refuses BUILD of a ") + kindName(target.kind) + " with a " +
                            kindName(state->kind));
            break;
        }
        case 'Q': { // BINPERSID
            ValuePtr pid = pop();
            push(persistentLoad(pid));
            break;
        }
        default: {
            static const std::string known = "ILFSVTUpgdlx";
            if (opcode < 0x80 && known.find(char(opcode)) != std::string::npos)
                unsupported("refuses protocol-0/1 opcode '" + std::string(1, char(opcode)) + "'");
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", opcode);
            corrupt(std::string("unknown or unsupported opcode ") + hex);
        }
        }
    }
}

ValuePtr Unpickler::resolveGlobal(const std::string &module, const std::string &name)
{
    for (const AllowedGlobal &allowed : kAllowedGlobals) {
        if (module == allowed.module && name == allowed.name) {
            auto value = make(Kind::Global);
            value->global = allowed.id;
            value->dtype = allowed.dtype;
            value->text = module + "." + name;
            return value;
        }
    }
    throw invalidInput(m_source + ": refuses to load global '" + printable(module) + "." + printable(name) +
                       "': only state-dict contents are allowed");
}

int64_t Unpickler::intArg(const ValuePtr &value, const char *what, const char *function)
{
    if (value->kind != Kind::Int)
        unsupported(std::string(function) + ": " + what + " is a " + kindName(value->kind) + ", not an int");
    return value->integer;
}

std::vector<int64_t> Unpickler::intsArg(const ValuePtr &value, const char *what, const char *function)
{
    if (value->kind != Kind::Tuple && value->kind != Kind::List)
        unsupported(std::string(function) + ": " + what + " is a " + kindName(value->kind) + ", not a tuple");
    if (value->items.size() > kMaxDims)
        unsupported(std::string(function) + ": more than " + std::to_string(kMaxDims) + " dimensions");
    std::vector<int64_t> out;
    for (const ValuePtr &item : value->items)
        out.push_back(intArg(item, what, function));
    return out;
}

ValuePtr Unpickler::call(const ValuePtr &callable, const ValuePtr &args)
{
    if (callable->kind != Kind::Global)
        unsupported(std::string("refuses REDUCE of a ") + kindName(callable->kind));
    if (args->kind != Kind::Tuple)
        corrupt("REDUCE arguments are not a tuple");
    const std::vector<ValuePtr> &a = args->items;
    switch (callable->global) {
    case GlobalId::OrderedDict:
        if (!a.empty())
            unsupported("refuses OrderedDict(...) with arguments");
        return make(Kind::Dict);
    case GlobalId::RebuildTensorV2:
        if (a.size() != 6 && a.size() != 7)
            unsupported("_rebuild_tensor_v2 with " + std::to_string(a.size()) + " arguments");
        return rebuildTensor(a, "_rebuild_tensor_v2");
    case GlobalId::RebuildTensor:
        if (a.size() != 4)
            unsupported("_rebuild_tensor with " + std::to_string(a.size()) + " arguments");
        return rebuildTensor(a, "_rebuild_tensor");
    case GlobalId::RebuildParameter:
    case GlobalId::RebuildParameterWithState: {
        const size_t expected = callable->global == GlobalId::RebuildParameter ? 3 : 4;
        if (a.size() != expected || a[0]->kind != Kind::Tensor)
            unsupported(callable->text + " without a tensor and " + std::to_string(expected - 1) + " arguments");
        // A parameter loads as its data; requires_grad, hooks and extra state are not part of a state dict.
        auto value = make(Kind::Tensor);
        value->tensor = a[0]->tensor;
        return value;
    }
    case GlobalId::StorageType:
        break;
    }
    unsupported("refuses to call '" + callable->text + "'");
}

ValuePtr Unpickler::persistentLoad(const ValuePtr &pid)
{
    // torch.save: ('storage', torch.<Type>Storage, key, location, numel)
    const auto &p = pid->items;
    if (pid->kind != Kind::Tuple || p.size() != 5 || p[0]->kind != Kind::String || p[0]->text != "storage")
        unsupported("refuses a persistent id that is not a ('storage', type, key, location, numel) tuple");
    if (p[1]->kind != Kind::Global || p[1]->global != GlobalId::StorageType)
        unsupported("refuses a storage of type '" + (p[1]->kind == Kind::Global ? p[1]->text : kindName(p[1]->kind)) + "'");
    if (p[2]->kind != Kind::String || p[2]->text.empty())
        corrupt("storage key is not a string");
    const int64_t numel = intArg(p[4], "the storage size", "persistent id");
    if (numel < 0)
        corrupt("negative storage size");
    const std::string &key = p[2]->text;
    const c10::ScalarType dtype = p[1]->dtype;
    if (const auto it = m_storages.find(key); it != m_storages.end()) {
        if (it->second->dtype != dtype || it->second->tensor.numel() != numel)
            unsupported("storage '" + printable(key) + "' used with two types or sizes");
        return it->second;
    }
    auto storage = make(Kind::Storage);
    storage->text = key;
    storage->dtype = dtype;
    storage->tensor = m_readStorage(key, dtype, numel);
    m_storages.emplace(key, storage);
    return storage;
}

ValuePtr Unpickler::rebuildTensor(const std::vector<ValuePtr> &a, const char *function)
{
    if (a[0]->kind != Kind::Storage)
        unsupported(std::string(function) + ": first argument is a " + kindName(a[0]->kind) + ", not a storage");
    const torch::Tensor &storage = a[0]->tensor;
    const int64_t offset = intArg(a[1], "storage offset", function);
    const std::vector<int64_t> sizes = intsArg(a[2], "size", function);
    const std::vector<int64_t> strides = intsArg(a[3], "stride", function);
    const std::string where = std::string(function) + " over storage '" + printable(a[0]->text) + "'";
    if (sizes.size() != strides.size())
        corrupt(where + ": " + std::to_string(sizes.size()) + " sizes but " + std::to_string(strides.size()) + " strides");
    if (offset < 0)
        corrupt(where + ": negative storage offset");
    // The view must stay inside the storage: offset + sum((size - 1) * stride) < numel.
    constexpr int64_t limit = std::numeric_limits<int64_t>::max();
    int64_t last = offset;
    bool empty = false;
    int64_t numel = 1;
    for (size_t d = 0; d < sizes.size(); ++d) {
        if (sizes[d] < 0 || strides[d] < 0)
            corrupt(where + ": negative size or stride");
        if (sizes[d] == 0)
            empty = true;
        else if (numel > limit / sizes[d])
            corrupt(where + ": element count overflows");
        else
            numel *= sizes[d];
    }
    if (!empty) {
        for (size_t d = 0; d < sizes.size(); ++d) {
            const int64_t span = sizes[d] - 1;
            if (strides[d] != 0 && span > (limit - last) / strides[d])
                corrupt(where + ": view extent overflows");
            last += span * strides[d];
        }
    }
    const int64_t storageNumel = storage.numel();
    if ((!empty && last >= storageNumel) || offset > storageNumel)
        corrupt(where + ": view (offset " + std::to_string(offset) + ", last element " + std::to_string(last) +
                ") lies outside the storage of " + std::to_string(storageNumel) + " elements");
    auto value = make(Kind::Tensor);
    value->tensor = storage.as_strided(sizes, strides, offset);
    return value;
}

} // namespace

NamedTensors unpickleStateDict(const std::string &source, std::string_view bytes, const StorageReader &readStorage)
{
    ValuePtr root;
    try {
        root = Unpickler(source, bytes, readStorage).run();
    } catch (const c10::Error &error) {
        throw invalidInput(source + ": cannot rebuild a tensor: " + error.what_without_backtrace());
    }
    if (root->kind != Kind::Dict)
        throw invalidInput(source + ": holds a " + std::string(kindName(root->kind)) + ", not a state dict");
    NamedTensors tensors;
    tensors.reserve(root->entries.size());
    for (const auto &[key, value] : root->entries) {
        if (key->kind != Kind::String)
            throw invalidInput(source + ": state dict has a key of type " + kindName(key->kind) + ", not str");
        if (value->kind != Kind::Tensor)
            throw invalidInput(source + ": entry '" + printable(key->text) + "' is a " + kindName(value->kind) +
                               ", not a tensor (a training checkpoint rather than a state dict?)");
        tensors.emplace_back(key->text, value->tensor);
    }
    return tensors;
}

std::vector<torch::Tensor> unpickleTensorList(const std::string &source, std::string_view bytes,
                                              const StorageReader &readStorage)
{
    ValuePtr root;
    try {
        root = Unpickler(source, bytes, readStorage).run();
    } catch (const c10::Error &error) {
        throw invalidInput(source + ": cannot rebuild a tensor: " + error.what_without_backtrace());
    }
    if (root->kind != Kind::List && root->kind != Kind::Tuple)
        throw invalidInput(source + ": holds a " + std::string(kindName(root->kind)) +
                           ", not a list of tensors (save inputs with torch.save([t1, t2, ...]))");
    std::vector<torch::Tensor> tensors;
    for (size_t i = 0; i < root->items.size(); ++i) {
        const ValuePtr &item = root->items[i];
        if (item->kind != Kind::Tensor)
            throw invalidInput(source + ": item " + std::to_string(i) + " of the list is a " + kindName(item->kind) +
                               ", not a tensor");
        tensors.push_back(item->tensor);
    }
    return tensors;
}

} // namespace engine::io
