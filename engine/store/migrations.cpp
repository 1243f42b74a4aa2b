#include "engine/store/migrations.h"

#include "engine/core/error.h"
#include "engine/store/runstore.h"
#include "engine/store/sqlitestatement.h"

#include <array>
#include <string>

namespace engine::store {

namespace {

// Version 1. `value` may be NULL: sqlite stores a NaN double as NULL, and the store reads it back
// as NaN. The unique index (run, key, step) serves "one metric of one run in step order" and makes
// a step written twice (e.g. after resuming from a checkpoint) keep its last value.
constexpr std::string_view kVersion1 = R"sql(
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL,
    created     TEXT NOT NULL,
    finished    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    config      TEXT NOT NULL DEFAULT '{}',
    model       TEXT NOT NULL DEFAULT '',
    notes       TEXT NOT NULL DEFAULT '',
    owner_pid   INTEGER,
    owner_start INTEGER
);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE metrics (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    step      INTEGER NOT NULL,
    wall_time REAL NOT NULL,
    value     REAL
);
CREATE UNIQUE INDEX metrics_run_key_step ON metrics (run, key, step);

CREATE TABLE events (
    run   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    time  TEXT NOT NULL,
    level TEXT NOT NULL,
    text  TEXT NOT NULL
);
CREATE INDEX events_run ON events (run);

CREATE TABLE artifacts (
    run  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    path TEXT NOT NULL
);
CREATE INDEX artifacts_run ON artifacts (run);
)sql";

// Version 2: tags. A run has a set of tags (no duplicates); the index on tag serves "runs tagged x".
constexpr std::string_view kVersion2 = R"sql(
CREATE TABLE run_tags (
    run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (run, tag)
) WITHOUT ROWID;
CREATE INDEX run_tags_tag ON run_tags (tag);
)sql";

constexpr std::array kMigrations = {kVersion1, kVersion2};
static_assert(kMigrations.size() == RunStore::kSchemaVersion, "one migration per schema version");

} // namespace

std::span<const std::string_view> schemaMigrations()
{
    return kMigrations;
}

void migrateSchema(SqliteDatabase &db, const std::string &path, int targetVersion)
{
    const auto migrations = schemaMigrations();
    int version = 0;
    try {
        // Known before the write lock is taken, for the message if taking it fails.
        version = static_cast<int>(db.queryInt("PRAGMA user_version"));
        for (;;) {
            // Read the version inside the write transaction: two processes opening a fresh file at
            // once must not both apply the same migration.
            SqliteTransaction transaction(db);
            version = static_cast<int>(db.queryInt("PRAGMA user_version"));
            if (version > targetVersion)
                throw invalidInput(newerSchemaMessage(path, version, targetVersion));
            const auto applicationId = db.queryInt("PRAGMA application_id");
            if (version == 0) {
                const auto tables = db.queryInt("SELECT count(*) FROM sqlite_schema");
                if (tables != 0 || (applicationId != 0 && applicationId != kApplicationId))
                    throw ioError("run store " + path + ": not a tunebench run database (it holds other tables)");
            } else if (applicationId != kApplicationId) {
                throw ioError("run store " + path + ": not a tunebench run database (application id " +
                              std::to_string(applicationId) + ")");
            }
            if (version == targetVersion) {
                transaction.commit();
                return;
            }
            db.exec(migrations[static_cast<size_t>(version)]);
            db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
            db.exec("PRAGMA user_version = " + std::to_string(version + 1));
            transaction.commit();
        }
    } catch (const SqliteError &e) {
        // The transaction rolled back: the file is still whole at `version`.
        const std::string from = version == 0 ? "create the tables"
                                              : "upgrade the database from schema version " + std::to_string(version) +
                                                    " to " + std::to_string(targetVersion);
        throw SqliteError(e.code(),
                          "run store " + path + ": cannot " + from + ": " + e.reason() +
                              (version == 0 ? std::string() : "; it is still at version " + std::to_string(version)),
                          e.reason());
    }
}

std::string newerSchemaMessage(const std::string &path, int version, int supported)
{
    return "run store " + path + ": the database has schema version " + std::to_string(version) +
           " but this tunebench supports up to version " + std::to_string(supported) +
           "; open it with a newer tunebench (nothing was changed)";
}

} // namespace engine::store
