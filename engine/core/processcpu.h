#pragma once
// How busy this process keeps the CPU (all its threads together), for the system metrics of training
// runs. Linux/POSIX clocks; torch-free.
//
//   CpuUsageMeter meter;            // starts now
//   ... a training step ...
//   double percent = meter.sample(); // since the last sample: 100 = one core busy the whole time

namespace engine {

/// CPU time this process has used so far (user + system, every thread), in seconds.
double processCpuSeconds();

class CpuUsageMeter {
public:
    CpuUsageMeter();
    /// The process's CPU time over the wall time since the previous sample (or construction), in
    /// percent of one core: 250 means two and a half cores busy on average. 0 when no wall time passed.
    double sample();

private:
    double m_cpu = 0;
    double m_wall = 0;
};

} // namespace engine
