// `tunebench launch --nproc N -- train ARGS...`: N ranks of a data-parallel job on this machine, as
// `torchrun --standalone --nproc-per-node N` starts them: each a `tunebench train` process with RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (a free port unless
// --master-port is given). Ctrl+C (or SIGTERM) is passed on to every rank, which stop together after
// the current step; when one rank fails, the others are stopped, and the launcher exits with its code.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"

#include "engine/core/freeport.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace app::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string describeStatus(int status)
{
    if (WIFEXITED(status))
        return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    return "ended";
}

int exitCodeOf(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return ExitFailed;
}

class LaunchCommand : public Command {
public:
    LaunchCommand(CLI::App &app, const GlobalOptions &globals) : m_globals(globals)
    {
        m_command = app.add_subcommand("launch", commandSummary("launch"));
        m_command->footer("Example: tunebench launch --nproc 2 -- train --demo\n"
                          "Each rank trains on its shard of every batch (--batch-size is per rank); rank 0 writes the run.\n"
                          "On a cluster, start `tunebench train` with torchrun or srun instead: it reads RANK, WORLD_SIZE,\n"
                          "LOCAL_RANK, MASTER_ADDR and MASTER_PORT (or SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).");
        m_command->add_option("--nproc", m_ranks, "Ranks to start (processes on this machine)")->required()->check(CLI::Range(1, 1024));
        m_command->add_option("--master-port", m_port, "Port of the rendezvous store (default: a free one)")
            ->check(CLI::Range(1, 65535));
        m_command->add_option("--grace", m_graceSeconds, "Seconds the other ranks get to stop when one fails, before they are killed")
            ->capture_default_str();
        m_command->add_option("command", m_arguments, "The command each rank runs, after --: train ARGS...");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        if (m_arguments.empty() || m_arguments.front() != "train") {
            std::fprintf(stderr, "tunebench launch: give the command after --, e.g. `tunebench launch --nproc 2 -- train --demo` "
                                 "(only train runs data parallel)\n");
            return ExitUsage;
        }
        const int port = m_port > 0 ? m_port : engine::freeLoopbackPort();
        if (port <= 0) {
            std::fprintf(stderr, "tunebench launch: found no free TCP port on 127.0.0.1 for the rendezvous; give --master-port\n");
            return ExitFailed;
        }
        // The launcher takes Ctrl+C, SIGTERM and its children's exits as they come; the ranks get them passed on.
        sigset_t signals;
        sigemptyset(&signals);
        sigaddset(&signals, SIGINT);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGCHLD);
        sigset_t previous;
        sigprocmask(SIG_BLOCK, &signals, &previous);

        std::vector<pid_t> pids;
        for (int rank = 0; rank < m_ranks; ++rank) {
            const pid_t pid = startRank(rank, port, previous);
            if (pid < 0) {
                std::fprintf(stderr, "tunebench launch: could not start rank %d: %s\n", rank, std::strerror(errno));
                for (pid_t started : pids)
                    ::kill(started, SIGTERM);
                for (pid_t started : pids)
                    ::waitpid(started, nullptr, 0);
                sigprocmask(SIG_SETMASK, &previous, nullptr);
                return ExitFailed;
            }
            pids.push_back(pid);
        }
        const int code = supervise(pids, signals);
        sigprocmask(SIG_SETMASK, &previous, nullptr);
        return code;
    }

private:
    pid_t startRank(int rank, int port, const sigset_t &mask)
    {
        // Everything the child needs is built here: between fork and exec it only makes system calls
        // (another thread of this process may hold the allocator's lock at the fork).
        std::vector<std::string> args = {"tunebench"};
        if (!m_globals.storePath.empty())
            args.insert(args.end(), {"--db", m_globals.storePath});
        args.insert(args.end(), m_arguments.begin(), m_arguments.end());
        const std::vector<std::pair<std::string, std::string>> vars = {
            {"RANK", std::to_string(rank)}, {"LOCAL_RANK", std::to_string(rank)},
            {"WORLD_SIZE", std::to_string(m_ranks)}, {"LOCAL_WORLD_SIZE", std::to_string(m_ranks)},
            {"GROUP_RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
        std::vector<std::string> environment;
        for (char **entry = environ; *entry; ++entry) {
            const std::string_view text(*entry);
            const std::string_view name = text.substr(0, text.find('='));
            const bool replaced = name == "TORCHELASTIC_USE_AGENT_STORE"
                || std::any_of(vars.begin(), vars.end(), [&](const auto &var) { return var.first == name; });
            if (!replaced)
                environment.emplace_back(text);
        }
        for (const auto &[name, value] : vars)
            environment.push_back(name + "=" + value);
        std::vector<char *> argv, envp;
        for (std::string &arg : args)
            argv.push_back(arg.data());
        argv.push_back(nullptr);
        for (std::string &entry : environment)
            envp.push_back(entry.data());
        envp.push_back(nullptr);
        static constexpr char kExecFailed[] = "tunebench launch: could not run a rank (exec /proc/self/exe failed)\n";

        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid != 0)
            return pid;
        // The child: its own process group (a terminal's Ctrl+C reaches the launcher, which passes it on
        // once), stopped if the launcher dies, the launcher's signal mask undone.
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent)
            ::_exit(ExitFailed);
        sigprocmask(SIG_SETMASK, &mask, nullptr);
        ::execve("/proc/self/exe", argv.data(), envp.data());
        [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kExecFailed, sizeof kExecFailed - 1);
        ::_exit(127);
    }

    /// Waits for every rank; passes signals on; stops the rest when one fails. Returns the exit code.
    int supervise(std::vector<pid_t> pids, const sigset_t &signals)
    {
        std::vector<std::optional<int>> status(pids.size());
        size_t running = pids.size();
        std::optional<int> failure;      // the first failing rank's exit code
        bool interrupted = false;
        bool killPending = false; // the failed rank's peers get the grace period, then SIGKILL
        Clock::time_point killAt;
        auto signalRunning = [&](int sig) {
            for (size_t r = 0; r < pids.size(); ++r) {
                if (!status[r])
                    ::kill(pids[r], sig);
            }
        };
        while (running > 0) {
            const timespec wait{0, 200'000'000};
            const int sig = sigtimedwait(&signals, nullptr, &wait);
            if (sig == SIGINT || sig == SIGTERM) {
                if (!interrupted)
                    std::fprintf(stderr, "\ntunebench launch: passing the stop on to %zu rank(s)\n", running);
                interrupted = true;
                signalRunning(sig);
            }
            int childStatus = 0;
            pid_t done;
            while ((done = ::waitpid(-1, &childStatus, WNOHANG)) > 0) {
                for (size_t r = 0; r < pids.size(); ++r) {
                    if (pids[r] != done || status[r])
                        continue;
                    status[r] = childStatus;
                    --running;
                    const int code = exitCodeOf(childStatus);
                    // After a stop was passed on: a rank that stopped at a step (130), or one the signal
                    // ended before it could catch it (still starting), has not failed.
                    const bool stopped = interrupted
                        && (code == ExitCancelled || code == 128 + SIGINT || code == 128 + SIGTERM);
                    if (code != 0 && !stopped && !failure) {
                        failure = code;
                        if (running > 0) {
                            std::fprintf(stderr, "tunebench launch: rank %zu %s; stopping the other %zu rank(s)\n", r,
                                         describeStatus(childStatus).c_str(), running);
                            signalRunning(SIGTERM);
                            killAt = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(m_graceSeconds * 1000));
                            killPending = true;
                        } else {
                            std::fprintf(stderr, "tunebench launch: rank %zu %s\n", r, describeStatus(childStatus).c_str());
                        }
                    }
                }
            }
            if (killPending && running > 0 && Clock::now() >= killAt) {
                std::fprintf(stderr, "tunebench launch: %zu rank(s) still running after %g s; killing them\n", running, m_graceSeconds);
                signalRunning(SIGKILL);
                killPending = false;
            }
        }
        if (failure)
            return *failure;
        return interrupted ? ExitCancelled : ExitOk;
    }

    const GlobalOptions &m_globals;
    CLI::App *m_command = nullptr;
    int m_ranks = 0;
    int m_port = 0;
    double m_graceSeconds = 15;
    std::vector<std::string> m_arguments;
};

} // namespace

std::unique_ptr<Command> makeLaunchCommand(CLI::App &app, const GlobalOptions &globals)
{
    return std::make_unique<LaunchCommand>(app, globals);
}

} // namespace app::cli
