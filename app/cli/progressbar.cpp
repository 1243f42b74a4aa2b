#include "app/cli/progressbar.h"

#include "engine/core/format.h"

#include <algorithm>
#include <cmath>

#include <unistd.h>

namespace app::cli {

ProgressBar::ProgressBar(std::FILE *stream) : m_stream(stream), m_terminal(::isatty(::fileno(stream)) == 1) {}

void ProgressBar::update(const engine::train::StepMetrics &m)
{
    const double fraction = m.totalSteps > 0 ? static_cast<double>(m.step) / static_cast<double>(m.totalSteps) : 0;
    char stats[160];
    std::snprintf(stats, sizeof stats, "step %lld/%lld  loss %.4f  %.0f tok/s  ETA %s",
                  static_cast<long long>(m.step), static_cast<long long>(m.totalSteps), m.loss, m.tokensPerSecond,
                  engine::formatDuration(m.etaSeconds).c_str());
    if (m_terminal) {
        constexpr int width = 28;
        const int filled = std::clamp(static_cast<int>(fraction * width), 0, width);
        std::string bar(static_cast<size_t>(filled), '#');
        bar.append(static_cast<size_t>(width - filled), '.');
        std::fprintf(m_stream, "\r[%s] %3.0f%%  %s\033[K", bar.c_str(), fraction * 100, stats);
        std::fflush(m_stream);
        m_barShown = true;
        return;
    }
    // Not a terminal: about twenty lines per run, plus the first and last step.
    const int64_t every = std::max<int64_t>(1, m.totalSteps / 20);
    if (m.step == 1 || m.step == m.totalSteps || m.step - m_lastPrintedStep >= every) {
        std::fprintf(m_stream, "%3.0f%%  %s\n", fraction * 100, stats);
        std::fflush(m_stream);
        m_lastPrintedStep = m.step;
    }
}

void ProgressBar::printLine(const std::string &line)
{
    if (m_terminal && m_barShown)
        std::fprintf(m_stream, "\r\033[K");
    std::fprintf(m_stream, "%s\n", line.c_str());
    std::fflush(m_stream);
    m_barShown = false;
}

void ProgressBar::finish()
{
    if (m_terminal && m_barShown)
        std::fprintf(m_stream, "\n");
    m_barShown = false;
    std::fflush(m_stream);
}

} // namespace app::cli
