#pragma once
// The run store's schema as an ordered list of migrations. Migration i takes a database from
// user_version i to i + 1; each runs in its own transaction together with the version bump, so a
// kill mid-migration leaves the previous version intact.

#include <string_view>
#include <span>
#include <string>

namespace engine::store {

class SqliteDatabase;

/// Written to PRAGMA application_id so that another program's sqlite file is not mistaken for ours.
inline constexpr int kApplicationId = 0x54424e43; // "TBNC"

/// The SQL of each migration, oldest first; its size is the newest schema version.
std::span<const std::string_view> schemaMigrations();

/// Brings `db` to `targetVersion`. Throws Error(InvalidInput) naming `path` and both versions if the
/// file is newer than `targetVersion`, and Error(Io) if it is some other program's database.
/// Throws SqliteError (Io) naming both versions if a migration fails; its transaction rolled back, so
/// the file stays at the version it had.
void migrateSchema(SqliteDatabase &db, const std::string &path, int targetVersion);

/// "run store <path>: the database has schema version <version> but this tunebench supports up to ...".
std::string newerSchemaMessage(const std::string &path, int version, int supported);

} // namespace engine::store
