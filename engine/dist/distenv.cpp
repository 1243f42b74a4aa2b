#include "engine/dist/distenv.h"

#include "engine/core/error.h"

#include <charconv>
#include <cstdlib>

namespace engine::dist {
namespace {

int parseInt(const std::string &name, const std::string &text, int minimum)
{
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        throw invalidInput(name + "=" + text + " is not a whole number");
    if (value < minimum)
        throw invalidInput(name + "=" + text + " must be at least " + std::to_string(minimum));
    return value;
}

/// SLURM_NTASKS_PER_NODE may read "2" or "2(x3)"; the leading count is the tasks on this node.
int leadingCount(const std::string &text)
{
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && value > 0 ? value : 0;
}

} // namespace

std::string DistributedEnv::describe() const
{
    if (!distributed())
        return "a single process";
    return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + " (" + launcher + ", store " + masterAddr
        + ":" + std::to_string(masterPort) + ")";
}

DistributedEnv distributedEnvFrom(const EnvLookup &lookup)
{
    DistributedEnv env;
    const std::optional<std::string> rank = lookup("RANK");
    const std::optional<std::string> worldSize = lookup("WORLD_SIZE");
    std::string rankName = "RANK";
    std::string sizeName = "WORLD_SIZE";
    if (rank || worldSize) {
        if (!rank || !worldSize)
            throw invalidInput(std::string(rank ? "RANK" : "WORLD_SIZE") + " is set but " + (rank ? "WORLD_SIZE" : "RANK")
                               + " is not: a launcher sets both (torchrun, tunebench launch)");
        env.launcher = "torchrun";
        env.worldSize = parseInt("WORLD_SIZE", *worldSize, 1);
        env.rank = parseInt("RANK", *rank, 0);
        const std::optional<std::string> localRank = lookup("LOCAL_RANK");
        env.localRank = localRank ? parseInt("LOCAL_RANK", *localRank, 0) : env.rank;
        const std::optional<std::string> localSize = lookup("LOCAL_WORLD_SIZE");
        env.localWorldSize = localSize ? parseInt("LOCAL_WORLD_SIZE", *localSize, 1) : env.worldSize;
        env.agentStore = lookup("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
        if (const std::optional<std::string> restarts = lookup("TORCHELASTIC_RESTART_COUNT"))
            env.restartCount = parseInt("TORCHELASTIC_RESTART_COUNT", *restarts, 0);
    } else if (const std::optional<std::string> procId = lookup("SLURM_PROCID"), tasks = lookup("SLURM_NTASKS");
               procId && tasks) {
        rankName = "SLURM_PROCID";
        sizeName = "SLURM_NTASKS";
        env.launcher = "slurm";
        env.worldSize = parseInt("SLURM_NTASKS", *tasks, 1);
        env.rank = parseInt("SLURM_PROCID", *procId, 0);
        const std::optional<std::string> localId = lookup("SLURM_LOCALID");
        env.localRank = localId ? parseInt("SLURM_LOCALID", *localId, 0) : 0;
        const int perNode = leadingCount(lookup("SLURM_NTASKS_PER_NODE").value_or(""));
        env.localWorldSize = perNode > 0 ? perNode : 1;
    } else {
        return env;
    }
    if (env.rank >= env.worldSize) {
        throw invalidInput(rankName + "=" + std::to_string(env.rank) + " is outside the job: " + sizeName + "="
                           + std::to_string(env.worldSize) + " has ranks 0 to " + std::to_string(env.worldSize - 1));
    }
    if (env.localRank >= env.localWorldSize)
        env.localWorldSize = env.localRank + 1;
    if (!env.distributed()) {
        env.launcher.clear();
        return env;
    }
    const std::optional<std::string> addr = lookup("MASTER_ADDR");
    const std::optional<std::string> port = lookup("MASTER_PORT");
    if (!addr || !port) {
        throw invalidInput(sizeName + "=" + std::to_string(env.worldSize) + " needs MASTER_ADDR and MASTER_PORT (the host "
                           "and port of rank 0's rendezvous store); " + (addr ? "MASTER_PORT" : "MASTER_ADDR") + " is not set");
    }
    env.masterAddr = *addr;
    env.masterPort = parseInt("MASTER_PORT", *port, 1);
    if (env.masterPort > 65535)
        throw invalidInput("MASTER_PORT=" + *port + " is not a TCP port (1 to 65535)");
    return env;
}

DistributedEnv distributedEnvFromProcess()
{
    return distributedEnvFrom([](const std::string &name) -> std::optional<std::string> {
        const char *value = std::getenv(name.c_str());
        if (!value || !*value)
            return std::nullopt;
        return std::string(value);
    });
}

} // namespace engine::dist
