#include "bridge/inspectrequest.h"

#include "engine/core/error.h"
#include "bridge/enginejobs.h"

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
