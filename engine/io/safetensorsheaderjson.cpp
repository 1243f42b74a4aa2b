// parseSafetensorsHeader: the JSON part of the header, then the layout rules.

#include "engine/io/safetensorsheader.h"

#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"
#include "engine/io/safetensorslayout.h"

#include <nlohmann/json.hpp>

#include <set>

namespace engine::io {
namespace {

using nlohmann::json;

/// Parses JSON, remembering the first key that repeats within one object (nlohmann keeps the
/// last value silently; safetensors names must be unique).
json parseRejectingDuplicates(std::string_view text, const std::string &fileLabel)
{
    checkJsonNesting(text, fileLabel);
    std::vector<std::set<std::string>> keysPerObject;
    std::string duplicate;
    const json::parser_callback_t callback = [&](int, json::parse_event_t event, json &parsed) {
        if (event == json::parse_event_t::object_start) {
            keysPerObject.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
            if (!keysPerObject.empty())
                keysPerObject.pop_back();
        } else if (event == json::parse_event_t::key && !keysPerObject.empty() && duplicate.empty()) {
            const std::string &key = parsed.get_ref<const std::string &>();
            if (!keysPerObject.back().insert(key).second)
                duplicate = key;
        }
        return true;
    };
    json root;
    try {
        root = json::parse(text.begin(), text.end(), callback);
    } catch (const json::exception &error) {
        throw invalidInput(fileLabel + ": header is not valid JSON (" + error.what() + ")");
    }
    if (!duplicate.empty())
        throw invalidInput(fileLabel + ": header has the key '" + duplicate + "' twice (names must be unique)");
    if (!root.is_object())
        throw invalidInput(fileLabel + ": header is not a JSON object (it is a JSON " + std::string(root.type_name()) + ")");
    return root;
}

std::map<std::string, std::string> parseMetadata(const json &value, const std::string &fileLabel)
{
    std::map<std::string, std::string> metadata;
    if (value.is_null())
        return metadata;
    if (!value.is_object())
        throw invalidInput(fileLabel + ": __metadata__ is not an object of strings");
    for (const auto &[key, item] : value.items()) {
        if (!item.is_string())
            throw invalidInput(fileLabel + ": __metadata__ value of '" + key + "' is a " + item.type_name()
                               + ", not a string (__metadata__ maps strings to strings)");
        metadata.emplace(key, item.get<std::string>());
    }
    return metadata;
}

std::uint64_t unsignedInteger(const json &value, const std::string &what, const std::string &fileLabel)
{
    if (!value.is_number_unsigned())
        throw invalidInput(fileLabel + ": " + what + " is " + value.dump()
                           + ", not a non-negative integer below 2^64");
    return value.get<std::uint64_t>();
}

TensorInfo parseTensor(const std::string &name, const json &entry, const std::string &fileLabel)
{
    const std::string where = "tensor '" + name + "'";
    if (!entry.is_object())
        throw invalidInput(fileLabel + ": " + where + " is a JSON " + entry.type_name()
                           + ", not an object with dtype, shape and data_offsets");
    const auto field = [&](const char *key) -> const json & {
        const auto it = entry.find(key);
        if (it == entry.end())
            throw invalidInput(fileLabel + ": " + where + " has no \"" + key + "\"");
        return *it;
    };
    TensorInfo info;
    info.name = name;

    const json &dtype = field("dtype");
    if (!dtype.is_string())
        throw invalidInput(fileLabel + ": " + where + " has dtype " + dtype.dump() + ", not a string");
    const std::optional<DType> parsed = parseDType(dtype.get<std::string>());
    if (!parsed)
        throw invalidInput(fileLabel + ": " + where + " has unknown dtype " + dtype.dump());
    info.dtype = *parsed;

    const json &shape = field("shape");
    if (!shape.is_array())
        throw invalidInput(fileLabel + ": " + where + " has shape " + shape.dump() + ", not an array");
    for (const json &dim : shape)
        info.shape.push_back(unsignedInteger(dim, where + " shape dimension", fileLabel));

    const json &offsets = field("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
        throw invalidInput(fileLabel + ": " + where + " has data_offsets " + offsets.dump()
                           + ", not an array [begin, end]");
    info.begin = unsignedInteger(offsets[0], where + " data_offsets begin", fileLabel);
    info.end = unsignedInteger(offsets[1], where + " data_offsets end", fileLabel);
    return info;
}

} // namespace

SafetensorsHeader parseSafetensorsHeader(std::string_view text, std::uint64_t fileSize, const std::string &fileLabel)
{
    const json root = parseRejectingDuplicates(text, fileLabel);
    SafetensorsHeader header;
    header.headerSize = text.size();
    header.dataOffset = 8 + header.headerSize;
    header.fileSize = fileSize;
    if (fileSize < header.dataOffset)
        throw invalidInput(fileLabel + ": header of " + std::to_string(text.size()) + " bytes does not fit in a file of "
                           + std::to_string(fileSize) + " bytes");
    header.tensors.reserve(root.size());
    for (const auto &[key, value] : root.items()) {
        if (key == "__metadata__")
            header.metadata = parseMetadata(value, fileLabel);
        else
            header.tensors.push_back(parseTensor(key, value, fileLabel));
    }
    validateSafetensorsLayout(header, fileLabel);
    return header;
}

} // namespace engine::io
