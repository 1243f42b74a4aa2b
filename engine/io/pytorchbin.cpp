#include "engine/io/pytorchbin.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/io/pytorchbinarchive.h"
#include "engine/io/shardindex.h"

#include <algorithm>
#include <limits>
#include <set>

namespace engine::io {

namespace {

void swapBytes(void *data, int64_t count, size_t elementSize)
{
    auto *p = static_cast<unsigned char *>(data);
    for (int64_t i = 0; i < count; ++i, p += elementSize)
        std::reverse(p, p + elementSize);
}

bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

namespace {

/// Opens a torch.save zip and runs `unpickle(source, pickle, readStorage)` on its data.pkl.
template <typename Unpickle>
auto loadTorchSaveFile(const std::filesystem::path &file, Unpickle unpickle)
{
    PytorchBinArchive archive(file);
    const std::string source = file.string();
    const std::string &prefix = archive.prefix();

    bool bigEndian = false;
    if (archive.hasEntry(prefix + "byteorder")) {
        const std::string order = archive.readEntry(prefix + "byteorder", 64);
        if (order == "big")
            bigEndian = true;
        else if (order != "little")
            throw invalidInput(source + ": unknown byte order '" + order.substr(0, 16) + "' in the archive");
    }

    const std::string pickle = archive.readEntry(prefix + "data.pkl", uint64_t(1) << 30);
    const StorageReader readStorage = [&](const std::string &key, c10::ScalarType dtype, int64_t numel) {
        const std::string name = prefix + "data/" + key;
        if (!archive.hasEntry(name))
            throw invalidInput(source + ": storage '" + key + "' is missing from the archive (no entry '" + name + "')");
        const auto elementSize = static_cast<int64_t>(c10::elementSize(dtype));
        if (numel > std::numeric_limits<int64_t>::max() / elementSize)
            throw invalidInput(source + ": storage '" + key + "' is too large");
        const uint64_t bytes = uint64_t(numel) * uint64_t(elementSize);
        const uint64_t stored = archive.entrySize(name);
        if (stored != bytes)
            throw invalidInput(source + ": storage '" + key + "' holds " + std::to_string(stored) +
                               " bytes, but the pickle describes " + std::to_string(numel) + " " +
                               c10::toString(dtype) + " elements (" + std::to_string(bytes) + " bytes)");
        torch::Tensor storage = torch::empty({numel}, torch::TensorOptions().dtype(dtype));
        archive.readEntryInto(name, storage.data_ptr(), bytes);
        if (bigEndian && elementSize > 1)
            swapBytes(storage.data_ptr(), numel, size_t(elementSize));
        return storage;
    };
    return unpickle(source, pickle, readStorage);
}

} // namespace

NamedTensors loadPytorchBinFile(const std::filesystem::path &file)
{
    return loadTorchSaveFile(file, unpickleStateDict);
}

std::vector<torch::Tensor> loadTensorListFile(const std::filesystem::path &file)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        throw ioError(file.string() + ": file not found");
    return loadTorchSaveFile(file, unpickleTensorList);
}

NamedTensors loadPytorchBinIndex(const std::filesystem::path &indexFile)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(indexFile, ec))
        throw ioError(indexFile.string() + ": index file not found");
    const std::filesystem::path folder = indexFile.parent_path().empty() ? "." : indexFile.parent_path();
    const CheckpointFiles files = parseShardIndex(readFile(indexFile), folder, indexFile);

    NamedTensors all;
    std::set<std::string> seen;
    for (const std::filesystem::path &shard : files.shards) {
        NamedTensors tensors = loadPytorchBinFile(shard);
        std::set<std::string> inShard;
        for (auto &[name, tensor] : tensors) {
            if (!seen.insert(name).second)
                throw invalidInput(shard.string() + ": tensor '" + name + "' is also in another shard");
            inShard.insert(name);
            all.emplace_back(std::move(name), std::move(tensor));
        }
        for (const auto &[name, expected] : files.tensorToShard)
            if (expected == shard && !inShard.count(name))
                throw invalidInput(indexFile.string() + ": weight_map puts '" + name + "' in " +
                                   shard.filename().string() + ", but that shard does not hold it");
    }
    return all;
}

NamedTensors loadPytorchBin(const std::filesystem::path &path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        if (std::filesystem::is_regular_file(path / kPytorchBinName, ec))
            return loadPytorchBinFile(path / kPytorchBinName);
        if (std::filesystem::is_regular_file(path / kPytorchBinIndexName, ec))
            return loadPytorchBinIndex(path / kPytorchBinIndexName);
        throw invalidInput(path.string() + ": has neither " + kPytorchBinName + " nor " + kPytorchBinIndexName);
    }
    if (endsWith(path.filename().string(), ".json"))
        return loadPytorchBinIndex(path);
    return loadPytorchBinFile(path);
}

} // namespace engine::io
