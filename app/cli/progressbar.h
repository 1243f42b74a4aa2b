#pragma once

#include "engine/train/stepmetrics.h"

#include <cstdio>
#include <string>

namespace app::cli {

/// A one-line progress bar on a terminal (step, loss, tokens/s, ETA), or a plain line every few
/// percent when the stream is not a terminal (CI logs, pipes).
class ProgressBar {
public:
    explicit ProgressBar(std::FILE *stream);
    void update(const engine::train::StepMetrics &metrics);
    /// Prints a log line without breaking the bar.
    void printLine(const std::string &line);
    /// Ends the bar's line.
    void finish();

private:
    std::FILE *m_stream;
    bool m_terminal;
    bool m_barShown = false;
    int64_t m_lastPrintedStep = 0;
};

} // namespace app::cli
