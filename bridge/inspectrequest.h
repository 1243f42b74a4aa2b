#pragma once
// An inspection job as a Qt value type: what to record (a built-in scenario, its fix, a TorchScript
// module with its inputs, or a model folder with a text file) or read (a trace the Python recorder
// wrote) and, after it ran, the report.

#include "engine/inspect/inspectionreport.h"

#include <QMetaType>
#include <QString>

#include <functional>
#include <memory>

namespace bridge {

struct InspectRequest {
    enum class Kind { Scenario, VerifyFix, TorchScript, ModelFolder, Trace };
    Kind kind = Kind::Scenario;
    QString scenario;   ///< Scenario / VerifyFix: "kv-cache-inplace", ...
    QString path;       ///< TorchScript: the module file; ModelFolder: the folder; Trace: the trace file
    QString inputs;     ///< TorchScript: torch.save([t1, ...]) file; ModelFolder: the text file
    QString method = QStringLiteral("forward");
};

/// The report of a finished inspection; status Error with `error` set when it could not run.
using InspectionResult = std::shared_ptr<const engine::inspect::InspectionReport>;

class EngineJobs;

/// Runs the request on the calling thread (the engine thread) with the engine's jobs. Never throws:
/// bad input, or an engine that cannot be loaded, comes back as a report with status Error and one
/// clear message.
InspectionResult runInspectRequest(const InspectRequest &request, const std::function<EngineJobs &()> &engine);

} // namespace bridge

Q_DECLARE_METATYPE(bridge::InspectRequest)
Q_DECLARE_METATYPE(bridge::InspectionResult)
