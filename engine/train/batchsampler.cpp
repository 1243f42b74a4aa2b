#include "engine/train/batchsampler.h"

#include "engine/core/error.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace engine::train {

BatchSampler::BatchSampler(int64_t count, uint64_t seed)
    : m_seed(seed)
    , m_random(seed)
    , m_order(static_cast<size_t>(count))
{
    std::iota(m_order.begin(), m_order.end(), 0);
    m_cursor = count; // the first draw shuffles
}

void BatchSampler::shuffle()
{
    std::shuffle(m_order.begin(), m_order.end(), m_random);
    ++m_shuffles;
    m_cursor = 0;
}

std::vector<int64_t> BatchSampler::next(int64_t size)
{
    std::vector<int64_t> rows(static_cast<size_t>(size));
    for (auto &row : rows) {
        if (m_cursor >= static_cast<int64_t>(m_order.size()))
            shuffle();
        row = m_order[static_cast<size_t>(m_cursor++)];
    }
    return rows;
}

void BatchSampler::seek(int64_t shuffles, int64_t cursor)
{
    const auto count = static_cast<int64_t>(m_order.size());
    if (shuffles < 0 || cursor < 0 || cursor > count || (shuffles == 0 && cursor != count))
        throw invalidInput("data position (" + std::to_string(shuffles) + ", " + std::to_string(cursor)
                           + ") does not fit " + std::to_string(count) + " sequences");
    m_random.seed(m_seed);
    std::iota(m_order.begin(), m_order.end(), 0);
    m_shuffles = 0;
    m_cursor = count;
    for (int64_t i = 0; i < shuffles; ++i)
        shuffle();
    m_cursor = cursor;
}

std::vector<int64_t> rankShard(const std::vector<int64_t> &batch, int rank, int worldSize)
{
    std::vector<int64_t> shard;
    shard.reserve(batch.size() / static_cast<size_t>(std::max(worldSize, 1)) + 1);
    for (size_t i = static_cast<size_t>(rank); i < batch.size(); i += static_cast<size_t>(worldSize))
        shard.push_back(batch[i]);
    return shard;
}

} // namespace engine::train
