// Two ranks of a job in one test process (one thread each, a real TCPStore and Gloo group over
// 127.0.0.1): after the bucketed, hook-driven allreduce every rank holds the sum of both ranks'
// gradients, computed here independently without any reducer; accumulation steps do not travel;
// buckets start during backward; and the rendezvous names what is wrong with a job.

#include "engine/core/error.h"
#include "engine/core/freeport.h"
#include "engine/dist/distributedgroup.h"
#include "engine/dist/gradientreducer.h"
#include "engine/train/batchsampler.h"
#include "support/expecterror.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <thread>

using engine::dist::DistributedEnv;
using engine::dist::DistributedGroup;
using engine::dist::GradientReducer;

namespace {

DistributedEnv rankEnv(int rank, int world, int port)
{
    DistributedEnv env;
    env.rank = rank;
    env.worldSize = world;
    env.localRank = rank;
    env.localWorldSize = world;
    env.masterAddr = "127.0.0.1";
    env.masterPort = port;
    env.launcher = "test";
    return env;
}

/// Runs `body(rank)` on `world` threads at once; rethrows the first failure's message as a test failure.
void onRanks(int world, const std::function<void(int)> &body)
{
    std::vector<std::thread> threads;
    std::vector<std::string> failures(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] {
            try {
                body(r);
            } catch (const std::exception &e) {
                failures[static_cast<size_t>(r)] = e.what();
            }
        });
    }
    for (std::thread &t : threads)
        t.join();
    for (int r = 0; r < world; ++r)
        EXPECT_EQ(failures[static_cast<size_t>(r)], "") << "rank " << r;
}

std::unique_ptr<DistributedGroup> connect(int rank, int world, int port, const std::string &settings = "{}",
                                          std::chrono::milliseconds timeout = std::chrono::seconds(20))
{
    DistributedGroup::Options options;
    options.timeout = timeout;
    options.settingsJson = settings;
    return DistributedGroup::connect(rankEnv(rank, world, port), options);
}

/// A small MLP whose layers are big enough for several 4 KiB buckets.
struct Net : torch::nn::Module {
    Net()
    {
        // Ranks build their nets on two threads at once: seeding and drawing from torch's one default
        // generator must not interleave, or the ranks (and the reference) start from different weights.
        static std::mutex generator;
        const std::lock_guard<std::mutex> lock(generator);
        torch::manual_seed(7);
        a = register_module("a", torch::nn::Linear(16, 32));
        b = register_module("b", torch::nn::Linear(32, 32));
        c = register_module("c", torch::nn::Linear(32, 4));
    }
    torch::Tensor forward(const torch::Tensor &x) { return c->forward(torch::tanh(b->forward(torch::tanh(a->forward(x))))); }
    torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
};

torch::Tensor inputFor(int rank, int micro)
{
    return torch::linspace(-1.0 + 0.3 * rank + 0.1 * micro, 1.0 + 0.2 * rank, 5 * 16).view({5, 16});
}

/// The gradients one rank's data gives over `micro` micro-batches, with no reducer.
std::vector<torch::Tensor> localGradients(int rank, int micro)
{
    Net net;
    for (int k = 0; k < micro; ++k)
        net.forward(inputFor(rank, k)).pow(2).sum().backward();
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor &p : net.parameters())
        grads.push_back(p.grad().clone());
    return grads;
}

} // namespace

TEST(GradientReducerTest, EveryRankHoldsTheSumOfAllRanksGradients)
{
    const int port = engine::freeLoopbackPort();
    ASSERT_GT(port, 0);
    const std::vector<torch::Tensor> g0 = localGradients(0, 2), g1 = localGradients(1, 2);
    std::vector<std::vector<torch::Tensor>> result(2);
    std::vector<GradientReducer::Timing> timings(2);
    std::vector<int64_t> buckets(2);
    onRanks(2, [&](int rank) {
        auto group = connect(rank, 2, port);
        Net net;
        GradientReducer reducer(*group, net.parameters(), /*bucketBytes=*/600);
        buckets[rank] = reducer.bucketCount();
        for (int k = 0; k < 2; ++k) { // two micro-batches: only the last one's backward travels
            reducer.prepare(/*synchronize=*/k == 1);
            net.forward(inputFor(rank, k)).pow(2).sum().backward();
        }
        reducer.finish();
        timings[rank] = reducer.lastTiming();
        for (const torch::Tensor &p : net.parameters())
            result[rank].push_back(p.grad().clone());
    });
    for (int rank = 0; rank < 2; ++rank) {
        ASSERT_EQ(result[rank].size(), g0.size()) << "rank " << rank;
        for (size_t i = 0; i < g0.size(); ++i) {
            const torch::Tensor expected = g0[i] + g1[i];
            EXPECT_TRUE(torch::allclose(result[rank][i], expected, 1e-5, 1e-6))
                << "rank " << rank << " parameter " << i << " differs by " << (result[rank][i] - expected).abs().max().item<double>();
        }
    }
    // Reverse order, closed once 600 bytes are reached: [c.bias, c.weight, b.bias], [b.weight], [a.bias, a.weight].
    EXPECT_EQ(buckets[0], 3);
    EXPECT_EQ(buckets[0], buckets[1]);
    // Every bucket is complete before backward ends here (no unused parameter), so all start inside backward.
    EXPECT_DOUBLE_EQ(timings[0].backwardLaunched, 1.0);
}

TEST(GradientReducerTest, WithoutOverlapTheSumsWaitForTheEndOfBackward)
{
    const int port = engine::freeLoopbackPort();
    const std::vector<torch::Tensor> g0 = localGradients(0, 1), g1 = localGradients(1, 1);
    std::vector<std::vector<torch::Tensor>> result(2);
    std::vector<double> launched(2, -1);
    onRanks(2, [&](int rank) {
        auto group = connect(rank, 2, port);
        Net net;
        GradientReducer reducer(*group, net.parameters(), 4096, /*overlap=*/false);
        reducer.prepare(true);
        net.forward(inputFor(rank, 0)).pow(2).sum().backward();
        reducer.finish();
        launched[rank] = reducer.lastTiming().backwardLaunched;
        for (const torch::Tensor &p : net.parameters())
            result[rank].push_back(p.grad().clone());
    });
    EXPECT_DOUBLE_EQ(launched[0], 0.0);
    ASSERT_EQ(result[1].size(), g0.size());
    for (size_t i = 0; i < g0.size(); ++i)
        EXPECT_TRUE(torch::allclose(result[1][i], g0[i] + g1[i], 1e-5, 1e-6));
}

TEST(GradientReducerTest, OnlyTrainableParametersTravelAndUnusedOnesAreHandledAsDdpDoes)
{
    const int port = engine::freeLoopbackPort();
    std::vector<int64_t> bytes(2);
    std::vector<bool> unusedDefined(2, true);
    std::vector<torch::Tensor> partlyUsedGrad(2);
    onRanks(2, [&](int rank) {
        auto group = connect(rank, 2, port);
        Net net;
        net.a->weight.set_requires_grad(false); // frozen, as a LoRA base
        torch::Tensor unused = torch::ones({3}, torch::requires_grad());        // no rank uses it
        torch::Tensor usedByRank1 = torch::ones({2}, torch::requires_grad());   // only rank 1 uses it
        std::vector<torch::Tensor> trainable;
        for (const torch::Tensor &p : net.parameters()) {
            if (p.requires_grad())
                trainable.push_back(p);
        }
        trainable.push_back(unused);
        trainable.push_back(usedByRank1);
        GradientReducer reducer(*group, trainable);
        bytes[rank] = reducer.bytesPerStep();
        reducer.prepare(true);
        torch::Tensor loss = net.forward(inputFor(rank, 0)).sum();
        if (rank == 1)
            loss = loss + usedByRank1.sum() * 3;
        loss.backward();
        reducer.finish();
        unusedDefined[rank] = unused.grad().defined();
        partlyUsedGrad[rank] = usedByRank1.grad().defined() ? usedByRank1.grad().clone() : torch::Tensor();
    });
    const int64_t expected = (32 + 32 * 32 + 32 + 4 * 32 + 4 + 3 + 2) * 4; // all but a.weight (16 x 32), plus the two
    EXPECT_EQ(bytes[0], expected);
    // Used by no rank: no gradient anywhere, so the optimizer leaves it alone as one process would.
    EXPECT_FALSE(unusedDefined[0]);
    EXPECT_FALSE(unusedDefined[1]);
    // Used by one rank: every rank gets that rank's gradient (the other's counts as zero).
    for (int rank = 0; rank < 2; ++rank) {
        ASSERT_TRUE(partlyUsedGrad[rank].defined()) << "rank " << rank;
        EXPECT_TRUE(torch::equal(partlyUsedGrad[rank], torch::full({2}, 3.0f))) << "rank " << rank;
    }
}

TEST(GradientReducerTest, ScalarsAndBroadcast)
{
    const int port = engine::freeLoopbackPort();
    std::vector<std::vector<double>> sums(3);
    std::vector<torch::Tensor> received(3);
    std::vector<std::string> shared(3);
    onRanks(3, [&](int rank) {
        auto group = connect(rank, 3, port);
        sums[rank] = group->sumScalars({1.0, double(rank)});
        std::vector<torch::Tensor> t{torch::full({4}, double(rank + 10))};
        group->broadcast(t, 0);
        received[rank] = t.front();
        shared[rank] = group->share("id", rank == 0 ? "42" : "");
        group->barrier();
    });
    for (int rank = 0; rank < 3; ++rank) {
        ASSERT_TRUE(received[rank].defined()) << "rank " << rank;
        EXPECT_EQ(sums[rank], (std::vector<double>{3.0, 3.0}));
        EXPECT_TRUE(torch::equal(received[rank], torch::full({4}, 10.0)));
        EXPECT_EQ(shared[rank], "42");
    }
}

TEST(DistributedGroupTest, RanksWithOtherSettingsAreNamed)
{
    const int port = engine::freeLoopbackPort();
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank) {
        threads.emplace_back([&, rank] {
            try {
                connect(rank, 2, port, rank == 0 ? R"({"lr":0.1,"steps":5})" : R"({"lr":0.2,"steps":5})");
            } catch (const engine::Error &e) {
                errors[rank] = e.what();
            }
        });
    }
    for (std::thread &t : threads)
        t.join();
    EXPECT_NE(errors[0].find("rank 1 was started with other settings than rank 0: lr = 0.2 there, 0.1 here"), std::string::npos)
        << errors[0];
    EXPECT_NE(errors[1].find("rank 0 was started with other settings than rank 1: lr = 0.1 there, 0.2 here"), std::string::npos)
        << errors[1];
}

TEST(DistributedGroupTest, MissingRanksFailWithinTheTimeout)
{
    const int port = engine::freeLoopbackPort();
    const auto start = std::chrono::steady_clock::now();
    testing_support::expectError([&] { connect(0, 3, port, "{}", std::chrono::milliseconds(1500)); }, engine::ErrorKind::Io,
                                 "only 1 of 3 ranks reached the rendezvous");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(DistributedGroupTest, AnUnreachableStoreIsNamed)
{
    const int port = engine::freeLoopbackPort(); // nobody serves it
    testing_support::expectError([&] { connect(1, 2, port, "{}", std::chrono::milliseconds(1500)); }, engine::ErrorKind::Io,
                                 "could not reach the rendezvous store at 127.0.0.1:" + std::to_string(port));
}

// Ranks 0, 1 and 1 of a world of 2: whichever rank 1 counts itself in second is refused by name, and
// the other two form the group. No start order is needed (a client retries until rank 0 serves), and
// the groups are kept until every thread has returned, so the refused rank always finds rank 0's
// store still served. The timeout only bounds a run that went wrong.
TEST(DistributedGroupTest, TwoProcessesWithOneRankAreRefused)
{
    const int port = engine::freeLoopbackPort();
    std::vector<std::string> errors(3);
    std::vector<std::unique_ptr<DistributedGroup>> groups(3);
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
        threads.emplace_back([&, i] {
            try {
                groups[static_cast<size_t>(i)] = connect(i == 0 ? 0 : 1, 2, port, "{}", std::chrono::seconds(120));
            } catch (const engine::Error &e) {
                errors[static_cast<size_t>(i)] = e.what();
            }
        });
    }
    for (std::thread &t : threads)
        t.join();
    EXPECT_EQ(errors[0], "");
    ASSERT_TRUE(groups[0]);
    const std::string refusal = "two processes were started with rank 1";
    const bool firstRefused = errors[1].find(refusal) != std::string::npos;
    const bool secondRefused = errors[2].find(refusal) != std::string::npos;
    EXPECT_NE(firstRefused, secondRefused) << errors[1] << " | " << errors[2];
    // The other rank 1 joined.
    EXPECT_EQ(errors[firstRefused ? 2 : 1], "");
    EXPECT_TRUE(groups[firstRefused ? 2 : 1]);
    EXPECT_FALSE(groups[firstRefused ? 1 : 2]);
    // Rank 0 serves the store: it leaves last.
    groups[2].reset();
    groups[1].reset();
}

TEST(RankShardTest, ShardsInterleaveAndTogetherAreTheBatch)
{
    const std::vector<int64_t> batch = {9, 3, 7, 1, 5, 0, 8, 2};
    EXPECT_EQ(engine::train::rankShard(batch, 0, 2), (std::vector<int64_t>{9, 7, 5, 8}));
    EXPECT_EQ(engine::train::rankShard(batch, 1, 2), (std::vector<int64_t>{3, 1, 0, 2}));
    EXPECT_EQ(engine::train::rankShard(batch, 2, 4), (std::vector<int64_t>{7, 8}));
    EXPECT_EQ(engine::train::rankShard(batch, 0, 1), batch);
    // Two samplers with one seed (two ranks) draw the same global batches (epochs included): their shards
    // together are, step by step, the batch one process with twice the batch size draws.
    engine::train::BatchSampler s0(10, 3), s1(10, 3), single(10, 3);
    for (int step = 0; step < 7; ++step) {
        std::vector<int64_t> both = engine::train::rankShard(s0.next(4), 0, 2);
        const std::vector<int64_t> b = engine::train::rankShard(s1.next(4), 1, 2);
        both.insert(both.end(), b.begin(), b.end());
        std::vector<int64_t> whole = single.next(4);
        std::sort(both.begin(), both.end());
        std::sort(whole.begin(), whole.end());
        EXPECT_EQ(both, whole) << "step " << step;
    }
}
