#pragma once
// The engine's torch half as the GUI reaches it: the jobs the engine thread runs. They live in a
// module, libtunebench_engine.so (enginemodule.cpp), that the GUI loads with dlopen on the engine
// thread after its window is up, so that the window does not wait for libtorch's ~300 shared
// libraries (issue 10: window in under 500 ms). Everything torch-free (settings, plans, the run store,
// the scenario catalog) the GUI links directly. Torch-free and Qt-free.
//
// How to use (on the engine thread):
//   bridge::EngineJobs &jobs = bridge::engineJobs();          // loads the module the first time; throws if it cannot
//   TrainingOutcome outcome = jobs.train(params, control, observer);
//
// The module and the program are built from the same sources by the same compiler in one build, so
// C++ types and exceptions cross the boundary as they would within one library.

#include "engine/core/blascheck.h"
#include "engine/core/jobcontrol.h"
#include "engine/infer/inference.h"
#include "engine/inspect/inspector.h"
#include "engine/train/trainer.h"

#include <filesystem>
#include <functional>
#include <string>

namespace bridge {

/// What the About dialog shows of the engine: the libtorch, its threads and the BLAS in use (only the
/// process that has libtorch loaded can tell which BLAS kernels run).
struct EngineFacts {
    std::string system; ///< describeSystem(systemInfo()): libtorch, CUDA, GPUs, threads, BLAS build
    engine::BlasInfo blas;
};

/// The entry points of the engine's torch half, one per kind of job (trainer.h, inference.h and
/// inspector.h say what each does and throws).
class EngineJobs {
public:
    virtual ~EngineJobs() = default;

    virtual engine::train::TrainingOutcome train(const engine::train::TrainingParams &params, engine::JobControl &control,
                                                 engine::train::TrainingObserver &observer) = 0;
    virtual engine::train::DatasetPreview preview(const engine::train::TrainingParams &params, engine::JobControl &control,
                                                  engine::train::TrainingObserver &observer, int count) = 0;
    virtual engine::infer::GenerateResult generate(const engine::infer::GenerateRequest &request,
                                                   const std::function<void(const std::string &)> &onText,
                                                   const engine::JobControl *control) = 0;
    virtual engine::inspect::InspectionReport inspectScenario(const std::string &name) = 0;
    virtual engine::inspect::InspectionReport verifyFix(const std::string &name) = 0;
    virtual engine::inspect::InspectionReport inspectTorchScript(const std::filesystem::path &moduleFile,
                                                                 const std::filesystem::path &inputsFile,
                                                                 const std::string &method) = 0;
    virtual engine::inspect::InspectionReport inspectModelFolder(const std::filesystem::path &modelFolder,
                                                                 const std::filesystem::path &dataFile) = 0;
    virtual EngineFacts facts() = 0;
};

/// The engine module's jobs. The first call loads the module ($TUNEBENCH_ENGINE_MODULE, else the build
/// tree's, else the installed one) and libtorch with it, which takes about a second; later calls return
/// at once. Safe from any thread. Throws engine::Error (Internal) naming the file and the loader's
/// reason when the module cannot be loaded; a later call tries again.
EngineJobs &engineJobs();

/// Loads the engine module at `path` (no caching: engineJobs() is the program's door). Throws
/// engine::Error (Internal) naming the file: not loadable (with the loader's reason), or not an engine module.
EngineJobs &loadEngineModule(const std::filesystem::path &path);

/// The file engineJobs() loads (or would load).
std::filesystem::path engineModulePath();

} // namespace bridge

/// The module's one exported symbol: its EngineJobs, alive until the process ends.
extern "C" bridge::EngineJobs *tunebench_engine_jobs();
