// libtunebench_engine.so: the engine's torch half behind bridge::EngineJobs, loaded by the GUI with
// dlopen (enginejobs.h). Linked with every engine part and libtorch; exports tunebench_engine_jobs only.

#include "bridge/enginejobs.h"

#include "engine/core/cpufeatures.h"
#include "engine/core/systeminfo.h"

namespace bridge {
namespace {

class ModuleJobs final : public EngineJobs {
public:
    engine::train::TrainingOutcome train(const engine::train::TrainingParams &params, engine::JobControl &control,
                                         engine::train::TrainingObserver &observer) override
    {
        return engine::train::runTraining(params, control, observer);
    }

    engine::train::DatasetPreview preview(const engine::train::TrainingParams &params, engine::JobControl &control,
                                          engine::train::TrainingObserver &observer, int count) override
    {
        return engine::train::previewData(params, control, observer, count);
    }

    engine::infer::GenerateResult generate(const engine::infer::GenerateRequest &request,
                                           const std::function<void(const std::string &)> &onText,
                                           const engine::JobControl *control) override
    {
        return engine::infer::generate(request, onText, control);
    }

    engine::inspect::InspectionReport inspectScenario(const std::string &name) override
    {
        return engine::inspect::inspectScenario(name);
    }

    engine::inspect::InspectionReport verifyFix(const std::string &name) override
    {
        return engine::inspect::verifyFix(name);
    }

    engine::inspect::InspectionReport inspectTorchScript(const std::filesystem::path &moduleFile,
                                                         const std::filesystem::path &inputsFile,
                                                         const std::string &method) override
    {
        return engine::inspect::inspectTorchScript(moduleFile, inputsFile, method);
    }

    engine::inspect::InspectionReport inspectModelFolder(const std::filesystem::path &modelFolder,
                                                         const std::filesystem::path &dataFile) override
    {
        return engine::inspect::inspectModelFolder(modelFolder, dataFile);
    }

    EngineFacts facts() override
    {
        // Here, not in the program: OpenBLAS's functions are visible only from the module that loaded it.
        return {engine::describeSystem(engine::systemInfo()), engine::blasInfo(engine::cpuFeatures())};
    }
};

} // namespace
} // namespace bridge

extern "C" __attribute__((visibility("default"))) bridge::EngineJobs *tunebench_engine_jobs()
{
    static bridge::ModuleJobs jobs;
    return &jobs;
}
