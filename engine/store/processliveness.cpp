#include "engine/store/processliveness.h"

#include <cerrno>
#include <csignal>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <unistd.h>

namespace engine::store {

namespace {

struct StatFields {
    char state = '?';
    uint64_t startTime = 0;
};

std::optional<StatFields> readStat(const std::string &file)
{
    std::ifstream in(file);
    if (!in)
        return std::nullopt;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Field 2, the command name, is in parentheses and may itself hold spaces and ')': the fields
    // we need follow the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos)
        return std::nullopt;
    std::istringstream rest(text.substr(close + 1));
    StatFields fields;
    rest >> fields.state; // field 3
    std::string skipped;
    for (int field = 4; field < 22; ++field)
        rest >> skipped;
    rest >> fields.startTime; // field 22
    if (!rest)
        return std::nullopt;
    return fields;
}

} // namespace

ProcessIdentity currentProcess()
{
    ProcessIdentity self;
    self.pid = static_cast<int64_t>(::getpid());
    if (auto stat = readStat("/proc/self/stat"))
        self.startTime = stat->startTime;
    return self;
}

std::optional<uint64_t> processStartTime(int64_t pid)
{
    if (pid <= 0)
        return std::nullopt;
    const auto stat = readStat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat || stat->state == 'Z' || stat->state == 'X')
        return std::nullopt;
    return stat->startTime;
}

bool isProcessAlive(const ProcessIdentity &owner)
{
    if (owner.pid <= 0)
        return false;
    if (owner.startTime)
        return processStartTime(owner.pid) == owner.startTime;
    // Recorded without /proc: all we can ask is whether the pid exists.
    return ::kill(static_cast<pid_t>(owner.pid), 0) == 0 || errno == EPERM;
}

} // namespace engine::store
