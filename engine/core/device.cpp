#include "engine/core/device.h"

#include "engine/core/error.h"

#include <charconv>

namespace engine {

std::string canonicalDeviceName(std::string_view name, std::string_view what)
{
    if (name == "cpu")
        return "cpu";
    if (name == "cuda")
        return "cuda:0";
    constexpr std::string_view prefix = "cuda:";
    if (name.starts_with(prefix) && name.size() > prefix.size() && name.size() <= prefix.size() + 3) {
        int index = -1;
        const char *first = name.data() + prefix.size();
        const char *last = name.data() + name.size();
        const auto [end, ec] = std::from_chars(first, last, index);
        if (ec == std::errc() && end == last && index >= 0 && (index == 0 || *first != '0'))
            return "cuda:" + std::to_string(index);
    }
    throw invalidInput(std::string(what) + " '" + std::string(name) + "' is not a device: use cpu, cuda or cuda:N");
}

bool isCudaDeviceName(std::string_view canonicalName) { return canonicalName.starts_with("cuda:"); }

} // namespace engine
