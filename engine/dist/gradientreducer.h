#pragma once
// Gradients summed over the ranks the way PyTorch's DDP does it: the parameters in buckets of about
// 25 MB (the first one at most 1 MB, so that communication starts early), in reverse order (gradients arrive
// roughly from the last layer back), and a hook on each parameter's gradient accumulator that
// starts a bucket's allreduce as soon as its last gradient is in, while backward goes on with the
// layers below. Buckets start in the same order on every rank, as Gloo needs.
//
//   GradientReducer reducer(group, trainableParameters);
//   for each micro-batch k: reducer.prepare(k == last); loss.backward();
//   reducer.finish();           // every .grad now holds the sum over the ranks

#include "engine/dist/distributedgroup.h"

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace engine::dist {

class GradientReducer {
public:
    static constexpr int64_t kDefaultBucketBytes = 25 * 1024 * 1024;
    static constexpr int64_t kFirstBucketBytes = 1024 * 1024;

    /// `parameters`: exactly the trainable ones (with LoRA only the adapters travel). `overlap` false
    /// sums every bucket after backward instead (to measure what overlapping hides).
    GradientReducer(DistributedGroup &group, std::vector<torch::Tensor> parameters,
                    int64_t bucketBytes = kDefaultBucketBytes, bool overlap = true);
    ~GradientReducer();
    GradientReducer(const GradientReducer &) = delete;
    GradientReducer &operator=(const GradientReducer &) = delete;

    /// Before each backward of a step: `synchronize` on the last micro-batch only (as DDP's no_sync():
    /// the others just accumulate locally).
    void prepare(bool synchronize);
    /// After the last backward: starts the buckets still waiting (a parameter that got no gradient
    /// here counts as zero), waits for all, and writes the sums into the parameters' gradients. A
    /// parameter that got no gradient on any rank keeps none (the optimizer skips it, as one process
    /// would). Throws Error(Io) when a peer failed.
    void finish();

    struct Timing {
        double backwardLaunched = 0;  ///< share of the buckets started during backward (0..1)
        double waitSeconds = 0;       ///< time finish() spent waiting: communication not hidden
    };
    /// The last finish().
    Timing lastTiming() const;
    int64_t bucketCount() const;
    /// Bytes of one step's gradients that travel (per rank).
    int64_t bytesPerStep() const;

private:
    struct Impl;
    std::shared_ptr<Impl> m_impl; ///< shared with the hooks (weakly): a hook still running on a device's
                                  ///< autograd thread after an error never touches a destroyed reducer
};

} // namespace engine::dist
