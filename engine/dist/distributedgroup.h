#pragma once
// The ranks of a data-parallel job as PyTorch's distributed layer connects them: a c10d TCPStore
// rendezvous (rank 0 serves it at MASTER_ADDR:MASTER_PORT, or torchrun's agent does) and a c10d
// ProcessGroupGloo over it. connect() checks what torch.distributed leaves to chance: that exactly
// WORLD_SIZE distinct ranks arrive and that all were started with the same settings; each failure is
// one error that says what to change, within the timeout, never a hang.
//
//   DistributedGroup group = DistributedGroup::connect(env, {timeout, settingsJson});
//   group.allreduceSum(tensors);          // every rank calls the same collectives in the same order

#include "engine/dist/distenv.h"

#include <torch/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace engine::dist {

/// An allreduce in flight (DistributedGroup::allreduceSumAsync).
class PendingCollective {
public:
    PendingCollective() = default;
    /// Blocks until the collective is done. Throws Error(Io) when a peer failed or the timeout passed.
    void wait();
    bool pending() const { return m_state != nullptr; }

private:
    friend class DistributedGroup;
    struct State;
    std::shared_ptr<State> m_state;
};

class DistributedGroup {
public:
    struct Options {
        /// How long a rank waits for the others (rendezvous, each collective) before it fails.
        std::chrono::milliseconds timeout{std::chrono::minutes(5)};
        /// The settings that must agree on every rank (JSON text); compared at the rendezvous.
        std::string settingsJson;
    };

    /// Rendezvous and process group. Throws engine::Error: InvalidInput for a job that is set up wrong
    /// (ranks with different settings, two processes with one RANK, more processes than WORLD_SIZE),
    /// Io for one that cannot connect (the port in use, rank 0 unreachable, ranks missing).
    static std::unique_ptr<DistributedGroup> connect(const DistributedEnv &env, const Options &options);
    ~DistributedGroup();
    DistributedGroup(const DistributedGroup &) = delete;
    DistributedGroup &operator=(const DistributedGroup &) = delete;

    int rank() const { return m_env.rank; }
    int worldSize() const { return m_env.worldSize; }
    bool primary() const { return m_env.rank == 0; }
    const DistributedEnv &env() const { return m_env; }
    std::chrono::milliseconds timeout() const { return m_timeout; }

    /// Sums each tensor over the ranks, in place. Dense tensors; CPU (CUDA tensors go through host memory).
    void allreduceSum(std::vector<torch::Tensor> &tensors);
    /// Starts summing `flat` (one dense contiguous tensor) over the ranks; wait() before reading it.
    PendingCollective allreduceSumAsync(torch::Tensor flat);
    /// Sums doubles over the ranks (the step's loss, token counts, a stop request).
    std::vector<double> sumScalars(const std::vector<double> &values);
    /// Rank `root`'s values into every rank's tensors, in place.
    void broadcast(std::vector<torch::Tensor> &tensors, int root = 0);
    /// Rank 0 publishes a short value under `key`; every other rank gets it (waiting for it).
    std::string share(const std::string &key, const std::string &valueOnRank0);
    /// Returns when every rank has called it, or throws Error(Io) after `timeout` (default: the
    /// group's). The ranks wait in one while rank 0 alone writes a checkpoint, which may take longer.
    void barrier(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

private:
    struct Impl;
    DistributedGroup(const DistributedEnv &env, std::chrono::milliseconds timeout, std::unique_ptr<Impl> impl);
    DistributedEnv m_env;
    std::chrono::milliseconds m_timeout;
    std::unique_ptr<Impl> m_impl;
};

/// The collective failure as one message: what failed, that a peer stopped or hung, the timeout.
std::string collectiveFailure(const std::string &what, const std::string &detail, std::chrono::milliseconds timeout);

/// The first key whose value differs between two settings objects (JSON), as "key = A there, B here";
/// empty when they agree.
std::string settingsDifference(const std::string &mineJson, const std::string &theirsJson);

} // namespace engine::dist
