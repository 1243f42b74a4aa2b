#include "support/safetensorsheaders.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

namespace testing_support {
namespace {

uint64_t elementBits(const std::string &dtype)
{
    static const std::map<std::string, uint64_t> bits = {
        {"BOOL", 8}, {"U8", 8},   {"I8", 8},   {"I16", 16}, {"U16", 16}, {"F16", 16},    {"BF16", 16},
        {"I32", 32}, {"U32", 32}, {"F32", 32}, {"F64", 64}, {"I64", 64}, {"U64", 64}, {"F8_E4M3", 8}, {"F8_E5M2", 8}};
    const auto it = bits.find(dtype);
    if (it == bits.end())
        throw std::invalid_argument("writeSafetensorsHeaders: unknown dtype " + dtype);
    return it->second;
}

uint64_t byteSize(const HeaderTensor &t)
{
    uint64_t n = 1;
    for (const int64_t d : t.shape)
        n *= static_cast<uint64_t>(d);
    return n * elementBits(t.dtype) / 8;
}

} // namespace

void writeSafetensorsHeaders(const std::filesystem::path &path, const std::vector<HeaderTensor> &tensors)
{
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    uint64_t offset = 0;
    for (const HeaderTensor &t : tensors) {
        const uint64_t end = offset + byteSize(t);
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
        offset = end;
    }
    std::string text = header.dump();
    while (text.size() % 8)
        text += ' ';
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        const uint64_t size = text.size(); // little-endian on every machine tunebench targets
        out.write(reinterpret_cast<const char *>(&size), 8);
        out << text;
    }
    std::filesystem::resize_file(path, 8 + text.size() + offset); // the buffer: a hole, read as zeros
}

void writeShardedHeaders(const std::filesystem::path &folder, const std::vector<HeaderTensor> &tensors, int shards)
{
    nlohmann::ordered_json weightMap = nlohmann::ordered_json::object();
    uint64_t total = 0;
    const size_t per = (tensors.size() + static_cast<size_t>(shards) - 1) / static_cast<size_t>(shards);
    for (int s = 0; s < shards; ++s) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, shards);
        std::vector<HeaderTensor> part;
        for (size_t i = s * per; i < std::min(tensors.size(), (s + 1) * per); ++i) {
            part.push_back(tensors[i]);
            weightMap[tensors[i].name] = name;
            total += byteSize(tensors[i]);
        }
        writeSafetensorsHeaders(folder / name, part);
    }
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}};
    std::ofstream(folder / "model.safetensors.index.json") << index.dump(2);
}

std::string safetensorsDtypeName(const std::string &torchName)
{
    static const std::map<std::string, std::string> names = {
        {"float16", "F16"}, {"bfloat16", "BF16"}, {"float32", "F32"}, {"float64", "F64"}, {"bool", "BOOL"},
        {"int8", "I8"},     {"uint8", "U8"},      {"int32", "I32"},   {"int64", "I64"}};
    return names.at(torchName);
}

} // namespace testing_support
