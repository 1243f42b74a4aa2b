#pragma once
// Helpers for the run store tests: queries through the raw sqlite3 API (to look at the file the way
// another tool would), a file's bytes, and file permissions that hold even for root. Temporary
// folders come from testing_support::TempDir (support/tempdir.h). Also used by the ui tests.

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
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

/// The whole file as bytes (empty if it cannot be read).
inline std::string fileBytes(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The schema of version 1 exactly as tunebench wrote it (frozen here: migrations change, old files
/// do not), for building a version-1 file the way an older tunebench left it.
inline constexpr const char *kSchemaVersion1Sql = R"sql(
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
PRAGMA application_id = 1413631555;
PRAGMA user_version = 1;
)sql";

/// While alive, this thread obeys file permissions even when it runs as root: it drops
/// CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from its effective capabilities (keeping them
/// permitted, so the destructor raises them again). A no-op for a normal user. Capabilities are per
/// thread on Linux, and sqlite opens files on the calling thread.
class ObeyFilePermissions {
public:
    ObeyFilePermissions() { m_active = setEffective(false); }
    ~ObeyFilePermissions()
    {
        if (m_active)
            setEffective(true);
    }
    ObeyFilePermissions(const ObeyFilePermissions &) = delete;
    ObeyFilePermissions &operator=(const ObeyFilePermissions &) = delete;

    /// True if `path` cannot be opened for writing now (what the test relies on).
    static bool cannotWrite(const std::filesystem::path &path)
    {
        std::FILE *file = std::fopen(path.c_str(), "r+");
        if (file)
            std::fclose(file);
        return file == nullptr;
    }

private:
    static bool setEffective(bool on)
    {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct data[2]{};
        if (syscall(SYS_capget, &header, data) != 0)
            return false;
        bool changed = false;
        for (const int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) {
            const unsigned bit = 1u << (cap % 32);
            if (!(data[cap / 32].permitted & bit))
                continue;
            changed = true;
            if (on)
                data[cap / 32].effective |= bit;
            else
                data[cap / 32].effective &= ~bit;
        }
        return changed && syscall(SYS_capset, &header, data) == 0;
    }

    bool m_active = false;
};

} // namespace storetest
