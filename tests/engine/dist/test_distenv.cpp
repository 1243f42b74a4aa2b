// The launchers' environment as the trainer reads it: torchrun's variables, SLURM's when torchrun's
// are absent, and one clear error for each inconsistent setting.

#include "engine/core/error.h"
#include "engine/dist/distenv.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>

#include <map>

using engine::dist::DistributedEnv;
using engine::dist::distributedEnvFrom;

namespace {

DistributedEnv read(const std::map<std::string, std::string> &vars)
{
    return distributedEnvFrom([&](const std::string &name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        if (it == vars.end() || it->second.empty())
            return std::nullopt;
        return it->second;
    });
}

void expectBad(const std::map<std::string, std::string> &vars, const std::string &needle)
{
    testing_support::expectError([&] { read(vars); }, engine::ErrorKind::InvalidInput, needle);
}

} // namespace

TEST(DistEnvTest, NoLauncherIsOneProcess)
{
    const DistributedEnv env = read({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "1234"}});
    EXPECT_FALSE(env.distributed());
    EXPECT_EQ(env.worldSize, 1);
    EXPECT_EQ(env.rank, 0);
    EXPECT_EQ(env.describe(), "a single process");
}

TEST(DistEnvTest, TorchrunVariables)
{
    const DistributedEnv env = read({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                                     {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}});
    EXPECT_TRUE(env.distributed());
    EXPECT_EQ(env.rank, 3);
    EXPECT_EQ(env.worldSize, 4);
    EXPECT_EQ(env.localRank, 1);
    EXPECT_EQ(env.localWorldSize, 2);
    EXPECT_EQ(env.masterAddr, "node0");
    EXPECT_EQ(env.masterPort, 29500);
    EXPECT_EQ(env.launcher, "torchrun");
    EXPECT_FALSE(env.agentStore);
    EXPECT_EQ(env.describe(), "rank 3 of 4 (torchrun, store node0:29500)");
}

TEST(DistEnvTest, TorchrunAgentStore)
{
    const DistributedEnv env = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "5"},
                                     {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
    EXPECT_TRUE(env.agentStore);
    EXPECT_EQ(env.restartCount, 2);
    EXPECT_EQ(env.localRank, 0); // LOCAL_RANK absent: the rank
}

TEST(DistEnvTest, SlurmWhenTorchrunVariablesAreAbsent)
{
    const DistributedEnv env = read({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                     {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "6000"}});
    EXPECT_EQ(env.launcher, "slurm");
    EXPECT_EQ(env.rank, 5);
    EXPECT_EQ(env.worldSize, 8);
    EXPECT_EQ(env.localRank, 1);
    EXPECT_EQ(env.localWorldSize, 4);
    // torchrun's variables win over SLURM's (torchrun inside an allocation).
    const DistributedEnv both = read({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"RANK", "1"}, {"WORLD_SIZE", "2"},
                                      {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "6000"}});
    EXPECT_EQ(both.launcher, "torchrun");
    EXPECT_EQ(both.worldSize, 2);
}

TEST(DistEnvTest, ASingleTaskAllocationIsOneProcess)
{
    const DistributedEnv env = read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
    EXPECT_FALSE(env.distributed());
    EXPECT_TRUE(env.launcher.empty());
}

TEST(DistEnvTest, BadSettingsNameTheVariable)
{
    expectBad({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "RANK=x is not a whole number");
    expectBad({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}},
              "RANK=2 is outside the job: WORLD_SIZE=2 has ranks 0 to 1");
    expectBad({{"RANK", "0"}}, "RANK is set but WORLD_SIZE is not");
    expectBad({{"WORLD_SIZE", "0"}, {"RANK", "0"}}, "WORLD_SIZE=0 must be at least 1");
    expectBad({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}, "MASTER_ADDR is not set");
    expectBad({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}, "MASTER_PORT is not set");
    expectBad({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "70000"}},
              "MASTER_PORT=70000 is not a TCP port");
    expectBad({{"SLURM_PROCID", "8"}, {"SLURM_NTASKS", "8"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}},
              "SLURM_PROCID=8 is outside the job: SLURM_NTASKS=8");
}
