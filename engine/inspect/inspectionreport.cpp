#include "engine/inspect/inspectionreport.h"

namespace engine::inspect {

const char *statusName(InspectStatus status)
{
    switch (status) {
    case InspectStatus::Ok: return "ok";
    case InspectStatus::InplaceConflict: return "inplace_conflict";
    case InspectStatus::SilentMutation: return "silent_mutation";
    case InspectStatus::Nan: return "nan";
    case InspectStatus::Error: return "error";
    }
    return "error";
}

const char *phaseName(Phase phase) { return phase == Phase::Forward ? "forward" : "backward"; }

const char *storageEventName(StorageEventKind kind)
{
    switch (kind) {
    case StorageEventKind::Save: return "save";
    case StorageEventKind::Write: return "write";
    case StorageEventKind::Unpack: return "unpack";
    }
    return "write";
}

} // namespace engine::inspect
