#include "engine/dist/distributedgroup.h"

#include "engine/core/error.h"
#include "engine/core/torcherror.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <thread>

namespace engine::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds(std::chrono::milliseconds timeout)
{
    const double s = static_cast<double>(timeout.count()) / 1000.0;
    char text[32];
    std::snprintf(text, sizeof text, "%g s", s);
    return text;
}

/// The first line of an exception's text, without c10's backtrace.
std::string shortMessage(const std::exception &e)
{
    std::string text = torchErrorText(e);
    if (const size_t end = text.find('\n'); end != std::string::npos)
        text.resize(end);
    return text;
}

bool contains(const std::string &text, const char *part)
{
    return text.find(part) != std::string::npos;
}

bool isLoopback(const std::string &host)
{
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string hostPort(const DistributedEnv &env)
{
    return env.masterAddr + ":" + std::to_string(env.masterPort);
}

/// The classic TCPStore server: libtorch 2.4+ asks for its libuv one by default, which Debian 13's
/// libtorch 2.6 is built without ("use_libuv was requested but PyTorch was build without libuv
/// support"); 1.13 has only the classic one (and no such field: the member is tested, not the version).
template <typename StoreOptions>
void useClassicServer(StoreOptions &options)
{
    if constexpr (requires { options.useLibUV; })
        options.useLibUV = false;
}

c10::intrusive_ptr<c10d::Store> openStore(const DistributedEnv &env, std::chrono::milliseconds timeout)
{
    c10d::TCPStoreOptions options;
    useClassicServer(options);
    options.port = static_cast<std::uint16_t>(env.masterPort);
    options.isServer = env.rank == 0 && !env.agentStore;
    options.waitWorkers = false; // arrivals are counted below, with a message that says who is missing
    options.timeout = timeout;
    c10::intrusive_ptr<c10d::Store> store;
    try {
        store = c10::make_intrusive<c10d::TCPStore>(env.masterAddr, options);
    } catch (const std::exception &e) {
        const std::string detail = shortMessage(e);
        if (options.isServer && (contains(detail, "in use") || contains(detail, "EADDRINUSE"))) {
            throw ioError("MASTER_PORT " + std::to_string(env.masterPort) + " is in use on this machine (another job, or a "
                          "rank of an earlier one still running): start the job with another MASTER_PORT (" + detail + ")");
        }
        if (options.isServer)
            throw ioError("rank 0 could not serve the rendezvous store on port " + std::to_string(env.masterPort) + ": " + detail);
        throw ioError("could not reach the rendezvous store at " + hostPort(env) + " within " + seconds(timeout)
                      + ": is rank 0 running, and are MASTER_ADDR and MASTER_PORT the ones it was given? (" + detail + ")");
    }
    if (env.agentStore) // as torch.distributed: under torchrun's agent store, each restart has its own keys
        store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restartCount), store);
    return c10::make_intrusive<c10d::PrefixStore>("tunebench", store);
}

std::string storeText(c10d::Store &store, const std::string &key)
{
    const std::vector<uint8_t> bytes = store.get(key);
    return std::string(bytes.begin(), bytes.end());
}

void storeSet(c10d::Store &store, const std::string &key, const std::string &value)
{
    store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

/// Polls the counter `key` until it reaches `count`; false when `deadline` passes first.
bool awaitCount(c10d::Store &store, const std::string &key, int64_t count, Clock::time_point deadline, int64_t *seen = nullptr)
{
    for (;;) {
        const int64_t now = store.add(key, 0);
        if (seen)
            *seen = now;
        if (now >= count)
            return true;
        if (Clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

/// Every rank counts itself in and waits until WORLD_SIZE distinct ranks have.
void awaitRanks(c10d::Store &store, const DistributedEnv &env, std::chrono::milliseconds timeout)
{
    if (store.add("rank/" + std::to_string(env.rank), 1) > 1) {
        throw invalidInput("two processes were started with rank " + std::to_string(env.rank) + " (RANK / SLURM_PROCID): "
                           "each rank of the job needs its own");
    }
    store.add("arrived", 1);
    int64_t arrived = 0;
    const bool all = awaitCount(store, "arrived", env.worldSize, Clock::now() + timeout, &arrived);
    if (arrived > env.worldSize) {
        throw invalidInput(std::to_string(arrived) + " processes joined a job of WORLD_SIZE=" + std::to_string(env.worldSize)
                           + " at " + hostPort(env) + ": start as many ranks as the world size says");
    }
    if (!all) {
        throw ioError("only " + std::to_string(arrived) + " of " + std::to_string(env.worldSize) + " ranks reached the "
                      "rendezvous at " + hostPort(env) + " within " + seconds(timeout) + ": start all "
                      + std::to_string(env.worldSize) + " ranks (WORLD_SIZE), or set WORLD_SIZE to the ranks started");
    }
}

/// Each rank posts its settings and reads everyone's; any rank whose settings differ from this one's
/// is named. Nobody leaves before all have read (rank 0 serves the store: its exit would cut the
/// others off with "connection reset" instead of this message).
void compareSettings(c10d::Store &store, const DistributedEnv &env, const std::string &settings,
                     std::chrono::milliseconds timeout)
{
    storeSet(store, "settings/" + std::to_string(env.rank), settings);
    const size_t mine = std::hash<std::string>{}(settings);
    std::string problem;
    for (int other = 0; other < env.worldSize && problem.empty(); ++other) {
        if (other == env.rank)
            continue;
        const std::string theirs = storeText(store, "settings/" + std::to_string(other));
        if (std::hash<std::string>{}(theirs) == mine && theirs == settings)
            continue;
        std::string difference = settingsDifference(settings, theirs);
        if (difference.empty())
            difference = "the settings differ";
        problem = "rank " + std::to_string(other) + " was started with other settings than rank " + std::to_string(env.rank)
            + ": " + difference + " (start every rank with the same command)";
    }
    store.add("settings-read", 1);
    const auto deadline = Clock::now() + timeout;
    awaitCount(store, "settings-read", env.worldSize, deadline);
    if (problem.empty())
        return;
    // Failing: rank 0, whose store the others still use, goes last.
    if (env.rank == 0)
        awaitCount(store, "settings-left", env.worldSize - 1, deadline);
    else
        store.add("settings-left", 1);
    throw invalidInput(problem);
}

std::shared_ptr<::gloo::transport::Device> glooDevice(const DistributedEnv &env)
{
    if (const char *interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
        return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    if (isLoopback(env.masterAddr))
        return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    return c10d::ProcessGroupGloo::createDefaultDevice();
}

} // namespace

struct PendingCollective::State {
    c10::intrusive_ptr<c10d::Work> work;
    std::chrono::milliseconds timeout;
};

void PendingCollective::wait()
{
    if (!m_state)
        return;
    const std::shared_ptr<State> state = std::move(m_state);
    try {
        state->work->wait();
    } catch (const std::exception &e) {
        throw ioError(collectiveFailure("summing gradients over the ranks", shortMessage(e), state->timeout));
    }
}

struct DistributedGroup::Impl {
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
};

std::string collectiveFailure(const std::string &what, const std::string &detail, std::chrono::milliseconds timeout)
{
    const bool timedOut = contains(detail, "imed out") || contains(detail, "imeout");
    return what + " failed: " + (timedOut ? "another rank did not answer within " + seconds(timeout) + " (stuck or too slow; "
                                                "--dist-timeout sets the limit)"
                                          : std::string("another rank stopped (its output says why)"))
        + " [" + detail + "]";
}

std::string settingsDifference(const std::string &mineJson, const std::string &theirsJson)
{
    const nlohmann::json mine = nlohmann::json::parse(mineJson, nullptr, false);
    const nlohmann::json theirs = nlohmann::json::parse(theirsJson, nullptr, false);
    if (!mine.is_object() || !theirs.is_object())
        return mineJson == theirsJson ? std::string() : "the settings differ";
    for (const auto &[key, value] : mine.items()) {
        const auto it = theirs.find(key);
        if (it == theirs.end())
            return key + " is not set there, " + value.dump() + " here";
        if (*it != value)
            return key + " = " + it->dump() + " there, " + value.dump() + " here";
    }
    for (const auto &[key, value] : theirs.items()) {
        if (!mine.contains(key))
            return key + " = " + value.dump() + " there, not set here";
    }
    return {};
}

DistributedGroup::DistributedGroup(const DistributedEnv &env, std::chrono::milliseconds timeout, std::unique_ptr<Impl> impl)
    : m_env(env), m_timeout(timeout), m_impl(std::move(impl))
{
}

DistributedGroup::~DistributedGroup() = default;

std::unique_ptr<DistributedGroup> DistributedGroup::connect(const DistributedEnv &env, const Options &options)
{
    if (!env.distributed())
        throw Error(ErrorKind::Internal, "DistributedGroup::connect needs a world size above 1");
    auto impl = std::make_unique<Impl>();
    impl->store = openStore(env, options.timeout);
    try {
        awaitRanks(*impl->store, env, options.timeout);
        compareSettings(*impl->store, env, options.settingsJson, options.timeout);
    } catch (const Error &) {
        throw;
    } catch (const std::exception &e) {
        throw ioError("the rendezvous at " + hostPort(env) + " failed: " + shortMessage(e));
    }
    try {
        auto glooOptions = c10d::ProcessGroupGloo::Options::create(options.timeout);
        glooOptions->devices.push_back(glooDevice(env));
        glooOptions->threads = 2;
        impl->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
            c10::make_intrusive<c10d::PrefixStore>("gloo", impl->store), env.rank, env.worldSize, glooOptions);
    } catch (const std::exception &e) {
        throw ioError("connecting the ranks' process group (Gloo) failed: " + shortMessage(e));
    }
    return std::unique_ptr<DistributedGroup>(new DistributedGroup(env, options.timeout, std::move(impl)));
}

void DistributedGroup::allreduceSum(std::vector<torch::Tensor> &tensors)
{
    for (torch::Tensor &tensor : tensors) {
        PendingCollective pending = allreduceSumAsync(tensor);
        pending.wait();
    }
}

PendingCollective DistributedGroup::allreduceSumAsync(torch::Tensor flat)
{
    PendingCollective pending;
    std::vector<torch::Tensor> tensors{std::move(flat)};
    try {
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        pending.m_state = std::make_shared<PendingCollective::State>(
            PendingCollective::State{m_impl->gloo->allreduce(tensors, options), m_timeout});
    } catch (const std::exception &e) {
        throw ioError(collectiveFailure("summing over the ranks", shortMessage(e), m_timeout));
    }
    return pending;
}

std::vector<double> DistributedGroup::sumScalars(const std::vector<double> &values)
{
    std::vector<torch::Tensor> tensors{torch::tensor(values, torch::kFloat64)};
    allreduceSum(tensors);
    const torch::Tensor summed = tensors.front();
    return std::vector<double>(summed.data_ptr<double>(), summed.data_ptr<double>() + summed.numel());
}

void DistributedGroup::broadcast(std::vector<torch::Tensor> &tensors, int root)
{
    try {
        c10d::BroadcastOptions options;
        options.rootRank = root;
        for (torch::Tensor &tensor : tensors) {
            std::vector<torch::Tensor> one{tensor};
            m_impl->gloo->broadcast(one, options)->wait();
        }
    } catch (const std::exception &e) {
        throw ioError(collectiveFailure("sharing rank " + std::to_string(root) + "'s weights", shortMessage(e), m_timeout));
    }
}

void DistributedGroup::barrier(std::optional<std::chrono::milliseconds> timeout)
{
    const std::chrono::milliseconds limit = timeout.value_or(m_timeout);
    try {
        c10d::BarrierOptions options;
        options.timeout = limit;
        m_impl->gloo->barrier(options)->wait();
    } catch (const std::exception &e) {
        throw ioError(collectiveFailure("waiting for the other ranks", shortMessage(e), limit));
    }
}

std::string DistributedGroup::share(const std::string &key, const std::string &valueOnRank0)
{
    try {
        if (primary()) {
            storeSet(*m_impl->store, "share/" + key, valueOnRank0);
            return valueOnRank0;
        }
        return storeText(*m_impl->store, "share/" + key);
    } catch (const std::exception &e) {
        throw ioError(collectiveFailure("reading " + key + " from rank 0", shortMessage(e), m_timeout));
    }
}

} // namespace engine::dist
