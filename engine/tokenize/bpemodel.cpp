#include "engine/tokenize/bpemodel.h"

#include "engine/core/error.h"
#include "engine/tokenize/utf8.h"

#include <queue>

namespace engine::tokenize {
namespace {

constexpr size_t kMaxCachedWords = 200000;
constexpr size_t kMaxCachedWordBytes = 256;

uint64_t pairKey(int left, int right)
{
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

/// One symbol of a word being merged; symbols live in a vector and link to their neighbours.
struct Symbol {
    int id;
    int prev;
    int next;
    bool removed = false;
};

struct QueuedMerge {
    int rank;
    int pos;
    int newId;
    bool operator>(const QueuedMerge &other) const
    {
        return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
};

} // namespace

BpeModel::BpeModel(std::unordered_map<std::string, int> vocab,
                   const std::vector<std::pair<std::string, std::string>> &merges, BpeOptions options,
                   const std::string &where)
    : m_vocab(std::move(vocab)), m_options(std::move(options))
{
    m_merges.reserve(merges.size());
    const std::string &prefix = m_options.continuingSubwordPrefix;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto &[left, right] = merges[rank];
        const int leftId = tokenToId(left);
        const int rightId = tokenToId(right);
        std::string merged = left;
        merged += (!prefix.empty() && right.starts_with(prefix)) ? right.substr(prefix.size()) : right;
        const int newId = tokenToId(merged);
        if (leftId < 0 || rightId < 0 || newId < 0) {
            const std::string &missing = leftId < 0 ? left : rightId < 0 ? right : merged;
            throw invalidInput(where + ": field model.merges[" + std::to_string(rank) + "] (\"" + left + "\", \"" + right +
                               "\") uses \"" + missing + "\", which is not in model.vocab");
        }
        m_merges[pairKey(leftId, rightId)] = Merge{static_cast<int>(rank), newId};
    }

    if (m_options.unkToken) {
        m_unkId = tokenToId(*m_options.unkToken);
        if (m_unkId < 0)
            throw invalidInput(where + ": field model.unk_token \"" + *m_options.unkToken + "\" is not in model.vocab");
    }
    if (m_options.byteFallback) {
        m_byteIds.assign(256, -1);
        static const char hex[] = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const std::string piece = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
            m_byteIds[b] = tokenToId(piece);
        }
    }
}

int BpeModel::tokenToId(std::string_view token) const
{
    const auto it = m_vocab.find(std::string(token));
    return it == m_vocab.end() ? -1 : it->second;
}

void BpeModel::tokenize(std::string_view word, std::vector<int> &out) const
{
    if (word.empty())
        return;
    if (m_options.ignoreMerges) {
        if (const int id = tokenToId(word); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    const bool cacheable = word.size() <= kMaxCachedWordBytes;
    std::string key;
    if (cacheable) {
        key.assign(word);
        std::lock_guard lock(m_cacheMutex);
        if (const auto it = m_cache.find(key); it != m_cache.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int> ids = mergeWord(word);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard lock(m_cacheMutex);
        if (m_cache.size() < kMaxCachedWords)
            m_cache.emplace(std::move(key), std::move(ids));
    }
}

std::vector<int> BpeModel::mergeWord(std::string_view word) const
{
    // Initial symbols: one per character (with prefix/suffix), else byte fallback, else unk.
    std::vector<int> initial;
    initial.reserve(word.size());
    int pendingUnk = -1; // an unk not yet added (fuse_unk extends it)
    size_t pos = 0;
    std::string piece;
    while (pos < word.size()) {
        const size_t start = pos;
        utf8::next(word, pos);
        piece.assign(word.substr(start, pos - start));
        if (start > 0 && !m_options.continuingSubwordPrefix.empty())
            piece.insert(0, m_options.continuingSubwordPrefix);
        if (pos >= word.size() && !m_options.endOfWordSuffix.empty())
            piece += m_options.endOfWordSuffix;

        if (const int id = tokenToId(piece); id >= 0) {
            if (pendingUnk >= 0) {
                initial.push_back(pendingUnk);
                pendingUnk = -1;
            }
            initial.push_back(id);
            continue;
        }
        if (m_options.byteFallback) {
            bool all = true;
            for (const char c : piece)
                all = all && m_byteIds[static_cast<unsigned char>(c)] >= 0;
            if (all) {
                // As in HF tokenizers, a pending unk is not flushed before the bytes.
                for (const char c : piece)
                    initial.push_back(m_byteIds[static_cast<unsigned char>(c)]);
                continue;
            }
        }
        if (m_unkId >= 0) {
            if (pendingUnk >= 0 && !m_options.fuseUnk)
                initial.push_back(pendingUnk);
            pendingUnk = m_unkId;
        }
        // Without an unk token the character is dropped, as HF tokenizers does.
    }
    if (pendingUnk >= 0)
        initial.push_back(pendingUnk);
    if (initial.size() < 2)
        return initial;

    std::vector<Symbol> symbols(initial.size());
    for (size_t i = 0; i < initial.size(); ++i)
        symbols[i] = Symbol{initial[i], static_cast<int>(i) - 1,
                            i + 1 < initial.size() ? static_cast<int>(i + 1) : -1};

    std::priority_queue<QueuedMerge, std::vector<QueuedMerge>, std::greater<>> queue;
    auto queuePair = [&](int left) {
        const int right = symbols[left].next;
        if (right < 0)
            return;
        const auto it = m_merges.find(pairKey(symbols[left].id, symbols[right].id));
        if (it != m_merges.end())
            queue.push(QueuedMerge{it->second.rank, left, it->second.newId});
    };
    for (size_t i = 0; i + 1 < symbols.size(); ++i)
        queuePair(static_cast<int>(i));

    while (!queue.empty()) {
        const QueuedMerge top = queue.top();
        queue.pop();
        Symbol &left = symbols[top.pos];
        if (left.removed || left.next < 0)
            continue;
        const int rightPos = left.next;
        const auto it = m_merges.find(pairKey(left.id, symbols[rightPos].id));
        if (it == m_merges.end() || it->second.newId != top.newId)
            continue;
        left.id = top.newId;
        symbols[rightPos].removed = true;
        left.next = symbols[rightPos].next;
        if (left.next >= 0)
            symbols[left.next].prev = top.pos;
        if (left.prev >= 0)
            queuePair(left.prev);
        queuePair(top.pos);
    }

    std::vector<int> ids;
    for (int i = 0; i >= 0; i = symbols[i].next)
        ids.push_back(symbols[i].id);
    return ids;
}

} // namespace engine::tokenize
