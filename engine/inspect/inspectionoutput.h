#pragma once
// The inspection report as JSON (what `tunebench inspect --json` prints) and as readable text.
// Torch-free.
//
// Top-level fields: status, summary, source, pytorch_error (always; "" when none); for
// inplace_conflict: culprit_op, culprit_index, culprit_module, culprit_source, saved_by_op,
// saved_by_source, backward_node, tensor_shape, saved_version, current_version, fix (+ fixes, writes,
// predicted_before_backward, tensor_name when known); for nan: first_nan_op, first_nan_module,
// first_nan_source, phase; gradient_flow, gradient_problems, recording. A source is
// {"file", "line", "function", "code"}: the user's line, or null when the recording does not know it.

#include "engine/inspect/inspectionreport.h"

#include <nlohmann/json.hpp>

#include <string>

namespace engine::inspect {

/// The report as one JSON object; with `includeTrace` also the op trace, storages and saved tensors.
nlohmann::json reportToJson(const InspectionReport &report, bool includeTrace = false);

/// A report a person can act on: what happened, where, and how to fix it.
std::string reportToText(const InspectionReport &report);

} // namespace engine::inspect
