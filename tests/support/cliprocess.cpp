#include "support/cliprocess.h"

#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace testing_support {
namespace {

std::string slurp(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

ChildProcess spawnProcess(const std::string &binary, const std::vector<std::string> &args,
                          const std::filesystem::path &captureDir, const std::string &tag)
{
    ChildProcess child;
    child.outFile = captureDir / (tag + ".out");
    child.errFile = captureDir / (tag + ".err");
    // Everything the child needs is prepared before fork(): only async-signal-safe calls after it.
    std::vector<std::string> strings{binary};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (auto &s : strings)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string outPath = child.outFile.string();
    const std::string errPath = child.errFile.string();

    child.pid = ::fork();
    if (child.pid == 0) {
        const int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::unsetenv("DISPLAY");
        ::unsetenv("WAYLAND_DISPLAY");
        ::unsetenv("QT_QPA_PLATFORM");
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return child;
}

ProcessResult finishProcess(const ChildProcess &child)
{
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    ProcessResult result;
    result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = slurp(child.outFile);
    result.err = slurp(child.errFile);
    return result;
}

ProcessResult runProcess(const std::string &binary, const std::vector<std::string> &args,
                         const std::filesystem::path &captureDir, const std::string &tag)
{
    return finishProcess(spawnProcess(binary, args, captureDir, tag));
}

} // namespace testing_support
