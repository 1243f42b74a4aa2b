#include "app/bridge/inspectrequest.h"

#include "engine/core/error.h"
#include "engine/inspect/inspector.h"

namespace app {

InspectionResult runInspectRequest(const InspectRequest &request)
{
    auto report = std::make_shared<engine::inspect::InspectionReport>();
    try {
        switch (request.kind) {
        case InspectRequest::Kind::Scenario:
            *report = engine::inspect::inspectScenario(request.scenario.toStdString());
            break;
        case InspectRequest::Kind::VerifyFix:
            *report = engine::inspect::verifyFix(request.scenario.toStdString());
            break;
        case InspectRequest::Kind::TorchScript:
            *report = engine::inspect::inspectTorchScript(request.path.toStdString(), request.inputs.toStdString(),
                                                          request.method.toStdString());
            break;
        case InspectRequest::Kind::ModelFolder:
            *report = engine::inspect::inspectModelFolder(request.path.toStdString(), request.inputs.toStdString());
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

} // namespace app
