#pragma once
// SQL of the run store's table queries, private to the store (and its tests, which check that sqlite
// answers them from indexes).

#include <string_view>

namespace engine::store {

/// The columns of a RunRecord, in readRun()'s order.
inline constexpr std::string_view kRunColumns = "id, name, created, finished, status, config, model, notes";

/// Every run with its table summary, newest first: the RunRecord columns, then the last train/loss
/// step and the lowest eval/loss (each one index search of metrics_run_key_step per run, never a scan
/// of the metrics), the duration in seconds (to now while there is no finish time) and the method from
/// the config (training.method, else a top-level method; NULL when the config is not JSON).
inline constexpr std::string_view kRunSummariesSql =
    "SELECT id, name, created, finished, status, config, model, notes," // kRunColumns
    " (SELECT max(step) FROM metrics WHERE run = runs.id AND key = 'train/loss'),"
    " (SELECT min(value) FROM metrics WHERE run = runs.id AND key = 'eval/loss'),"
    " unixepoch(CASE WHEN finished = '' THEN 'now' ELSE finished END) - unixepoch(created),"
    " CASE WHEN json_valid(config) THEN coalesce(json_extract(config, '$.training.method'),"
    " json_extract(config, '$.method')) END"
    " FROM runs ORDER BY created DESC, id DESC";

} // namespace engine::store
