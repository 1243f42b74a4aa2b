#pragma once
// Helpers shared by the ui tests.

#include <QImage>
#include <QString>

#include <functional>

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

/// Two drawings of one line agree to within a pixel: every pixel `lit` in either image has a lit pixel
/// of the other at most one row and one column away (a failed EXPECT names each pixel that has none).
/// Returns how many pixels of `ours` are lit, for the caller to check that a line was drawn at all.
int expectSameLineToWithinAPixel(const QImage &ours, const QImage &reference, const std::function<bool(QRgb)> &lit);

} // namespace uitest
