// writeSafetensors: plans the layout, builds the header, streams the tensors into a temp file
// that is renamed over the target.

#include "engine/io/safetensorsfile.h"

#include "engine/core/error.h"
#include "engine/io/dtypetorch.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <set>

#include <fcntl.h>
#include <unistd.h>

namespace engine::io {
namespace {

struct PlannedTensor {
    std::string name;
    const torch::Tensor *tensor = nullptr;
    DType dtype = DType::F32;
    std::uint64_t bytes = 0;
};

/// A temp file beside the target, renamed over it by commit(); removed if never committed.
class AtomicOutput {
public:
    explicit AtomicOutput(const std::filesystem::path &target) : m_target(target)
    {
        std::error_code ec;
        if (target.has_parent_path())
            std::filesystem::create_directories(target.parent_path(), ec);
        std::random_device random;
        m_temp = target.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(random());
        m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (m_fd < 0)
            fail();
    }
    ~AtomicOutput()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        if (!m_committed)
            ::unlink(m_temp.c_str());
    }
    AtomicOutput(const AtomicOutput &) = delete;
    AtomicOutput &operator=(const AtomicOutput &) = delete;

    void write(const void *data, std::uint64_t bytes)
    {
        const auto *cursor = static_cast<const unsigned char *>(data);
        while (bytes > 0) {
            const ssize_t written = ::write(m_fd, cursor, bytes);
            if (written < 0 && errno == EINTR)
                continue;
            if (written <= 0)
                fail();
            cursor += written;
            bytes -= static_cast<std::uint64_t>(written);
        }
    }
    void commit()
    {
        if (::fsync(m_fd) != 0)
            fail();
        const int fd = m_fd;
        m_fd = -1;
        if (::close(fd) != 0 || ::rename(m_temp.c_str(), m_target.c_str()) != 0)
            fail();
        m_committed = true;
    }

private:
    [[noreturn]] void fail() const
    {
        throw ioError("cannot write " + m_target.string() + ": " + std::strerror(errno));
    }

    std::filesystem::path m_target;
    std::string m_temp;
    int m_fd = -1;
    bool m_committed = false;
};

std::string jsonString(const std::string &text, const std::string &what, const std::filesystem::path &path)
{
    try {
        return nlohmann::json(text).dump();
    } catch (const nlohmann::json::exception &) {
        throw invalidInput("cannot write " + path.string() + ": " + what + " is not valid UTF-8");
    }
}

std::vector<PlannedTensor> planTensors(const std::filesystem::path &path,
                                       const std::vector<std::pair<std::string, torch::Tensor>> &tensors)
{
    std::vector<PlannedTensor> planned;
    std::set<std::string> names;
    for (const auto &[name, tensor] : tensors) {
        const std::string where = "cannot write " + path.string() + ": tensor '" + name + "'";
        if (name == "__metadata__")
            throw invalidInput(where + ": the name __metadata__ is reserved for the metadata");
        if (!names.insert(name).second)
            throw invalidInput(where + " is given twice (names must be unique)");
        if (!tensor.defined())
            throw invalidInput(where + " is undefined");
        const std::optional<DType> dtype = fromTorchDtype(tensor.scalar_type());
        if (!dtype)
            throw invalidInput(where + " has torch dtype " + std::string(c10::toString(tensor.scalar_type()))
                               + ", which safetensors cannot store");
        planned.push_back({name, &tensor, *dtype,
                           static_cast<std::uint64_t>(tensor.numel()) * c10::elementSize(tensor.scalar_type())});
    }
    // The reference implementation's order: alignment (dtype) descending, then name.
    std::sort(planned.begin(), planned.end(), [](const PlannedTensor &a, const PlannedTensor &b) {
        return a.dtype != b.dtype ? a.dtype > b.dtype : a.name < b.name;
    });
    return planned;
}

std::string headerJson(const std::filesystem::path &path, const std::vector<PlannedTensor> &planned,
                       const std::map<std::string, std::string> &metadata)
{
    std::string json = "{";
    if (!metadata.empty()) {
        json += "\"__metadata__\":{";
        bool first = true;
        for (const auto &[key, value] : metadata) {
            if (!first)
                json += ',';
            json += jsonString(key, "metadata key '" + key + "'", path);
            json += ':';
            json += jsonString(value, "metadata value of '" + key + "'", path);
            first = false;
        }
        json += "}";
    }
    std::uint64_t offset = 0;
    for (const PlannedTensor &tensor : planned) {
        if (json.size() > 1)
            json += ",";
        json += jsonString(tensor.name, "tensor name '" + tensor.name + "'", path) + ":{\"dtype\":\""
            + std::string(dtypeName(tensor.dtype)) + "\",\"shape\":[";
        for (int64_t i = 0; i < tensor.tensor->dim(); ++i) {
            if (i)
                json += ',';
            json += std::to_string(tensor.tensor->size(i));
        }
        json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + tensor.bytes) + "]}";
        offset += tensor.bytes;
    }
    json += "}";
    json.append((8 - json.size() % 8) % 8, ' '); // the buffer starts 8-byte aligned
    return json;
}

} // namespace

void writeSafetensors(const std::filesystem::path &path,
                      const std::vector<std::pair<std::string, torch::Tensor>> &tensors,
                      const std::map<std::string, std::string> &metadata)
{
    const std::vector<PlannedTensor> planned = planTensors(path, tensors);
    const std::string header = headerJson(path, planned, metadata);
    if (header.size() > kMaxSafetensorsHeaderBytes)
        throw invalidInput("cannot write " + path.string() + ": the header would be " + std::to_string(header.size())
                           + " bytes, above the limit of " + std::to_string(kMaxSafetensorsHeaderBytes));
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i)
        prefix[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));

    AtomicOutput out(path);
    out.write(prefix, 8);
    out.write(header.data(), header.size());
    for (const PlannedTensor &tensor : planned) {
        if (tensor.bytes == 0)
            continue;
        const torch::Tensor cpu = tensor.tensor->detach().to(torch::kCPU).resolve_conj().resolve_neg().contiguous();
        out.write(cpu.data_ptr(), tensor.bytes);
    }
    out.commit();
}

} // namespace engine::io
