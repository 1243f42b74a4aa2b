#pragma once
// Helpers shared by the ui tests.

#include <QString>

namespace uitest {

/// A folder that lives for the whole test program (below the isolated XDG root).
QString scratchDir();
/// The first ~bytes of the bundled demo corpus, cut at a line end, written once to scratchDir().
QString smallCorpus(qint64 bytes = 100 * 1024);
/// A model folder whose training loss is NaN at the first step: a tiny LLaMA (vocab 32, width 8, one
/// layer) with one NaN in its final norm's weight, written without torch (config.json and
/// model.safetensors by hand), and beside it ids.jsonl, pre-tokenized data for it (no tokenizer).
/// Returns the folder.
QString nanModelFolder();

} // namespace uitest
