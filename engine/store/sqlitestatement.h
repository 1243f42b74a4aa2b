#pragma once
// Small RAII wrappers over the sqlite3 C API, private to the run store: a connection, a prepared
// statement (reset and reused for hot inserts) and a write transaction. Every failure throws
// SqliteError, an engine::Error(Io) whose message names the database file and sqlite's reason.

#include "engine/core/error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

struct sqlite3;
struct sqlite3_stmt;

namespace engine::store {

/// An I/O error from sqlite that keeps sqlite's extended result code (e.g. to tell a foreign-key
/// violation from a full disk).
class SqliteError : public Error {
public:
    SqliteError(int code, const std::string &message, std::string reason = {})
        : Error(ErrorKind::Io, message), m_code(code), m_reason(std::move(reason))
    {
    }
    /// sqlite's extended result code.
    int code() const { return m_code; }
    /// Why, in words (sqlite's message, or a plainer one for a locked or read-only database).
    const std::string &reason() const { return m_reason; }
    /// True for a FOREIGN KEY constraint failure (a row that points at a missing run).
    bool isForeignKeyViolation() const;
    /// True when another connection holds the lock this one needed (SQLITE_BUSY / SQLITE_LOCKED).
    bool isLocked() const;
    /// True when the file (or its folder) cannot be written (SQLITE_READONLY and its variants).
    bool isReadOnly() const;

private:
    int m_code;
    std::string m_reason;
};

/// The reason for `code` in words: for a locked or read-only database a sentence that says so and
/// that nothing was changed, otherwise sqlite's own message for `db` (or for the code).
std::string sqliteReason(sqlite3 *db, int code);

/// Throws SqliteError for `code` on `db`: "run store <file>: <what>: <sqlite message>".
[[noreturn]] void throwSqlite(sqlite3 *db, int code, std::string_view what);

/// One open sqlite connection; closed in the destructor. Move-only.
class SqliteDatabase {
public:
    /// Opens or creates `path` read-write (does not read the file yet: a garbage file fails on the
    /// first statement, not here).
    explicit SqliteDatabase(const std::string &path);
    SqliteDatabase(SqliteDatabase &&other) noexcept;
    SqliteDatabase &operator=(SqliteDatabase &&other) noexcept;
    SqliteDatabase(const SqliteDatabase &) = delete;
    SqliteDatabase &operator=(const SqliteDatabase &) = delete;
    ~SqliteDatabase();

    sqlite3 *handle() const { return m_db; }
    /// Runs one or more statements that return no rows.
    void exec(std::string_view sql);
    /// Runs a statement that returns one integer (e.g. "PRAGMA user_version").
    int64_t queryInt(std::string_view sql);
    /// Runs a statement that returns one text value (e.g. "PRAGMA journal_mode=WAL").
    std::string queryText(std::string_view sql);
    /// Rows changed by the last INSERT/UPDATE/DELETE on this connection.
    int changes() const;
    /// True if sqlite opened the file for reading only (its permissions do not allow writing).
    bool isReadOnly() const;

private:
    sqlite3 *m_db = nullptr;
};

/// One prepared statement, finalized in the destructor. Move-only. Bind indexes start at 1,
/// column indexes at 0.
class SqliteStatement {
public:
    SqliteStatement() = default;
    SqliteStatement(sqlite3 *db, std::string_view sql);
    SqliteStatement(SqliteStatement &&other) noexcept;
    SqliteStatement &operator=(SqliteStatement &&other) noexcept;
    SqliteStatement(const SqliteStatement &) = delete;
    SqliteStatement &operator=(const SqliteStatement &) = delete;
    ~SqliteStatement();

    SqliteStatement &bind(int index, int64_t value);
    SqliteStatement &bind(int index, double value);
    SqliteStatement &bind(int index, std::string_view value);
    SqliteStatement &bindNull(int index);

    /// Advances; true while a row is available, false when done.
    bool step();
    /// Steps a statement that returns no rows, then resets it for reuse.
    void run();
    /// Makes the statement ready to run again; clears the bindings.
    void reset();

    int64_t columnInt(int column) const;
    double columnDouble(int column) const;
    std::string columnText(int column) const;
    bool columnIsNull(int column) const;

private:
    sqlite3 *m_db = nullptr;
    sqlite3_stmt *m_stmt = nullptr;
};

/// A write transaction (BEGIN IMMEDIATE, so it waits for the busy timeout instead of failing
/// half-way). Rolled back in the destructor unless commit() was called.
class SqliteTransaction {
public:
    explicit SqliteTransaction(SqliteDatabase &db);
    SqliteTransaction(const SqliteTransaction &) = delete;
    SqliteTransaction &operator=(const SqliteTransaction &) = delete;
    ~SqliteTransaction();

    void commit();

private:
    SqliteDatabase &m_db;
    bool m_open = true;
};

} // namespace engine::store
