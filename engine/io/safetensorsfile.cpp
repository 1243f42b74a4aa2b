#include "engine/io/safetensorsfile.h"

#include "engine/core/error.h"
#include "engine/io/dtypetorch.h"
#include "engine/io/mappedfile.h"

#include <torch/torch.h>

#include <limits>

namespace engine::io {
namespace {

std::vector<int64_t> torchSizes(const TensorInfo &info, const std::string &fileLabel)
{
    std::vector<int64_t> sizes;
    sizes.reserve(info.shape.size());
    for (const std::uint64_t dim : info.shape) {
        if (dim > static_cast<std::uint64_t>(std::numeric_limits<int64_t>::max()))
            throw invalidInput(fileLabel + ": tensor '" + info.name + "' has a dimension of " + std::to_string(dim)
                               + ", above libtorch's limit of 2^63 - 1");
        sizes.push_back(static_cast<int64_t>(dim));
    }
    return sizes;
}

} // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path &path)
{
    SafetensorsFile file;
    file.m_path = path;
    file.m_file = MappedFile::open(path);
    const std::string label = path.string();
    const std::uint64_t size = file.m_file->size();
    if (size < 8)
        throw invalidInput(label + ": file has " + std::to_string(size)
                           + " bytes, fewer than the 8-byte header length that starts a safetensors file");
    const auto *bytes = reinterpret_cast<const unsigned char *>(file.m_file->data());
    const std::uint64_t length = checkSafetensorsHeaderLength(bytes, size, label);
    file.m_header = parseSafetensorsHeader(std::string_view(reinterpret_cast<const char *>(bytes) + 8, length), size, label);
    file.m_index.reserve(file.m_header.tensors.size());
    for (size_t i = 0; i < file.m_header.tensors.size(); ++i)
        file.m_index.emplace(file.m_header.tensors[i].name, i);
    return file;
}

torch::Tensor SafetensorsFile::tensor(const std::string &name, const TensorLoadOptions &options) const
{
    const std::string label = m_path.string();
    const auto found = m_index.find(name);
    if (found == m_index.end())
        throw invalidInput(label + ": no tensor named '" + name + "'");
    const TensorInfo &info = m_header.tensors[found->second];
    const std::optional<c10::ScalarType> type = toTorchDtype(info.dtype);
    if (!type)
        throw invalidInput(label + ": tensor '" + name + "' has dtype " + std::string(dtypeName(info.dtype)) + ", which "
                           + torchVersionText() + " cannot hold");
    const std::vector<int64_t> sizes = torchSizes(info, label);
    const auto tensorOptions = torch::TensorOptions().dtype(*type);
    const std::uint64_t fileOffset = m_header.dataOffset + info.begin;
    const std::uint64_t bytes = info.byteSize();

    const bool converting = options.dtype && *options.dtype != *type;
    const bool moving = options.device != torch::Device(torch::kCPU);
    const size_t elementSize = c10::elementSize(*type);
    std::byte *address = m_file->data() + fileOffset;
    const bool aligned = reinterpret_cast<std::uintptr_t>(address) % elementSize == 0;

    torch::Tensor tensor;
    if (bytes == 0) {
        tensor = torch::empty(sizes, tensorOptions);
    } else if (aligned && !(options.copy && !converting && !moving)) {
        // Zero-copy: the deleter holds the mapping until the last tensor over it is freed.
        std::shared_ptr<MappedFile> keepAlive = m_file;
        tensor = torch::from_blob(
            address, sizes, [keepAlive](void *) mutable { keepAlive.reset(); }, tensorOptions);
    } else {
        // Owned memory (asked for, or the data is misaligned for its dtype): one pread.
        tensor = torch::empty(sizes, tensorOptions);
        m_file->readAt(fileOffset, tensor.data_ptr(), bytes);
    }
    if (converting || moving)
        tensor = tensor.to(options.device, options.dtype.value_or(*type));
    return tensor;
}

} // namespace engine::io
