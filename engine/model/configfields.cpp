#include "engine/model/configfields.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/jsonnesting.h"

#include <cmath>

namespace engine::model::configfields {

using nlohmann::json;

std::string describe(const json &value)
{
    std::string text = value.dump();
    if (text.size() > 40)
        text = text.substr(0, 37) + "...";
    return text + " (" + value.type_name() + ")";
}

Error fieldError(const std::string &source, const std::string &field, const std::string &what)
{
    return invalidInput(source + ": field '" + field + "' " + what);
}

// Reads an integer field; `nullAllowed` lets `null` leave the default in place.
void readInt(const json &object, const char *key, int64_t &out, const std::string &source, bool nullAllowed)
{
    const auto it = object.find(key);
    if (it == object.end() || (nullAllowed && it->is_null()))
        return;
    if (it->is_number_integer()) {
        out = it->get<int64_t>();
        return;
    }
    if (it->is_number_float()) {
        const double value = it->get<double>();
        if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e15) {
            out = static_cast<int64_t>(value);
            return;
        }
    }
    throw fieldError(source, key, "must be an integer, got " + describe(*it));
}

void readDouble(const json &object, const char *key, double &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (!it->is_number())
        throw fieldError(source, key, "must be a number, got " + describe(*it));
    out = it->get<double>();
}

void readBool(const json &object, const char *key, bool &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (!it->is_boolean())
        throw fieldError(source, key, "must be true or false, got " + describe(*it));
    out = it->get<bool>();
}

void readString(const json &object, const char *key, std::string &out, const std::string &source)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if (!it->is_string())
        throw fieldError(source, key, "must be a string, got " + describe(*it));
    out = it->get<std::string>();
}

void checkRange(const std::string &source, const std::string &field, int64_t value, int64_t low, int64_t high)
{
    if (value < low || value > high) {
        throw fieldError(source, field,
                         "is " + std::to_string(value) + ", must be between " + std::to_string(low) + " and "
                             + std::to_string(high));
    }
}

json readConfigFile(const std::filesystem::path &path, std::string &source)
{
    std::filesystem::path file = path;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        file = path / "config.json";
    source = file.string();
    const std::string text = readFile(file);
    checkJsonNesting(text, source);
    try {
        return json::parse(text);
    } catch (const json::exception &e) { // parse_error, and out_of_range for a number like 1e400
        throw invalidInput(source + ": invalid JSON: " + e.what());
    }
}

std::string stringOrEmpty(const json &object, const char *key)
{
    if (!object.is_object())
        return {};
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace engine::model::configfields
