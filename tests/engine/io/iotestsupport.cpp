#include "iotestsupport.h"

#include <fstream>
#include <sstream>

namespace io_test {

std::string safetensorsBytes(const std::string &header, const std::string &data, std::optional<std::uint64_t> length)
{
    const std::uint64_t n = length.value_or(header.size());
    std::string bytes;
    for (int i = 0; i < 8; ++i)
        bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    return bytes + header + data;
}

void writeBytes(const std::filesystem::path &path, const std::string &bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string readBytes(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream all;
    all << in.rdbuf();
    return all.str();
}

} // namespace io_test
