#pragma once
// Which training sequences each batch takes: a seeded shuffle per epoch, drawn in order, reshuffled when
// the epoch runs out. Its position is two numbers (shuffles done, cursor), so a checkpoint stores it and a
// resume replays the shuffles to land on the same next batch.

#include <cstdint>
#include <random>
#include <vector>

namespace engine::train {

class BatchSampler {
public:
    /// Sequences 0 .. count-1; nothing is drawn until next().
    BatchSampler(int64_t count, uint64_t seed);

    /// The next `size` sequence indices.
    std::vector<int64_t> next(int64_t size);

    /// Completed shuffles (the epoch being drawn is shuffles() - 1) and the position in it.
    int64_t shuffles() const { return m_shuffles; }
    int64_t cursor() const { return m_cursor; }
    /// Goes to a position that shuffles() / cursor() reported, from the same count and seed.
    void seek(int64_t shuffles, int64_t cursor);

private:
    void shuffle();

    uint64_t m_seed;
    std::mt19937_64 m_random;
    std::vector<int64_t> m_order;
    int64_t m_shuffles = 0;
    int64_t m_cursor = 0;
};

/// Rank `rank`'s part of a batch drawn for all `worldSize` ranks: every worldSize-th index from its
/// own position, as PyTorch's DistributedSampler interleaves its permutation. The shards of all ranks
/// together are the batch, so N ranks with batch B train step by step on what one process with batch
/// N * B does.
std::vector<int64_t> rankShard(const std::vector<int64_t> &batch, int rank, int worldSize);

} // namespace engine::train
