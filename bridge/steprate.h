#pragma once
// The time left of a job from its recent step rate: steps per second over the last few seconds of
// the job's own clock (StepMetrics::wallSeconds), so evaluations and checkpoints count and a run
// that speeds up or slows down shows it within a few seconds. Plain C++, no Qt, one thread.

#include <cstdint>
#include <deque>
#include <string>

namespace bridge {

class StepRateMeter {
public:
    /// window: how far back (seconds of job time) the rate looks.
    explicit StepRateMeter(double windowSeconds = 20.0) : m_window(windowSeconds) {}

    /// Forgets everything (a new job).
    void reset() { m_samples.clear(); }
    /// Records that `step` was done at `wallSeconds` since the job started. Samples arrive in step
    /// order; an older or repeated step is ignored.
    void add(int64_t step, double wallSeconds);
    /// Steps per second over the window; 0 until two samples at different times are in.
    double stepsPerSecond() const;
    /// Seconds until `totalSteps` at the recent rate; negative when unknown (no rate yet).
    double etaSeconds(int64_t totalSteps) const;

private:
    struct Sample {
        int64_t step;
        double seconds;
    };
    double m_window;
    std::deque<Sample> m_samples;
};

} // namespace bridge
