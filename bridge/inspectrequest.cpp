#include "bridge/inspectrequest.h"

#include "engine/core/error.h"
#include "bridge/enginejobs.h"
#include "engine/inspect/tracefile.h"

namespace bridge {

InspectionResult runInspectRequest(const InspectRequest &request, const std::function<EngineJobs &()> &engine)
{
    auto report = std::make_shared<engine::inspect::InspectionReport>();
    try {
        switch (request.kind) {
        case InspectRequest::Kind::Scenario:
            *report = engine().inspectScenario(request.scenario.toStdString());
            break;
        case InspectRequest::Kind::VerifyFix:
            *report = engine().verifyFix(request.scenario.toStdString());
            break;
        case InspectRequest::Kind::TorchScript:
            *report = engine().inspectTorchScript(request.path.toStdString(), request.inputs.toStdString(),
                                                      request.method.toStdString());
            break;
        case InspectRequest::Kind::ModelFolder:
            *report = engine().inspectModelFolder(request.path.toStdString(), request.inputs.toStdString());
            break;
        case InspectRequest::Kind::Trace: // torch-free: no need to load the engine module for it
            *report = engine::inspect::inspectTraceFile(request.path.toStdString());
            break;
        }
    } catch (...) {
        report = std::make_shared<engine::inspect::InspectionReport>();
        report->status = engine::inspect::InspectStatus::Error;
        report->error = engine::currentExceptionInfo().message;
        report->summary = report->error;
    }
    return report;
}

} // namespace bridge
