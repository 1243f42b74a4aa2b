#pragma once
// Helpers for the run store tests: queries through the raw sqlite3 API (to look at the file the way
// another tool would). Temporary folders come from testing_support::TempDir (support/tempdir.h).

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

namespace storetest {

/// A raw sqlite3 connection for inspecting a store file; closed on destruction.
class RawDb {
public:
    explicit RawDb(const std::filesystem::path &path)
    {
        if (sqlite3_open_v2(path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
            ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(m_db);
        sqlite3_busy_timeout(m_db, 5000);
    }
    ~RawDb() { sqlite3_close_v2(m_db); }
    RawDb(const RawDb &) = delete;
    RawDb &operator=(const RawDb &) = delete;

    sqlite3 *handle() const { return m_db; }

    void exec(const std::string &sql)
    {
        char *message = nullptr;
        if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK)
            ADD_FAILURE() << sql << ": " << (message ? message : "?");
        sqlite3_free(message);
    }

    /// Every row's columns joined with '|', rows joined with '\n'.
    std::string query(const std::string &sql)
    {
        std::string result;
        sqlite3_stmt *stmt = nullptr;
        if (sqlite3_prepare_v2(m_db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
            ADD_FAILURE() << sql << ": " << sqlite3_errmsg(m_db);
            return result;
        }
        bool firstRow = true;
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            if (!firstRow)
                result += '\n';
            firstRow = false;
            for (int column = 0; column < sqlite3_column_count(stmt); ++column) {
                if (column)
                    result += '|';
                const auto *text = sqlite3_column_text(stmt, column);
                result += text ? reinterpret_cast<const char *>(text) : "NULL";
            }
        }
        sqlite3_finalize(stmt);
        return result;
    }

private:
    sqlite3 *m_db = nullptr;
};

} // namespace storetest
