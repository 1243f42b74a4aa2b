#include "engine/store/sqlitestatement.h"

#include <sqlite3.h>

#include <utility>

namespace engine::store {

bool SqliteError::isForeignKeyViolation() const
{
    return m_code == SQLITE_CONSTRAINT_FOREIGNKEY;
}

bool SqliteError::isLocked() const
{
    const int primary = m_code & 0xff;
    return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

bool SqliteError::isReadOnly() const
{
    return (m_code & 0xff) == SQLITE_READONLY;
}

std::string sqliteReason(sqlite3 *db, int code)
{
    const int primary = code & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return "the database is locked by another process that is writing to it; nothing was changed, try again "
               "when it is done";
    if (primary == SQLITE_READONLY)
        return "the database is read-only (check the permissions of the file and of its folder); nothing was changed";
    // sqlite3_errmsg describes the most recent failure on the connection; fall back to the generic
    // text for the code when there is no connection.
    return db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
}

static std::string sqliteFileName(sqlite3 *db)
{
    if (db) {
        if (const char *name = sqlite3_db_filename(db, "main"))
            return name;
    }
    return {};
}

static SqliteError sqliteError(sqlite3 *db, int code, std::string_view what)
{
    std::string reason = sqliteReason(db, code);
    return SqliteError(code, "run store " + sqliteFileName(db) + ": " + std::string(what) + ": " + reason,
                       std::move(reason));
}

void throwSqlite(sqlite3 *db, int code, std::string_view what)
{
    throw sqliteError(db, code, what);
}

SqliteDatabase::SqliteDatabase(const std::string &path)
{
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string reason = sqliteReason(m_db, rc);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw SqliteError(rc, "run store " + path + ": cannot open: " + reason, reason);
    }
    sqlite3_extended_result_codes(m_db, 1);
}

SqliteDatabase::SqliteDatabase(SqliteDatabase &&other) noexcept : m_db(std::exchange(other.m_db, nullptr)) {}

SqliteDatabase &SqliteDatabase::operator=(SqliteDatabase &&other) noexcept
{
    if (this != &other) {
        sqlite3_close_v2(m_db);
        m_db = std::exchange(other.m_db, nullptr);
    }
    return *this;
}

SqliteDatabase::~SqliteDatabase()
{
    sqlite3_close_v2(m_db); // a no-op on nullptr
}

void SqliteDatabase::exec(std::string_view sql)
{
    const std::string text(sql);
    char *message = nullptr;
    const int rc = sqlite3_exec(m_db, text.c_str(), nullptr, nullptr, &message);
    sqlite3_free(message); // the same text is still available from sqlite3_errmsg
    if (rc != SQLITE_OK)
        throwSqlite(m_db, rc, "cannot run \"" + text.substr(0, 40) + "\"");
}

int64_t SqliteDatabase::queryInt(std::string_view sql)
{
    SqliteStatement statement(m_db, sql);
    return statement.step() ? statement.columnInt(0) : 0;
}

std::string SqliteDatabase::queryText(std::string_view sql)
{
    SqliteStatement statement(m_db, sql);
    return statement.step() ? statement.columnText(0) : std::string();
}

int SqliteDatabase::changes() const
{
    return sqlite3_changes(m_db);
}

bool SqliteDatabase::isReadOnly() const
{
    return sqlite3_db_readonly(m_db, "main") == 1;
}

SqliteStatement::SqliteStatement(sqlite3 *db, std::string_view sql) : m_db(db)
{
    const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                      &m_stmt, nullptr);
    if (rc != SQLITE_OK)
        throwSqlite(db, rc, "cannot prepare \"" + std::string(sql.substr(0, 40)) + "\"");
}

SqliteStatement::SqliteStatement(SqliteStatement &&other) noexcept
    : m_db(std::exchange(other.m_db, nullptr)), m_stmt(std::exchange(other.m_stmt, nullptr))
{
}

SqliteStatement &SqliteStatement::operator=(SqliteStatement &&other) noexcept
{
    if (this != &other) {
        sqlite3_finalize(m_stmt);
        m_db = std::exchange(other.m_db, nullptr);
        m_stmt = std::exchange(other.m_stmt, nullptr);
    }
    return *this;
}

SqliteStatement::~SqliteStatement()
{
    sqlite3_finalize(m_stmt); // a no-op on nullptr
}

SqliteStatement &SqliteStatement::bind(int index, int64_t value)
{
    const int rc = sqlite3_bind_int64(m_stmt, index, value);
    if (rc != SQLITE_OK)
        throwSqlite(m_db, rc, "cannot bind a value");
    return *this;
}

SqliteStatement &SqliteStatement::bind(int index, double value)
{
    const int rc = sqlite3_bind_double(m_stmt, index, value);
    if (rc != SQLITE_OK)
        throwSqlite(m_db, rc, "cannot bind a value");
    return *this;
}

SqliteStatement &SqliteStatement::bind(int index, std::string_view value)
{
    const int rc = sqlite3_bind_text64(m_stmt, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK)
        throwSqlite(m_db, rc, "cannot bind a value");
    return *this;
}

SqliteStatement &SqliteStatement::bindNull(int index)
{
    const int rc = sqlite3_bind_null(m_stmt, index);
    if (rc != SQLITE_OK)
        throwSqlite(m_db, rc, "cannot bind a value");
    return *this;
}

bool SqliteStatement::step()
{
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    const int code = sqlite3_extended_errcode(m_db);
    SqliteError error = sqliteError(m_db, code, "cannot run \"" + std::string(sqlite3_sql(m_stmt)).substr(0, 40) + "\"");
    // Reset so the statement can be reused after the caller handles the error.
    sqlite3_reset(m_stmt);
    throw error;
}

void SqliteStatement::run()
{
    while (step()) {
    }
    reset();
}

void SqliteStatement::reset()
{
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

int64_t SqliteStatement::columnInt(int column) const
{
    return sqlite3_column_int64(m_stmt, column);
}

double SqliteStatement::columnDouble(int column) const
{
    return sqlite3_column_double(m_stmt, column);
}

std::string SqliteStatement::columnText(int column) const
{
    const auto *text = reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, column));
    if (!text)
        return {};
    return std::string(text, static_cast<size_t>(sqlite3_column_bytes(m_stmt, column)));
}

bool SqliteStatement::columnIsNull(int column) const
{
    return sqlite3_column_type(m_stmt, column) == SQLITE_NULL;
}

SqliteTransaction::SqliteTransaction(SqliteDatabase &db) : m_db(db)
{
    m_db.exec("BEGIN IMMEDIATE");
}

SqliteTransaction::~SqliteTransaction()
{
    if (m_open)
        sqlite3_exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void SqliteTransaction::commit()
{
    m_db.exec("COMMIT");
    m_open = false;
}

} // namespace engine::store
