#include "engine/dist/gradientreducer.h"

#include "engine/core/error.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <tuple>

namespace engine::dist {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Bucket {
    std::vector<size_t> parameters; ///< indices into the reducer's parameters
    std::vector<int64_t> offsets;   ///< each one's first element in `flat`
    torch::Tensor flat;             ///< the bucket's gradients, back to back, summed in place
    size_t waiting = 0;             ///< gradients of this backward not yet in
    PendingCollective work;
};

} // namespace

struct GradientReducer::Impl {
    DistributedGroup &group;
    std::vector<torch::Tensor> parameters;
    bool overlap = true;
    std::vector<Bucket> buckets;
    std::vector<size_t> bucketOf;
    std::vector<bool> ready;
    std::vector<std::shared_ptr<torch::autograd::Node>> accumulators; ///< kept alive: a parameter holds them weakly
    std::vector<uintptr_t> hookKeys;
    std::mutex mutex; // hooks of a model spread over devices run on the devices' autograd threads
    bool synchronize = false;
    size_t nextLaunch = 0;
    size_t launchedInBackward = 0;
    Timing timing;

    explicit Impl(DistributedGroup &g) : group(g) {}

    void launch(Bucket &bucket)
    {
        for (size_t k = 0; k < bucket.parameters.size(); ++k) {
            const torch::Tensor &parameter = parameters[bucket.parameters[k]];
            torch::Tensor slot = bucket.flat.narrow(0, bucket.offsets[k], parameter.numel());
            const torch::Tensor &grad = parameter.grad();
            if (grad.defined())
                slot.copy_(grad.reshape({-1}));
            else
                slot.zero_();
        }
        bucket.work = group.allreduceSumAsync(bucket.flat);
    }

    /// Starts the buckets that are complete, in bucket order (the same on every rank).
    void launchReady(bool inBackward)
    {
        while (nextLaunch < buckets.size() && buckets[nextLaunch].waiting == 0) {
            launch(buckets[nextLaunch++]);
            if (inBackward)
                ++launchedInBackward;
        }
    }

    void markReady(size_t index)
    {
        const std::lock_guard lock(mutex);
        if (!synchronize)
            return;
        if (ready[index]) {
            throw Error(ErrorKind::Internal, "a parameter got its gradient twice in one backward; the gradient sum over the "
                                             "ranks would miss the second part");
        }
        ready[index] = true;
        Bucket &bucket = buckets[bucketOf[index]];
        --bucket.waiting;
        if (overlap && bucket.waiting == 0)
            launchReady(/*inBackward=*/true);
    }
};

namespace {

/// Runs after a parameter's gradient accumulator has added this backward's gradient to .grad.
class ReadyHook : public torch::autograd::FunctionPostHook {
public:
    ReadyHook(std::function<void()> onReady) : m_onReady(std::move(onReady)) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list &outputs,
                                              const torch::autograd::variable_list &) override
    {
        m_onReady();
        return outputs;
    }

private:
    std::function<void()> m_onReady;
};

} // namespace

GradientReducer::GradientReducer(DistributedGroup &group, std::vector<torch::Tensor> parameters, int64_t bucketBytes, bool overlap)
    : m_impl(std::make_shared<Impl>(group))
{
    Impl &d = *m_impl;
    d.parameters = std::move(parameters);
    d.overlap = overlap;
    d.bucketOf.assign(d.parameters.size(), 0);
    d.ready.assign(d.parameters.size(), false);

    // Reverse order, one open bucket per (device, dtype); the first bucket of each is small.
    struct Open {
        size_t bucket = 0;
        int64_t bytes = 0;
        int64_t limit = 0;
        bool any = false;
    };
    const int64_t cap = std::max(bucketBytes, int64_t(1));
    std::map<std::tuple<std::string, int>, Open> open;
    for (size_t i = d.parameters.size(); i-- > 0;) {
        const torch::Tensor &p = d.parameters[i];
        TORCH_CHECK(p.requires_grad(), "GradientReducer: a parameter that is not trainable");
        Open &slot = open[{p.device().str(), static_cast<int>(p.scalar_type())}];
        if (!slot.any || slot.bytes >= slot.limit) {
            slot.limit = slot.any ? cap : std::min(cap, kFirstBucketBytes);
            slot.bucket = d.buckets.size();
            slot.bytes = 0;
            slot.any = true;
            d.buckets.emplace_back();
        }
        Bucket &bucket = d.buckets[slot.bucket];
        bucket.offsets.push_back(bucket.parameters.empty() ? 0 : bucket.offsets.back() + d.parameters[bucket.parameters.back()].numel());
        bucket.parameters.push_back(i);
        d.bucketOf[i] = slot.bucket;
        slot.bytes += p.numel() * static_cast<int64_t>(p.element_size());
    }
    for (Bucket &bucket : d.buckets) {
        const torch::Tensor &last = d.parameters[bucket.parameters.back()];
        const int64_t numel = bucket.offsets.back() + last.numel();
        bucket.flat = torch::zeros({numel}, last.options().requires_grad(false));
    }
    for (size_t i = 0; i < d.parameters.size(); ++i) {
        std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(d.parameters[i]);
        TORCH_CHECK(accumulator, "GradientReducer: a parameter without a gradient accumulator (not a leaf)");
        const std::weak_ptr<Impl> weak = m_impl;
        d.hookKeys.push_back(accumulator->add_post_hook(std::make_unique<ReadyHook>([weak, i] {
            if (const std::shared_ptr<Impl> impl = weak.lock())
                impl->markReady(i);
        })));
        d.accumulators.push_back(std::move(accumulator));
    }
}

GradientReducer::~GradientReducer()
{
    for (size_t i = 0; i < m_impl->accumulators.size(); ++i)
        m_impl->accumulators[i]->del_post_hook(m_impl->hookKeys[i]);
}

void GradientReducer::prepare(bool synchronize)
{
    Impl &d = *m_impl;
    const std::lock_guard lock(d.mutex);
    d.synchronize = synchronize;
    std::fill(d.ready.begin(), d.ready.end(), false);
    for (Bucket &bucket : d.buckets)
        bucket.waiting = bucket.parameters.size();
    d.nextLaunch = 0;
    d.launchedInBackward = 0;
}

void GradientReducer::finish()
{
    Impl &d = *m_impl;
    const std::lock_guard lock(d.mutex);
    if (!d.synchronize)
        throw Error(ErrorKind::Internal, "GradientReducer::finish without prepare(true) before the last backward");
    const size_t inBackward = d.launchedInBackward;
    for (Bucket &bucket : d.buckets) // a gradient that never came (an unused parameter) counts as zero
        bucket.waiting = 0;
    d.launchReady(/*inBackward=*/false);
    // Which parameters got a gradient on some rank (DDP's globally unused parameters keep none).
    std::vector<float> hasGradient(d.parameters.size());
    for (size_t i = 0; i < d.parameters.size(); ++i)
        hasGradient[i] = d.parameters[i].grad().defined() ? 1.0f : 0.0f;
    torch::Tensor used = torch::tensor(hasGradient, torch::kFloat32);
    PendingCollective usedSum = d.group.allreduceSumAsync(used);
    double waited = 0;
    const auto usedStart = Clock::now();
    usedSum.wait();
    waited += secondsSince(usedStart);
    const float *usedAnywhere = used.data_ptr<float>();
    for (Bucket &bucket : d.buckets) {
        const auto waitStart = Clock::now();
        bucket.work.wait();
        waited += secondsSince(waitStart);
        for (size_t k = 0; k < bucket.parameters.size(); ++k) {
            if (usedAnywhere[bucket.parameters[k]] == 0.0f)
                continue;
            torch::Tensor &parameter = d.parameters[bucket.parameters[k]];
            const torch::Tensor sum = bucket.flat.narrow(0, bucket.offsets[k], parameter.numel()).view(parameter.sizes());
            if (!parameter.grad().defined())
                parameter.mutable_grad() = torch::zeros_like(parameter);
            parameter.mutable_grad().copy_(sum);
        }
    }
    d.synchronize = false;
    d.timing.backwardLaunched = d.buckets.empty() ? 0.0 : double(inBackward) / double(d.buckets.size());
    d.timing.waitSeconds = waited;
}

GradientReducer::Timing GradientReducer::lastTiming() const
{
    return m_impl->timing;
}

int64_t GradientReducer::bucketCount() const
{
    return static_cast<int64_t>(m_impl->buckets.size());
}

int64_t GradientReducer::bytesPerStep() const
{
    int64_t bytes = 0;
    for (const Bucket &bucket : m_impl->buckets)
        bytes += bucket.flat.numel() * static_cast<int64_t>(bucket.flat.element_size());
    return bytes;
}

} // namespace engine::dist
