#pragma once
// Where this process stands in a data-parallel job, read from the environment the way PyTorch's
// launchers set it: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), or SLURM's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, with MASTER_ADDR and
// MASTER_PORT given) when torchrun's variables are absent. `tunebench launch` sets torchrun's.
// Torch-free: the CLI reads it before anything loads.

#include <functional>
#include <optional>
#include <string>

namespace engine::dist {

struct DistributedEnv {
    int rank = 0;
    int worldSize = 1;
    int localRank = 0;
    int localWorldSize = 1;
    std::string masterAddr; ///< the rendezvous store's host (rank 0 serves it unless agentStore)
    int masterPort = 0;
    std::string launcher;   ///< "torchrun" (also tunebench launch), "slurm"; empty when not distributed
    /// torchrun's agent serves the store (TORCHELASTIC_USE_AGENT_STORE=True): every rank is its client,
    /// under the prefix /worker/attempt_<restartCount>, as torch.distributed does.
    bool agentStore = false;
    int restartCount = 0;

    bool distributed() const { return worldSize > 1; }
    /// "rank 1 of 2 (torchrun, store 127.0.0.1:29500)".
    std::string describe() const;
};

/// Reads a variable; std::nullopt when unset (an empty value counts as unset).
using EnvLookup = std::function<std::optional<std::string>(const std::string &name)>;

/// The job's place from `lookup`. A single process (worldSize 1) when neither launcher's variables are
/// set. Throws engine::Error(InvalidInput) naming the variable for a value that is not a number, a
/// rank outside [0, WORLD_SIZE), or a multi-process job without MASTER_ADDR / MASTER_PORT.
DistributedEnv distributedEnvFrom(const EnvLookup &lookup);
/// distributedEnvFrom(getenv).
DistributedEnv distributedEnvFromProcess();

} // namespace engine::dist
