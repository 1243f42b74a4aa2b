#include "engine/train/datasetpreview.h"

namespace engine::train {

std::string describePreview(const DatasetPreview &p, const TrainingParams &params)
{
    std::string out;
    auto line = [&](const std::string &label, const std::string &text) { out += label + text + "\n"; };
    line("data:       ", (params.dataPath.empty() ? std::string("the demo corpus") : params.dataPath) + " (" + p.format + ")");
    line("tokenizer:  ", p.tokenizer.empty() ? std::string("(none: pre-tokenized)") : p.tokenizer);
    line("examples:   ", std::to_string(p.examples) + ", " + std::to_string(p.tokens) + " tokens");
    line("rows:       ", std::to_string(p.rows) + " of " + std::to_string(params.sequenceLength) + " tokens for training, "
                            + std::to_string(p.evalRows) + " for eval; " + std::to_string(p.labelledTokens)
                            + " targets in the loss");
    line("truncated:  ", std::to_string(p.truncated) + " examples longer than the sequence length");
    if (p.nothingToLearn > 0)
        line("dropped:    ", std::to_string(p.nothingToLearn) + " examples with nothing to learn");
    if (p.skippedBadLines > 0)
        line("skipped:    ", std::to_string(p.skippedBadLines) + " malformed lines");
    for (size_t i = 0; i < p.samples.size(); ++i) {
        const auto &s = p.samples[i];
        out += "\n--- row " + std::to_string(i + 1) + ": " + std::to_string(s.inputTokens) + " tokens in, "
            + std::to_string(s.learnedTokens) + " learned\n" + s.input + "\n--- learned:\n" + s.learned + "\n";
    }
    return out;
}

} // namespace engine::train
